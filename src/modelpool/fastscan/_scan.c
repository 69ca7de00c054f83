/* modelpool.fastscan._scan: the byte scans a native relay makes over every upstream read, in one C pass
 * each (CPython 3.11's bytes.find/count/replace run at ~2 GB/s and a relay made six of them over a
 * 50 KB burst read: ~145 us of a 460 us call, bench/RESULTS.md issue #29). Same results as pure.py,
 * which tests/fastscan compares it against on generated reads. Built by `pip install`; optional. */
#define _GNU_SOURCE
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

static Py_ssize_t
find(const char *s, Py_ssize_t from, Py_ssize_t to, const char *n, Py_ssize_t m)
{
    if (from < 0)
        from = 0;
    if (to - from < m || m <= 0)
        return m == 0 && from <= to ? from : -1;
    const char *at = memmem(s + from, (size_t)(to - from), n, (size_t)m);
    return at == NULL ? -1 : (Py_ssize_t)(at - s);
}

static Py_ssize_t
rfind(const char *s, Py_ssize_t from, Py_ssize_t to, const char *n, Py_ssize_t m)
{
    /* The last occurrence of n (m >= 1) wholly inside [from, to): memrchr for its first byte. */
    Py_ssize_t last = to - m;
    while (last >= from) {
        const char *at = memrchr(s + from, n[0], (size_t)(last - from + 1));
        if (at == NULL)
            return -1;
        Py_ssize_t i = (Py_ssize_t)(at - s);
        if (memcmp(s + i, n, (size_t)m) == 0)
            return i;
        last = i - 1;
    }
    return -1;
}

static Py_ssize_t
blank_line(const char *s, Py_ssize_t from, Py_ssize_t to)
{
    /* The first "\n\n" wholly inside [from, to): memchr for each '\n' (SIMD in glibc). */
    while (from < to - 1) {
        const char *at = memchr(s + from, '\n', (size_t)(to - 1 - from));
        if (at == NULL)
            return -1;
        Py_ssize_t i = (Py_ssize_t)(at - s);
        if (s[i + 1] == '\n')
            return i;
        from = i + 1;
    }
    return -1;
}

static int
as_bytes(PyObject *o, const char **s, Py_ssize_t *n, const char *what)
{
    if (!PyBytes_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s must be bytes", what);
        return -1;
    }
    *s = PyBytes_AS_STRING(o);
    *n = PyBytes_GET_SIZE(o);
    return 0;
}

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

static int
braces_balanced(const char *s, Py_ssize_t from, Py_ssize_t to)
{
    /* '{' minus '}' over [from, to): 16 bytes a step with SSE2 (a byte loop is ~13 us over 50 KB). */
    Py_ssize_t diff = 0, i = from;
#if defined(__SSE2__)
    const __m128i open = _mm_set1_epi8('{'), close = _mm_set1_epi8('}'), zero = _mm_setzero_si128();
    while (to - i >= 16) {
        __m128i acc_o = zero, acc_c = zero; /* per-lane counts, at most 255 steps before they are summed */
        Py_ssize_t steps = (to - i) / 16;
        if (steps > 255)
            steps = 255;
        for (Py_ssize_t k = 0; k < steps; k++, i += 16) {
            __m128i v = _mm_loadu_si128((const __m128i *)(s + i));
            acc_o = _mm_sub_epi8(acc_o, _mm_cmpeq_epi8(v, open));
            acc_c = _mm_sub_epi8(acc_c, _mm_cmpeq_epi8(v, close));
        }
        __m128i so = _mm_sad_epu8(acc_o, zero), sc = _mm_sad_epu8(acc_c, zero);
        diff += _mm_cvtsi128_si32(so) + _mm_cvtsi128_si32(_mm_srli_si128(so, 8));
        diff -= _mm_cvtsi128_si32(sc) + _mm_cvtsi128_si32(_mm_srli_si128(sc, 8));
    }
#endif
    for (; i < to; i++)
        diff += (s[i] == '{') - (s[i] == '}');
    return diff == 0;
}

static int
ends_with_inside(const char *s, Py_ssize_t from, Py_ssize_t to, const char *n, Py_ssize_t m)
{
    /* Whether n occurs wholly inside [from, to), looked for from the end: an OpenAI chunk carries its
     * `"finish_reason":null` a few bytes before its end, so this is one or two steps, not a scan. */
    return rfind(s, from, to, n, m) >= 0;
}

/* plain_prefix(data, start, marker, error) -> int: see pure.plain_prefix. */
static PyObject *
plain_prefix(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    const char *s, *mk, *er;
    Py_ssize_t n, nm, ne;
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "plain_prefix(data, start, marker, error)");
        return NULL;
    }
    Py_ssize_t start = PyLong_AsSsize_t(args[1]);
    if (start == -1 && PyErr_Occurred())
        return NULL;
    if (as_bytes(args[0], &s, &n, "data") || as_bytes(args[2], &mk, &nm, "marker") ||
        as_bytes(args[3], &er, &ne, "error"))
        return NULL;
    if (start < 0 || start > n || memchr(s, '\r', (size_t)n) != NULL)
        return PyLong_FromSsize_t(start);
    Py_ssize_t stop = find(s, start, n, er, ne);
    if (stop < 0)
        stop = n;
    Py_ssize_t pos = start;
    if (nm < 1)
        return PyLong_FromSsize_t(start);
    for (;;) {
        Py_ssize_t end = blank_line(s, pos, stop);
        if (end < 0 || !ends_with_inside(s, pos, end, mk, nm))
            break;
        pos = end + 2;
    }
    return PyLong_FromSsize_t(pos);
}

/* plain_run(data, pos, specials, sep) -> int: see pure.plain_run. */
static PyObject *
plain_run(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    const char *s, *sep;
    Py_ssize_t n, nsep;
    if (nargs != 4 || !PyTuple_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "plain_run(data, pos, specials: tuple, sep)");
        return NULL;
    }
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]);
    if (pos == -1 && PyErr_Occurred())
        return NULL;
    if (as_bytes(args[0], &s, &n, "data") || as_bytes(args[3], &sep, &nsep, "sep"))
        return NULL;
    if (pos < 0 || pos > n || nsep < 1)
        return PyLong_FromSsize_t(pos);
    Py_ssize_t first = n;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(args[2]); i++) {
        const char *sp;
        Py_ssize_t nsp;
        if (as_bytes(PyTuple_GET_ITEM(args[2], i), &sp, &nsp, "a special"))
            return NULL;
        Py_ssize_t at = find(s, pos, first, sp, nsp);
        if (at >= 0)
            first = at;
    }
    Py_ssize_t end = rfind(s, pos, first, sep, nsep);
    if (end < 0 || !braces_balanced(s, pos, end))
        return PyLong_FromSsize_t(pos);
    return PyLong_FromSsize_t(end + nsep);
}

/* has_any(data, needles) -> bool */
static PyObject *
has_any(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    const char *s;
    Py_ssize_t n;
    if (nargs != 2 || !PyTuple_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "has_any(data, needles: tuple)");
        return NULL;
    }
    if (as_bytes(args[0], &s, &n, "data"))
        return NULL;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(args[1]); i++) {
        const char *nd;
        Py_ssize_t nn;
        if (as_bytes(PyTuple_GET_ITEM(args[1], i), &nd, &nn, "a needle"))
            return NULL;
        if (find(s, 0, n, nd, nn) >= 0)
            Py_RETURN_TRUE;
    }
    Py_RETURN_FALSE;
}

/* A copy of a read with some bytes taken out or changed: at most as long as the read, shrunk at the end. */
typedef struct {
    PyObject *out;
    char *w;
    Py_ssize_t len;
} Rewrite;

static int
rw_open(Rewrite *rw, Py_ssize_t n)
{
    rw->out = PyBytes_FromStringAndSize(NULL, n);
    if (rw->out == NULL)
        return -1;
    rw->w = PyBytes_AS_STRING(rw->out);
    rw->len = 0;
    return 0;
}

static void
rw_copy(Rewrite *rw, const char *s, Py_ssize_t from, Py_ssize_t to)
{
    memcpy(rw->w + rw->len, s + from, (size_t)(to - from));
    rw->len += to - from;
}

static PyObject *
rw_close(Rewrite *rw)
{
    if (_PyBytes_Resize(&rw->out, rw->len) < 0)
        return NULL;
    return rw->out;
}

/* remove_all(data, needle) -> bytes: data without any occurrence of needle (data itself if none). */
static PyObject *
remove_all(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    const char *s, *nd;
    Py_ssize_t n, nn;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "remove_all(data, needle)");
        return NULL;
    }
    if (as_bytes(args[0], &s, &n, "data") || as_bytes(args[1], &nd, &nn, "needle"))
        return NULL;
    Py_ssize_t at = nn > 0 ? find(s, 0, n, nd, nn) : -1;
    if (at < 0) {
        Py_INCREF(args[0]);
        return args[0];
    }
    Rewrite rw;
    if (rw_open(&rw, n) < 0)
        return NULL;
    Py_ssize_t from = 0;
    while (at >= 0) {
        rw_copy(&rw, s, from, at);
        from = at + nn;
        at = find(s, from, n, nd, nn);
    }
    rw_copy(&rw, s, from, n);
    return rw_close(&rw);
}

/* lf_only(data) -> bytes: CRLF and lone CR made LF (data itself if it has no CR). */
static PyObject *
lf_only(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    const char *s;
    Py_ssize_t n;
    if (nargs != 1) {
        PyErr_SetString(PyExc_TypeError, "lf_only(data)");
        return NULL;
    }
    if (as_bytes(args[0], &s, &n, "data"))
        return NULL;
    const char *cr = memchr(s, '\r', (size_t)n);
    if (cr == NULL) {
        Py_INCREF(args[0]);
        return args[0];
    }
    Rewrite rw;
    if (rw_open(&rw, n) < 0)
        return NULL;
    Py_ssize_t from = 0;
    while (cr != NULL) {
        Py_ssize_t at = (Py_ssize_t)(cr - s);
        rw_copy(&rw, s, from, at);
        rw.w[rw.len++] = '\n';
        from = at + 1 < n && s[at + 1] == '\n' ? at + 2 : at + 1;
        cr = from < n ? memchr(s + from, '\r', (size_t)(n - from)) : NULL;
    }
    rw_copy(&rw, s, from, n);
    return rw_close(&rw);
}

/* balanced(data, start, end) -> bool: as many '{' as '}' in data[start:end]. */
static PyObject *
balanced(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    const char *s;
    Py_ssize_t n;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "balanced(data, start, end)");
        return NULL;
    }
    if (as_bytes(args[0], &s, &n, "data"))
        return NULL;
    Py_ssize_t start = PyLong_AsSsize_t(args[1]), end = PyLong_AsSsize_t(args[2]);
    if (PyErr_Occurred())
        return NULL;
    start = start < 0 ? 0 : start > n ? n : start;
    end = end < start ? start : end > n ? n : end;
    return PyBool_FromLong(braces_balanced(s, start, end));
}

static PyMethodDef methods[] = {
    {"plain_prefix", (PyCFunction)(void (*)(void))plain_prefix, METH_FASTCALL, NULL},
    {"plain_run", (PyCFunction)(void (*)(void))plain_run, METH_FASTCALL, NULL},
    {"has_any", (PyCFunction)(void (*)(void))has_any, METH_FASTCALL, NULL},
    {"remove_all", (PyCFunction)(void (*)(void))remove_all, METH_FASTCALL, NULL},
    {"balanced", (PyCFunction)(void (*)(void))balanced, METH_FASTCALL, NULL},
    {"lf_only", (PyCFunction)(void (*)(void))lf_only, METH_FASTCALL, NULL},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_scan", NULL, -1, methods};

PyMODINIT_FUNC
PyInit__scan(void)
{
    return PyModule_Create(&module);
}
