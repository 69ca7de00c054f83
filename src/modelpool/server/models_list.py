"""`GET /v1/models`, rendered once per runtime snapshot (issue #21).

The list only changes when the catalog does, and a new catalog always comes with a new `Runtime`. With
10,000 routes the body is ~250 KB and takes ~15 ms to build and encode; kept on the snapshot's memo, a
request costs a dict lookup, and a reload drops the old body with the old snapshot.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import orjson

from modelpool.server.client_api import models_payload

if TYPE_CHECKING:
    from modelpool.engine import Engine

_KEY = "server.models_body"


def models_body(gw: Engine) -> bytes:
    rt = gw.runtime
    body: bytes | None = rt.memo.get(_KEY)
    if body is None:  # synchronous from here: `models_payload` reads this same snapshot
        body = orjson.dumps(models_payload(gw))
        rt.memo[_KEY] = body
    return body
