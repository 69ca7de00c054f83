"""A recording upstream: a tiny scripted agent model on loopback that saves every request it gets.

Used to see exactly what a real CLI sends (the fidelity corpus in tests/protocols/corpus/clients was
recorded with it) — run it by hand:

    python tests/clients/recorder.py --port 8799 --out /tmp/rec

then point Claude Code (ANTHROPIC_BASE_URL=http://127.0.0.1:8799), Codex (a custom model_provider with
base_url http://127.0.0.1:8799/v1) or Gemini CLI (GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:8799, with the
settings of tests/clients/agents.py `run_gemini`) at it. It answers Anthropic Messages (`/v1/messages`),
OpenAI Responses (`/v1/responses`) and the Gemini API (`:streamGenerateContent`) as a small agent would:
the first turn asks for a file write (Claude Code's `Write` tool, Codex's freeform `apply_patch`, Gemini
CLI's `write_file`), and once the tool result is in the history it finishes with text. Secrets
(authorization, x-api-key, x-goog-api-key) are never written to disk. (The Gemini CLI turns in the corpus
were recorded through tests/clients/tap.py in front of modelpool on a native route; the same bodies.)
"""

from __future__ import annotations

import argparse
import itertools
import json
import pathlib
from typing import Any

from aiohttp import web

SECRET_HEADERS = {"authorization", "x-api-key", "x-goog-api-key", "cookie"}
FILE_NAME = "hello.txt"
FILE_TEXT = "hello from modelpool"
_seq = itertools.count(1)
SIG = "EqQBCkgIBxABGAIqQFrecordedSignatureForModelpoolCorpus0000=="
ENCRYPTED = "gAAAAABrecordedEncryptedReasoningForModelpoolCorpus=="


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def _has_tool_result_anthropic(body: dict[str, Any]) -> bool:
    for msg in body.get("messages", []):
        content = msg.get("content")
        if isinstance(content, list) and any(b.get("type") == "tool_result" for b in content):
            return True
    return False


def _anthropic_events(body: dict[str, Any]) -> list[bytes]:
    n = next(_seq)
    model = body.get("model", "m")
    out = [
        _sse(
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": f"msg_rec{n}",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": 10, "output_tokens": 1},
                },
            },
        )
    ]
    tools = {t.get("name") for t in body.get("tools", [])}
    if "Write" in tools and not _has_tool_result_anthropic(body):
        # A signed thinking block first, so the next request carries it back as the CLI really does.
        thinking = {"type": "thinking", "thinking": "", "signature": ""}
        out += [
            _sse(
                "content_block_start", {"type": "content_block_start", "index": 0, "content_block": thinking}
            ),
            _sse(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "thinking_delta", "thinking": "I will write the file."},
                },
            ),
            _sse(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "signature_delta", "signature": SIG},
                },
            ),
            _sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ]
        args = {"file_path": FILE_NAME, "content": FILE_TEXT}
        block = {"type": "tool_use", "id": f"toolu_rec{n}", "name": "Write", "input": {}}
        out += [
            _sse("content_block_start", {"type": "content_block_start", "index": 1, "content_block": block}),
            _sse(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 1,
                    "delta": {"type": "input_json_delta", "partial_json": json.dumps(args)},
                },
            ),
        ]
        last = 1
        stop = "tool_use"
    else:
        block = {"type": "text", "text": ""}
        out += [
            _sse("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}),
            _sse(
                "content_block_delta",
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Done."}},
            ),
        ]
        last = 0
        stop = "end_turn"
    out += [
        _sse("content_block_stop", {"type": "content_block_stop", "index": last}),
        _sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": 5},
            },
        ),
        _sse("message_stop", {"type": "message_stop"}),
    ]
    return out


def _has_tool_output_responses(body: dict[str, Any]) -> bool:
    items = body.get("input")
    return isinstance(items, list) and any(
        isinstance(i, dict) and str(i.get("type", "")).endswith("_call_output") for i in items
    )


def _responses_events(body: dict[str, Any]) -> list[bytes]:
    n = next(_seq)
    rid = f"resp_rec{n}"
    base = {
        "id": rid,
        "object": "response",
        "model": body.get("model"),
        "status": "in_progress",
        "output": [],
    }
    out = [_sse("response.created", {"type": "response.created", "response": base})]
    tools = {t.get("name") or t.get("type") for t in body.get("tools", [])}
    if "apply_patch" in tools and not _has_tool_output_responses(body):
        patch = f"*** Begin Patch\n*** Add File: {FILE_NAME}\n+{FILE_TEXT}\n*** End Patch\n"
        item = {
            "type": "custom_tool_call",
            "id": f"ctc_rec{n}",
            "call_id": f"call_rec{n}",
            "name": "apply_patch",
            "input": "",
            "status": "in_progress",
        }
        done = {**item, "input": patch, "status": "completed"}
        # An encrypted reasoning item first (Codex asks for reasoning.encrypted_content and sends it back).
        reasoning = {"type": "reasoning", "id": f"rs_rec{n}", "summary": [], "encrypted_content": ENCRYPTED}
        out += [
            _sse(
                "response.output_item.added",
                {
                    "type": "response.output_item.added",
                    "output_index": 0,
                    "item": {**reasoning, "encrypted_content": None},
                },
            ),
            _sse(
                "response.output_item.done",
                {"type": "response.output_item.done", "output_index": 0, "item": reasoning},
            ),
        ]
        item_index = 1
        out += [
            _sse(
                "response.output_item.added",
                {"type": "response.output_item.added", "output_index": item_index, "item": item},
            ),
            _sse(
                "response.custom_tool_call_input.delta",
                {
                    "type": "response.custom_tool_call_input.delta",
                    "output_index": item_index,
                    "item_id": item["id"],
                    "delta": patch,
                },
            ),
            _sse(
                "response.custom_tool_call_input.done",
                {
                    "type": "response.custom_tool_call_input.done",
                    "output_index": item_index,
                    "item_id": item["id"],
                    "input": patch,
                },
            ),
            _sse(
                "response.output_item.done",
                {"type": "response.output_item.done", "output_index": item_index, "item": done},
            ),
        ]
    else:
        reasoning = {}
        done = {
            "type": "message",
            "id": f"msg_rec{n}",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "Done.", "annotations": []}],
        }
        out += [
            _sse(
                "response.output_item.added",
                {"type": "response.output_item.added", "output_index": 0, "item": done},
            ),
            _sse(
                "response.output_text.delta",
                {
                    "type": "response.output_text.delta",
                    "output_index": 0,
                    "content_index": 0,
                    "item_id": done["id"],
                    "delta": "Done.",
                },
            ),
            _sse(
                "response.output_item.done",
                {"type": "response.output_item.done", "output_index": 0, "item": done},
            ),
        ]
    usage = {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
    output = [reasoning, done] if done["type"] == "custom_tool_call" else [done]
    final = {**base, "status": "completed", "output": output, "usage": usage}
    out.append(_sse("response.completed", {"type": "response.completed", "response": final}))
    return out


def _gemini_events(body: dict[str, Any]) -> list[bytes]:
    """Gemini CLI's turn: a `write_file` call (with an id and a signature, as Gemini sends them) until the
    result is in the history, then text; CRLF framing and no terminator, as Google streams."""
    n = next(_seq)
    declared = {d.get("name") for t in body.get("tools", []) for d in t.get("functionDeclarations", [])}
    answered = any("functionResponse" in p for c in body.get("contents", []) for p in c.get("parts", []))
    if "write_file" in declared and not answered:
        args = {"file_path": FILE_NAME, "content": FILE_TEXT + "\n"}
        parts: list[dict[str, Any]] = [
            {"text": "I will write the file.", "thought": True},
            {
                "functionCall": {"id": f"call_rec{n}", "name": "write_file", "args": args},
                "thoughtSignature": SIG,
            },
        ]
    else:
        parts = [{"text": "Done."}]
    usage = {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}
    events = [{"candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}]}]
    final = {"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": "STOP", "index": 0}
    events.append({"candidates": [final], "usageMetadata": usage})
    return [b"data: " + json.dumps({**e, "responseId": f"rec{n}"}).encode() + b"\r\n\r\n" for e in events]


def make_app(out_dir: pathlib.Path) -> web.Application:
    out_dir.mkdir(parents=True, exist_ok=True)
    counter = itertools.count(1)

    async def record(request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode(errors="replace")
        headers = {k.lower(): v for k, v in request.headers.items() if k.lower() not in SECRET_HEADERS}
        entry = {"method": request.method, "path": request.path_qs, "headers": headers, "body": body}
        name = f"{next(counter):03d}-{request.path.strip('/').replace('/', '_')}.json"
        (out_dir / name).write_text(json.dumps(entry, indent=2, ensure_ascii=False))
        if request.path.endswith("/count_tokens"):
            return web.json_response({"input_tokens": 100})
        if request.path.endswith("/messages") and isinstance(body, dict):
            events = _anthropic_events(body)
        elif request.path.endswith("/responses") and isinstance(body, dict):
            events = _responses_events(body)
        elif ":streamGenerateContent" in request.path and isinstance(body, dict):
            events = _gemini_events(body)
        else:
            return web.json_response({"object": "list", "data": []})
        resp = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await resp.prepare(request)
        for chunk in events:
            await resp.write(chunk)
        await resp.write_eof()
        return resp

    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_route("*", "/{tail:.*}", record)
    return app


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=8799)
    ap.add_argument("--out", type=pathlib.Path, required=True)
    args = ap.parse_args()
    web.run_app(make_app(args.out), host="127.0.0.1", port=args.port, print=None)


if __name__ == "__main__":
    main()
