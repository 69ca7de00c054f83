"""What the Redis backend sends: key layout, Lua scripts, health deltas and the change-feed messages.

Three kinds of shared items, three update rules, each one atomic inside Redis:

- **health** (`{p}:h:{route}`, a hash): replicas send *deltas* of their local record (counts added, a
  success that cleared the rest, a failure's horizon), merged by a script — counters never lose an
  increment to a read-modify-write race, and a rest is never shortened by a replica that did not see it.
  Every merge carries `(origin, seq)` so a batch retried after a timeout is not counted twice.
- **counters** (`{p}:c:{ns}:{key}`): monotonic shared counters (the round-robin cursors), `INCRBY` with
  a floor so a restarted (emptied) Redis converges to the highest value any replica knows.
- **values** (`{p}:kv:{ns}:{key}`): last write wins (pins, the dashboard layer and its roster switches, the
  signer book), with a TTL where the item has a lifetime (`expiry.value_ttl`: a session pin expires with its
  cache lifetime, a signer entry with its session).

Every flush is one script run, published as one message on `{p}:changes`, so the other replicas apply
it to their local memory.
"""

from __future__ import annotations

from typing import Any

HEALTH_NS = "health"
INT_FIELDS = ("attempts", "successes", "failures", "consecutive_failures", "last_status")
FLOAT_FIELDS = ("last_error_at", "rest_until", "last_success_at", "updated_at")
TEXT_FIELDS = ("last_error", "last_error_kind")


class Keys:
    """Key and channel names under one prefix, so several deployments can share one Redis."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.channel = f"{prefix}:changes"
        self.epoch = f"{prefix}:epoch"

    def health(self, route: str) -> str:
        return f"{self.prefix}:h:{route}"

    def value(self, ns: str, key: str) -> str:
        return f"{self.prefix}:kv:{ns}:{key}"

    def counter(self, ns: str, key: str) -> str:
        return f"{self.prefix}:c:{ns}:{key}"

    def pattern(self, ns: str) -> str:
        if ns == HEALTH_NS:
            return _glob_escape(f"{self.prefix}:h:") + "*"
        return _glob_escape(f"{self.prefix}:kv:{ns}:") + "*"

    def counter_pattern(self, ns: str) -> str:
        return _glob_escape(f"{self.prefix}:c:{ns}:") + "*"


def _glob_escape(text: str) -> str:
    return "".join("\\" + ch if ch in "*?[]\\" else ch for ch in text)


# One script per flush: every pending change of this replica, applied atomically, announced in ONE
# change-feed message. (A command and a message per change cost every replica a syscall and a parse per
# change; measured with bench/redis_state.py.) KEYS[i] belongs to item i. ARGV[1] is JSON:
# {o: origin, ch: channel, now, ttl, items: [...]}, each item one of
#   {t="v", n, k, v=<JSON text> | d=1, px=<ms> | 0}     a value: last write wins
#   {t="h", k, m="d"|"r", s=seq, a=[health_args]}        a health delta (d) or restore (r)
#   {t="c", n, k, by, floor}                              a shared counter step
BATCH_SCRIPT = """
local batch = cjson.decode(ARGV[1])
local origin, now = batch.o, tonumber(batch.now)
local out = {}
local function num(h, field) return tonumber(redis.call('HGET', h, field) or '0') or 0 end

local function health(h, it)
  local a = it.a
  local seqf = 'seq:' .. origin
  if it.s > num(h, seqf) then
    local rest, take_error = tonumber(a[9]), false
    if it.m == 'r' then
      local names = {'attempts', 'successes', 'failures', 'consecutive_failures'}
      for i, field in ipairs(names) do redis.call('HSET', h, field, math.max(num(h, field), a[i])) end
      rest = math.max(num(h, 'rest_until'), rest)
      take_error = (tonumber(a[8]) or 0) > num(h, 'last_error_at')
    else
      redis.call('HINCRBY', h, 'attempts', a[1])
      redis.call('HINCRBY', h, 'successes', a[2])
      redis.call('HINCRBY', h, 'failures', a[3])
      if a[2] > 0 then
        redis.call('HSET', h, 'consecutive_failures', a[4])
      else
        redis.call('HINCRBY', h, 'consecutive_failures', a[3])
        rest = math.max(num(h, 'rest_until'), rest)
      end
      take_error = a[3] > 0
    end
    redis.call('HSET', h, 'rest_until', rest)
    if take_error then
      local names = {'last_error', 'last_error_kind', 'last_status', 'last_error_at'}
      for i, field in ipairs(names) do
        local v = a[4 + i]
        if v == '' then redis.call('HDEL', h, field) else redis.call('HSET', h, field, v) end
      end
    end
    local ok_at = tonumber(a[10]) or 0
    if ok_at > num(h, 'last_success_at') then redis.call('HSET', h, 'last_success_at', ok_at) end
    if a[11] > num(h, 'updated_at') then redis.call('HSET', h, 'updated_at', a[11]) end
    redis.call('HSET', h, seqf, it.s)
  end
  local keep = math.max(batch.ttl, num(h, 'rest_until') - now, 1)
  redis.call('PEXPIRE', h, math.floor(keep * 1000))
  local flat = redis.call('HGETALL', h)
  local rec = {}
  for i = 1, #flat, 2 do
    if string.sub(flat[i], 1, 4) ~= 'seq:' then rec[flat[i]] = flat[i + 1] end
  end
  return {n = 'health', k = it.k, s = it.s, h = rec}
end

for i, it in ipairs(batch.items) do
  local key = KEYS[i]
  if it.t == 'v' then
    if it.d == 1 then
      redis.call('DEL', key)
    elseif it.px > 0 then
      redis.call('SET', key, it.v, 'PX', it.px)
    else
      redis.call('SET', key, it.v)
    end
    out[#out + 1] = {n = it.n, k = it.k, v = it.v, d = it.d}
  elseif it.t == 'h' then
    out[#out + 1] = health(key, it)
  else
    local v = redis.call('INCRBY', key, it.by)
    if v < it.floor then redis.call('SET', key, it.floor); v = it.floor end
    out[#out + 1] = {n = it.n, k = it.k, c = v}
  end
end
redis.call('PUBLISH', batch.ch, cjson.encode({o = origin, b = out}))
return #out
"""


def health_args(base: dict[str, Any] | None, new: dict[str, Any]) -> list[Any]:
    """The delta between the record Redis last confirmed (`base`) and the local one (`new`).

    The registry mutates one record per event and this runs once per flush, so several events may be
    folded: counts add up; a success among them reset the consecutive count and the rest (the local
    record then holds what followed that success); without one, the rest only ever grows. Returns the
    script's value arguments.
    """
    base = base or {}
    deltas = [_int(new, f) - _int(base, f) for f in ("attempts", "successes", "failures")]
    if any(d < 0 for d in deltas):  # the local record was reset since: send it as it is
        deltas = [_int(new, f) for f in ("attempts", "successes", "failures")]
    args = [
        *deltas,
        _int(new, "consecutive_failures"),
        _text(new.get("last_error")),
        _text(new.get("last_error_kind")),
        _text(new.get("last_status")),
        _text(new.get("last_error_at")),
        float(new.get("rest_until") or 0.0),
        _text(new.get("last_success_at")),
        float(new.get("updated_at") or 0.0),
    ]
    return args


def restore_args(record: dict[str, Any]) -> list[Any]:
    """Script arguments that merge a whole local record by maximum (after Redis lost its data)."""
    return health_args(None, record)


def decode_health(raw: dict[Any, Any]) -> dict[str, Any]:
    """A health hash (all strings) as the registry's persistable record."""
    fields = {_s(k): _s(v) for k, v in raw.items() if not _s(k).startswith("seq:")}
    out: dict[str, Any] = {"v": 1}
    for name in INT_FIELDS:
        text = fields.get(name)
        out[name] = int(float(text)) if text not in (None, "") else (None if name == "last_status" else 0)
    for name in FLOAT_FIELDS:
        text = fields.get(name)
        value = float(text) if text not in (None, "") else None
        out[name] = value if value or name != "last_success_at" else None
    out["rest_until"] = out["rest_until"] or 0.0
    for name in TEXT_FIELDS:
        out[name] = fields.get(name) or None
    return out


def _int(record: dict[str, Any], field: str) -> int:
    value = record.get(field)
    return int(value) if isinstance(value, int | float) else 0


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _s(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
