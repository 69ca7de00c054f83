"""The call log: a real `modelpool serve` whose stderr is a pipe (not a terminal) writes JSON lines, one per
call, and the request id of each line is the one the client sent or got back in `x-request-id`."""

from __future__ import annotations

import io
import json
import logging
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest

from modelpool import logs
from modelpool.logs import setup_logging
from modelpool.sim import Fault, FleetThread
from serve_process import serve_process
from support import base_config


def _lines(stderr: str) -> list[dict[str, Any]]:
    out = []
    for line in stderr.splitlines():
        if line.strip():
            out.append(json.loads(line))  # every line is JSON, uvicorn's own included
    return out


def test_serve_writes_one_json_line_per_call_with_the_request_id(fleet: FleetThread, tmp_path: Path) -> None:
    fleet.set_faults("alpha", [Fault("server_error", times=2)])
    cfg = base_config(fleet, retries_per_route=1)
    with serve_process(cfg, tmp_path) as srv:
        oa = openai.OpenAI(base_url=srv.url + "/v1", api_key="x", max_retries=0)
        msgs = [{"role": "user", "content": "hello"}]
        first = oa.chat.completions.with_raw_response.create(
            model="m1",
            messages=msgs,  # type: ignore[arg-type]
            extra_headers={"x-request-id": "client-req.0001"},
        )
        assert first.headers["x-request-id"] == "client-req.0001"
        an = anthropic.Anthropic(base_url=srv.url, api_key="x", max_retries=0)
        with an.messages.with_streaming_response.create(
            model="m1",
            max_tokens=64,
            messages=msgs,  # type: ignore[arg-type]
            stream=True,
        ) as streamed:
            generated = streamed.headers["x-request-id"]
            assert "".join(streamed.iter_lines())
        assert re.fullmatch(r"[0-9a-f]{12}-[0-9a-f]+", generated)
        unsafe = "x" * 300  # too long to echo: replaced by a generated id
        bad = httpx.post(
            srv.url + "/v1/responses",
            json={"model": "no-such-model", "input": "hi"},
            headers={"x-request-id": unsafe},
            timeout=10,
        )
        assert bad.status_code == 404
        assert bad.headers["x-request-id"] != unsafe
        bad_id = bad.headers["x-request-id"]
        stderr = srv.stop()

    lines = _lines(stderr)
    assert all({"ts", "level", "logger", "msg"} <= set(line) for line in lines)
    calls = [line for line in lines if line["logger"] == "modelpool.calls"]
    assert len(calls) == 3  # one line per call, nothing else from the hot path
    by_id = {line["request_id"]: line for line in calls}

    one = by_id["client-req.0001"]
    assert one["level"] == "info" and one["msg"] == "call"
    assert one["dialect"] == "openai" and one["pool"] == "m1" and one["stream"] is False
    assert one["status"] == 200 and one["outcome"] == "ok"
    assert one["route"] == "beta/m1" and one["switched_from"] == "alpha/m1"
    assert one["attempts"] == [
        {"route": "alpha/m1", "kind": "server", "status": 500},
        {"route": "alpha/m1", "kind": "server", "status": 500},
    ]
    assert one["tokens_out"] == 6 and one["tokens_in"] > 0
    assert one["ttft_ms"] is None and one["total_ms"] > 0  # no TTFT for a non-streamed call

    two = by_id[generated]
    assert two["dialect"] == "anthropic" and two["stream"] is True and two["route"] == "beta/m1"
    assert two["attempts"] == [] and two["switched_from"] is None
    assert two["tokens_out"] == 6
    assert 0 < two["ttft_ms"] <= two["total_ms"]

    three = by_id[bad_id]
    assert three["dialect"] == "responses" and three["status"] == 404 and three["outcome"] == "rejected"
    assert three["pool"] is None and three["route"] is None


@pytest.fixture
def root_logging() -> Iterator[None]:
    """The root logger's level and handlers as they were, and no fast call-line writer, after the test."""
    root = logging.getLogger()
    saved = (root.level, list(root.handlers))
    yield
    logs.fast_call_line = None
    for h in list(root.handlers):
        root.removeHandler(h)
    for h in saved[1]:
        root.addHandler(h)
    root.setLevel(saved[0])


def test_text_on_a_terminal_json_elsewhere_and_a_second_setup_does_not_double_lines(
    root_logging: None,
) -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    tty = Tty()
    assert setup_logging("info", "auto", tty) == "text"
    fields = {"request_id": "r1", "route": None, "attempts": [{"route": "a/m", "kind": "server"}]}
    logging.getLogger("modelpool.calls").info("call", extra={"call": fields})
    logs.flush_logs()
    assert tty.getvalue().rstrip().endswith("modelpool.calls: call request_id=r1 attempts=a/m:server")
    pipe = io.StringIO()
    assert setup_logging("info", "auto", pipe) == "json"
    logging.getLogger("modelpool.x").warning("hello %s", "there")
    logs.flush_logs()
    assert json.loads(pipe.getvalue())["msg"] == "hello there"
    assert tty.getvalue().count("\n") == 1  # the first handler was replaced, not kept
    forced = io.StringIO()
    setup_logging("info", "text", forced)
    logging.getLogger("modelpool.x").info("plain")
    logs.flush_logs()
    assert "INFO modelpool.x: plain" in forced.getvalue()


def test_a_slow_log_reader_never_blocks_the_caller(root_logging: None) -> None:
    """A pipe whose reader stalls (a log shipper falling behind) must not stall calls: lines wait in the
    writer thread's queue. Were the write done by the caller, it would sit in `write` until the stream
    gives up and `timed_out` would be set."""

    class StalledPipe(io.StringIO):
        def __init__(self) -> None:
            super().__init__()
            self.release = threading.Event()
            self.timed_out = False

        def write(self, s: str) -> int:
            if not self.release.wait(5):
                self.timed_out = True
            return super().write(s)

    pipe = StalledPipe()
    setup_logging("info", "json", pipe)
    assert logs.fast_call_line is not None
    for i in range(3):
        logs.fast_call_line({"request_id": f"r{i}"})
    logging.getLogger("modelpool.x").warning("still here")
    pipe.release.set()
    logs.flush_logs()
    lines = [json.loads(x) for x in pipe.getvalue().splitlines()]
    assert not pipe.timed_out
    assert [x.get("request_id") for x in lines] == ["r0", "r1", "r2", None]
    assert lines[-1]["msg"] == "still here"
