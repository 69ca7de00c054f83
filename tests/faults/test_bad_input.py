"""Bad client input gets a clear 4xx in the ingress dialect's error shape — never a 5xx, never a crash.

Through the real server (uvicorn + httptools) on the three client endpoints and `count_tokens`, with raw
httpx requests. Pools: `m1` is served by an OpenAI-compatible route (`oa`, first) and an Anthropic route
(`an`); `m2` only by the Anthropic route, so an OpenAI client on `m2` always crosses dialects.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway_server import ADMIN_TOKEN, GatewayServer
from modelpool.sim import FleetSpec, FleetThread, SimModel, SimProvider

# Examples per endpoint of the property test; bench/ (or a soak run) raises it through the environment.
FUZZ_EXAMPLES = int(os.environ.get("MODELPOOL_FUZZ_EXAMPLES", "200"))

CHAT, MESSAGES, RESPONSES, COUNT = (
    "/v1/chat/completions",
    "/v1/messages",
    "/v1/responses",
    "/v1/messages/count_tokens",
)
DIALECT = {CHAT: "openai", MESSAGES: "anthropic", RESPONSES: "openai", COUNT: "anthropic"}
ALL = [CHAT, MESSAGES, RESPONSES, COUNT]
CALLS = [CHAT, MESSAGES, RESPONSES]  # the endpoints that resolve a pool and walk routes
USER = [{"role": "user", "content": "hi"}]
VALID: dict[str, dict[str, Any]] = {
    CHAT: {"model": "m1", "messages": USER},
    MESSAGES: {"model": "m1", "max_tokens": 16, "messages": USER},
    RESPONSES: {"model": "m1", "input": "hi"},
    COUNT: {"model": "m1", "messages": USER},
}


def spec() -> FleetSpec:
    fast = {"ttft": 0.005, "tps": 5000.0}
    return FleetSpec(
        [
            SimProvider("oa", models=[SimModel("m1", output_tokens=5)], **fast),
            SimProvider(
                "an", kind="anthropic", models=[SimModel("m1", output_tokens=5), SimModel("m2")], **fast
            ),
        ]
    )


def config(ft: FleetThread, **server: object) -> dict[str, Any]:
    cfg = ft.to_config(state={"backend": "memory"}, server={"admin_token": ADMIN_TOKEN, **server})
    cfg["pool"] = {
        "strategy": "priority",
        "provider_order": ["oa", "an"],
        "retry_backoff": "1ms",
        "sticky": False,
    }
    return cfg


@pytest.fixture(scope="module")
def ft() -> Iterator[FleetThread]:
    with FleetThread(spec()) as fleet:
        yield fleet


@pytest.fixture(scope="module")
def gw(ft: FleetThread) -> Iterator[GatewayServer]:
    with GatewayServer(config(ft)) as server:
        yield server


@pytest.fixture(scope="module")
def client(gw: GatewayServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=gw.url, timeout=20) as c:
        yield c


def assert_error(resp: httpx.Response, path: str, status: int | None = None) -> dict[str, Any]:
    """A 4xx (or exactly `status`) whose body is the ingress dialect's error shape."""
    assert 400 <= resp.status_code < 500, (resp.status_code, resp.text[:300])
    if status is not None:
        assert resp.status_code == status, resp.text[:300]
    body = resp.json()
    check_error_shape(body, path)
    return body  # type: ignore[no-any-return]


def check_error_shape(body: Any, path: str) -> None:
    assert isinstance(body, dict), body
    if DIALECT[path] == "openai":
        err = body["error"]
        assert isinstance(err, dict) and {"message", "type", "param", "code"} <= err.keys(), body
        assert isinstance(err["message"], str) and err["message"] and isinstance(err["type"], str), body
    else:
        assert body["type"] == "error", body
        err = body["error"]
        assert isinstance(err, dict) and isinstance(err["type"], str), body
        assert isinstance(err["message"], str) and err["message"], body


def message_of(body: dict[str, Any]) -> str:
    return str(body["error"]["message"])


def post(client: httpx.Client, path: str, body: Any) -> httpx.Response:
    return client.post(path, content=json.dumps(body).encode(), headers={"content-type": "application/json"})


# ---- the body is not a request object ------------------------------------------------------------------


@pytest.mark.parametrize("path", ALL)
@pytest.mark.parametrize(
    "raw",
    [b'{"model": "m1", "messages": [', b"{'model': 'm1'}", b"", b"nul", b"{}}"],
    ids=["truncated", "single-quotes", "empty", "bare-word", "trailing-brace"],
)
def test_malformed_json_is_400(client: httpx.Client, path: str, raw: bytes) -> None:
    body = assert_error(client.post(path, content=raw), path, 400)
    assert "JSON" in message_of(body)


@pytest.mark.parametrize("path", ALL)
@pytest.mark.parametrize("raw", [b"[]", b'[{"model": "m1"}]', b"42", b'"m1"', b"null", b"true"])
def test_json_that_is_not_an_object_is_400(client: httpx.Client, path: str, raw: bytes) -> None:
    assert_error(client.post(path, content=raw), path, 400)


@pytest.mark.parametrize("path", ALL)
def test_invalid_utf8_is_400(client: httpx.Client, path: str) -> None:
    raw = json.dumps(VALID[path]).encode().replace(b'"hi"', b'"h\xff\xfei"')
    assert_error(client.post(path, content=raw), path, 400)


@pytest.mark.parametrize("path", CALLS)
def test_max_tokens_beyond_64_bits_is_400(client: httpx.Client, path: str) -> None:
    field = "max_output_tokens" if path == RESPONSES else "max_tokens"
    raw = json.dumps({**VALID[path], field: 10**30}).encode()
    assert_error(client.post(path, content=raw), path, 400)


# ---- wrong types and missing fields --------------------------------------------------------------------

WRONG = [
    (CHAT, {"model": 5}, "model"),
    (MESSAGES, {"model": 5}, "model"),
    (RESPONSES, {"model": 5}, "model"),
    (CHAT, {"model": ""}, "model"),
    (CHAT, {"messages": "hi"}, "messages"),
    (MESSAGES, {"messages": "hi"}, "messages"),
    (COUNT, {"messages": "hi"}, "messages"),
    (CHAT, {"stream": "yes"}, "stream"),
    (MESSAGES, {"stream": "yes"}, "stream"),
    (RESPONSES, {"stream": "yes"}, "stream"),
    (CHAT, {"max_tokens": "16"}, "max_tokens"),
    (CHAT, {"max_tokens": -1}, "max_tokens"),
    (CHAT, {"max_tokens": 0}, "max_tokens"),
    (CHAT, {"max_completion_tokens": 1.5}, "max_tokens"),
    (MESSAGES, {"max_tokens": "16"}, "max_tokens"),
    (MESSAGES, {"max_tokens": -1}, "max_tokens"),
    (MESSAGES, {"max_tokens": True}, "max_tokens"),
    (RESPONSES, {"max_output_tokens": "16"}, "max_output_tokens"),
    (RESPONSES, {"max_output_tokens": -1}, "max_output_tokens"),
    (RESPONSES, {"input": 5}, "input"),
    (RESPONSES, {"instructions": ["x"]}, "instructions"),
    (RESPONSES, {"tools": "x"}, "tools"),
    (RESPONSES, {"reasoning": {"effort": "galactic"}}, "reasoning.effort"),
    (MESSAGES, {"system": 7}, "system"),
    (MESSAGES, {"messages": [{"role": "user", "content": 5}]}, "messages.0.content"),
    (MESSAGES, {"messages": [{"role": "user", "content": ["text"]}]}, "messages.0.content.0"),
]


@pytest.mark.parametrize(
    ("path", "patch", "field"), WRONG, ids=lambda v: json.dumps(v) if isinstance(v, dict) else v
)
def test_wrong_type_is_400_naming_the_field(client: httpx.Client, path: str, patch: dict, field: str) -> None:
    body = assert_error(post(client, path, {**VALID[path], **patch}), path, 400)
    if DIALECT[path] == "openai":
        assert body["error"]["param"] == field, body
    else:
        assert message_of(body).startswith(field.split(".")[0]), body


MISSING = [
    (CHAT, "model"),
    (MESSAGES, "model"),
    (RESPONSES, "model"),
    (CHAT, "messages"),
    (MESSAGES, "messages"),
    (COUNT, "messages"),
    (MESSAGES, "max_tokens"),
    (RESPONSES, "input"),
]


@pytest.mark.parametrize(("path", "field"), MISSING)
def test_missing_required_field_is_400(client: httpx.Client, path: str, field: str) -> None:
    req = {k: v for k, v in VALID[path].items() if k != field}
    body = assert_error(post(client, path, req), path, 400)
    assert field in message_of(body) or body["error"].get("param") == field, body


@pytest.mark.parametrize(("path", "key"), [(CHAT, "messages"), (MESSAGES, "messages"), (RESPONSES, "input")])
def test_empty_conversation_is_400(client: httpx.Client, path: str, key: str) -> None:
    assert_error(post(client, path, {**VALID[path], key: []}), path, 400)


def test_count_tokens_of_an_empty_conversation_is_an_estimate(client: httpx.Client) -> None:
    """count_tokens estimates locally and never calls upstream: an empty list just counts as little."""
    resp = post(client, COUNT, {**VALID[COUNT], "messages": []})
    assert resp.status_code == 200 and isinstance(resp.json()["input_tokens"], int)


@pytest.mark.parametrize(
    ("path", "key", "item"),
    [
        (CHAT, "messages", {"content": "hi"}),
        (MESSAGES, "messages", {"content": "hi"}),
        (MESSAGES, "messages", {"role": "system", "content": "hi"}),
        (RESPONSES, "input", {"content": "hi"}),
        (CHAT, "messages", "hi"),
        (RESPONSES, "input", 5),
    ],
)
def test_message_without_role_is_400(client: httpx.Client, path: str, key: str, item: Any) -> None:
    assert_error(post(client, path, {**VALID[path], key: [item]}), path, 400)


@pytest.mark.parametrize("path", CALLS)
def test_unknown_model_is_404_naming_the_closest_pools(client: httpx.Client, path: str) -> None:
    body = assert_error(post(client, path, {**VALID[path], "model": "m3"}), path, 404)
    assert "m1" in message_of(body) and "m2" in message_of(body)
    assert body["error"]["type"] == "not_found_error"


def test_count_tokens_does_not_resolve_the_model(client: httpx.Client) -> None:
    """Documented behaviour: count_tokens is a local estimate for any model name (never a 5xx)."""
    resp = post(client, COUNT, {**VALID[COUNT], "model": "m3"})
    assert resp.status_code == 200


@pytest.mark.parametrize("path", ALL)
def test_absurd_max_tokens_is_not_a_5xx(client: httpx.Client, path: str) -> None:
    """10**12 is a valid positive integer to the gateway: it goes upstream, which decides (the sim
    answers normally; a real provider answers a 4xx that the walk relays as the client's fault)."""
    field = "max_output_tokens" if path == RESPONSES else "max_tokens"
    resp = post(client, path, {**VALID[path], field: 10**12})
    assert resp.status_code < 500, resp.text[:300]


# ---- the transport: body size, headers -----------------------------------------------------------------


@pytest.mark.parametrize("path", ALL)
def test_oversized_body_is_413(ft: FleetThread, path: str) -> None:
    big = {**VALID[path], "metadata": {"pad": "x" * 2048}}
    with GatewayServer(config(ft, max_body="1KiB")) as small, httpx.Client(base_url=small.url) as c:
        # With a content-length (refused before reading) and chunked (refused while reading).
        assert_error(post(c, path, big), path, 413)
        chunked = c.post(
            path, content=iter([json.dumps(big).encode()[i : i + 256] for i in range(0, 2200, 256)])
        )
        assert_error(chunked, path, 413)
        ok = post(c, path, VALID[path])
        assert ok.status_code == 200, ok.text[:300]


def test_huge_header_is_never_a_5xx_and_the_server_keeps_serving(gw: GatewayServer) -> None:
    with httpx.Client(base_url=gw.url, timeout=20) as c:
        for size in (60_000, 600_000):
            try:
                resp = post_with_header(c, size)
            except httpx.TransportError:
                pass  # the HTTP layer may drop the connection: acceptable, it is not a modelpool answer
            else:
                assert resp.status_code < 500, resp.text[:300]
        assert c.get("/healthz").status_code == 200
        assert post(c, CHAT, VALID[CHAT]).status_code == 200


def post_with_header(c: httpx.Client, size: int) -> httpx.Response:
    return c.post(CHAT, content=json.dumps(VALID[CHAT]).encode(), headers={"x-big": "a" * size})


# ---- content the gateway does not know -----------------------------------------------------------------

HOLOGRAM = [{"role": "user", "content": [{"type": "hologram", "data": "?"}]}]


def with_hologram(path: str, model: str) -> dict[str, Any]:
    key = "input" if path == RESPONSES else "messages"
    return {**VALID[path], "model": model, key: HOLOGRAM}


@pytest.mark.parametrize("stream", [False, True])
def test_unknown_part_on_a_passthrough_route_goes_upstream(client: httpx.Client, stream: bool) -> None:
    """OpenAI client on an OpenAI route: the body is relayed as sent and the upstream decides. The sim
    ignores unknown parts and answers 200; a real provider's 400 is relayed as a 4xx (test_relay_edges)."""
    resp = post(client, CHAT, {**with_hologram(CHAT, "m1"), "stream": stream})
    assert resp.status_code == 200, resp.text[:300]
    assert resp.headers["x-modelpool-route"].startswith("oa/")


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("path", CALLS)
def test_unknown_part_that_no_route_can_carry_is_400(client: httpx.Client, path: str, stream: bool) -> None:
    """`m2` has only an Anthropic route: the translation refuses the part; the walk ends with a 400
    naming the part (before the fix: an uncaught ClientError inside the walk, a 500)."""
    resp = post(client, path, {**with_hologram(path, "m2"), "stream": stream})
    if path == MESSAGES:
        # Anthropic client on an Anthropic route: passthrough, the upstream (sim) decides.
        assert resp.status_code == 200, resp.text[:300]
        return
    body = assert_error(resp, path, 400)
    assert "hologram" in message_of(body)


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("path", [MESSAGES, RESPONSES])
def test_unknown_part_walks_to_a_route_that_can_carry_it(
    client: httpx.Client, path: str, stream: bool
) -> None:
    """`m1`: the OpenAI route cannot carry the part (translation refuses it, the request's fault, not
    the route's); the walk moves to the Anthropic route, which takes the request as it is."""
    resp = post(client, path, {**with_hologram(path, "m1"), "stream": stream})
    assert resp.status_code < 500, resp.text[:300]
    if resp.status_code >= 400:
        check_error_shape(resp.json(), path)


def test_count_tokens_of_an_unknown_part_is_an_estimate(client: httpx.Client) -> None:
    resp = post(client, COUNT, with_hologram(COUNT, "m1"))
    assert resp.status_code == 200 and isinstance(resp.json()["input_tokens"], int)


TOOL_CHOICE = {
    CHAT: {
        "tools": [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}],
        "tool_choice": {"type": "function", "function": {"name": "nope"}},
    },
    MESSAGES: {
        "tools": [{"name": "lookup", "input_schema": {"type": "object"}}],
        "tool_choice": {"type": "tool", "name": "nope"},
    },
    RESPONSES: {
        "tools": [{"type": "function", "name": "lookup", "parameters": {"type": "object"}}],
        "tool_choice": {"type": "function", "name": "nope"},
    },
}


@pytest.mark.parametrize("model", ["m1", "m2"])
@pytest.mark.parametrize("path", CALLS)
def test_tool_choice_naming_an_unknown_tool_is_not_a_5xx(client: httpx.Client, path: str, model: str) -> None:
    """The gateway does not validate tool_choice against tools: the upstream decides (the sim answers)."""
    resp = post(client, path, {**VALID[path], "model": model, **TOOL_CHOICE[path]})
    assert resp.status_code < 500, resp.text[:300]
    if resp.status_code >= 400:
        check_error_shape(resp.json(), path)


@pytest.mark.parametrize("path", [MESSAGES, RESPONSES])
def test_tools_in_the_other_dialects_shape_are_not_a_5xx(client: httpx.Client, path: str) -> None:
    other = TOOL_CHOICE[CHAT] if path == MESSAGES else TOOL_CHOICE[MESSAGES]
    resp = post(client, path, {**VALID[path], **other})
    assert resp.status_code < 500, resp.text[:300]
    if resp.status_code >= 400:
        check_error_shape(resp.json(), path)


# ---- property: random JSON never gets a 5xx ------------------------------------------------------------

FIELDS = [
    "model",
    "messages",
    "input",
    "max_tokens",
    "max_completion_tokens",
    "max_output_tokens",
    "stream",
    "system",
    "instructions",
    "tools",
    "tool_choice",
    "reasoning",
    "reasoning_effort",
    "thinking",
    "role",
    "content",
    "type",
    "text",
    "stream_options",
    "metadata",
]
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
    | st.sampled_from(["m1", "m2", "user", "assistant", "system", "text", "image", "tool", "high", ""])
)
keys = st.sampled_from(FIELDS) | st.text(max_size=8)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=5),
    max_leaves=20,
)
messages = st.lists(
    st.dictionaries(
        st.sampled_from(["role", "content", "type", "tool_calls", "name"]), json_values, max_size=4
    )
    | json_values,
    max_size=3,
)
near_valid = st.fixed_dictionaries(
    {"model": st.sampled_from(["m1", "m2"]) | json_values},
    optional={
        "messages": messages,
        "input": messages | json_values,
        "max_tokens": st.integers(min_value=-5, max_value=10**6) | json_values,
        "stream": st.booleans() | json_values,
        "system": json_values,
        "tools": json_values,
        "tool_choice": json_values,
        "reasoning_effort": json_values,
        "thinking": json_values,
    },
)
bodies = json_values | st.dictionaries(keys, json_values, max_size=8) | near_valid


@pytest.mark.parametrize("path", ALL)
def test_random_json_never_gets_a_5xx(gw: GatewayServer, client: httpx.Client, path: str) -> None:
    @settings(
        max_examples=FUZZ_EXAMPLES,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(body=bodies)
    def check(body: Any) -> None:
        resp = client.post(
            path, content=json.dumps(body).encode(), headers={"content-type": "application/json"}
        )
        assert resp.status_code < 500, (body, resp.status_code, resp.text[:300])
        if resp.status_code >= 400:
            check_error_shape(resp.json(), path)

    check()
    assert client.get("/healthz").status_code == 200


@pytest.mark.parametrize("path", ALL)
def test_unhashable_part_type_is_not_a_5xx(client: httpx.Client, path: str) -> None:
    """`{"type": [...]}` in a content part (found by the property test: a TypeError in the estimator)."""
    key = "input" if path == RESPONSES else "messages"
    req = {**VALID[path], key: [{"role": "user", "content": [{"type": ["text"], "text": "hi"}]}]}
    resp = post(client, path, req)
    assert resp.status_code < 500, resp.text[:300]
    if resp.status_code >= 400:
        check_error_shape(resp.json(), path)


@pytest.mark.parametrize("depth", [100, 900, 1100])
@pytest.mark.parametrize("path", ALL)
def test_deeply_nested_content_is_not_a_5xx(client: httpx.Client, path: str, depth: int) -> None:
    key = "input" if path == RESPONSES else "messages"
    nested = b"[" * depth + b"]" * depth
    raw = json.dumps({**VALID[path], key: [{"role": "user", "content": "@@"}]}).encode()
    resp = client.post(path, content=raw.replace(b'"@@"', b'[{"type": "text", "text": ' + nested + b"}]"))
    assert resp.status_code < 500, resp.text[:300]
    if resp.status_code >= 400:
        check_error_shape(resp.json(), path)
    assert client.get("/healthz").status_code == 200
