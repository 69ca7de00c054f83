"""What the llama.cpp tests share: the gateway config around a real llama-server, the SDK clients, and the
direct calls they compare against (SPEC §10 "Real upstreams in the tests")."""

from __future__ import annotations

from typing import Any

import anthropic
import httpx
import openai

from gateway_server import ADMIN_TOKEN
from llama_server import ALIAS, LlamaServer

PRICES = {"input": 0.5, "cached_input": 0.05, "output": 1.5}  # USD per 1M tokens, for the cost checks
GREEDY = {"temperature": 0, "seed": 7}


def gateway_config(*providers: dict[str, Any], **pool: Any) -> dict[str, Any]:
    return {
        "server": {"admin_token": ADMIN_TOKEN},
        "state": {"backend": "memory"},
        "holidays": {"source": "bundled"},
        "pool": {"strategy": "priority", "retry_backoff": "1ms", **pool},
        "providers": list(providers),
    }


def oai(url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=url + "/v1", api_key="client-key", max_retries=0, timeout=120)


def anth(url: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=url, api_key="client-key", max_retries=0, timeout=120)


def usage_rows(url: str, by: str = "route") -> list[dict[str, Any]]:
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    report = httpx.get(f"{url}/admin/usage?group_by={by}", headers=headers, timeout=10).json()
    return list(report["rows"])


def chat_body(text: str, max_tokens: int = 24, **extra: Any) -> dict[str, Any]:
    return {
        "model": ALIAS,
        "max_tokens": max_tokens,
        "messages": [{"role": "user", "content": text}],
        **GREEDY,
        **extra,
    }


def direct_chat(llama: LlamaServer, text: str, max_tokens: int = 24) -> tuple[str, dict[str, int]]:
    """The reply text and usage of the same request sent straight to llama-server."""
    reply = llama.post("/v1/chat/completions", chat_body(text, max_tokens)).json()
    usage = reply["usage"]
    return reply["choices"][0]["message"]["content"], {
        "in": usage["prompt_tokens"],
        "out": usage["completion_tokens"],
    }


def wait_usage(url: str, calls: int, by: str = "route", timeout: float = 10.0) -> list[dict[str, Any]]:
    """The usage rows once they count `calls` calls (the book flushes in the background)."""
    import time

    deadline = time.monotonic() + timeout
    rows: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        rows = usage_rows(url, by)
        if sum(r["calls"] for r in rows) >= calls:
            return rows
        time.sleep(0.2)
    return rows
