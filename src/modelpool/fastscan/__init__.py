"""The byte scans a native relay makes over every upstream read (SPEC §1.6): where a run of plain events
ends, whether a read holds a signature, the `"usage":null` a client did not ask for taken out, CRLF framing
made LF.

A relay forwards the bytes of plain events as they came and parses only the few that matter, so these
scans are most of its work per byte. The C extension (`_scan.c`, built by `pip install`) makes each one
pass of `memmem`/`memchr`; without a compiler the same functions run in Python (`pure.py`), slower
(bench/RESULTS.md, issue #29) but the same. `COMPILED` says which one this process uses.
"""

from __future__ import annotations

try:
    from modelpool.fastscan._scan import balanced, has_any, lf_only, plain_prefix, plain_run, remove_all

    COMPILED = True
except ImportError:  # built without a compiler: the Python scans (same results)
    from modelpool.fastscan.pure import balanced, has_any, lf_only, plain_prefix, plain_run, remove_all

    COMPILED = False

__all__ = ["COMPILED", "balanced", "has_any", "lf_only", "plain_prefix", "plain_run", "remove_all"]
