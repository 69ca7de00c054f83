"""Provider keys never leave the gateway (SPEC §12): a canary key is looked for everywhere a user can look."""

from __future__ import annotations

import logging
import sqlite3
import time
from pathlib import Path

import httpx
import openai
import pytest

from gateway_server import ADMIN_TOKEN, GatewayServer
from modelpool.sim import Fault, FleetSpec, FleetThread, SimModel, SimProvider

CANARY = "sk-canary-7f3a9c1e5b2d4f60"


def test_a_provider_key_appears_in_no_answer_log_state_or_page(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    fast = {"ttft": 0.005, "tps": 5000.0}
    spec = FleetSpec(
        [
            SimProvider("keyed", models=[SimModel("m1", output_tokens=3)], api_key=CANARY, **fast),
            SimProvider("spare", models=[SimModel("m1", output_tokens=3)], **fast),
        ]
    )
    db = tmp_path / "state.db"
    caplog.set_level(logging.DEBUG)
    with FleetThread(spec) as ft:
        cfg = ft.to_config(state={"backend": "sqlite", "path": str(db)}, server={"admin_token": ADMIN_TOKEN})
        cfg["pool"] = {"strategy": "priority", "retries_per_route": 0}
        # The upstream echoes the key in its error text, as some providers do.
        ft.set_faults("keyed", [Fault("status", times=1, status=401, message=f"invalid api key {CANARY}")])
        seen: list[str] = []
        with GatewayServer(cfg) as gw:
            c = openai.OpenAI(base_url=gw.url + "/v1", api_key="x", max_retries=0)
            raw = c.chat.completions.with_raw_response.create(
                model="m1", messages=[{"role": "user", "content": "hi"}]
            )
            assert raw.headers["x-modelpool-route"] == "spare/m1"  # the auth failure switched
            seen.append(raw.text)
            ft.set_faults("spare", [Fault("server_error")])
            ft.set_faults("keyed", [Fault("status", status=401, message=f"invalid api key {CANARY}")])
            failed = httpx.post(
                gw.url + "/v1/chat/completions",
                json={"model": "m1", "messages": [{"role": "user", "content": "again"}]},
                timeout=10,
            )
            assert failed.status_code >= 400
            seen.append(failed.text)
            headers = gw.admin_headers()
            for path in (
                "/admin/status",
                "/admin/pools",
                "/admin/models",
                "/admin/settings",
                "/admin/sessions",
            ):
                seen.append(httpx.get(gw.url + path, headers=headers, timeout=10).text)
            seen.append(repr(gw.gateway.events.recent(500)))
            seen.append(httpx.get(gw.url + "/", cookies={"modelpool_admin": ADMIN_TOKEN}, timeout=10).text)
            seen.append(repr(gw.gateway.runtime.endpoints))
        # the gateway really used the key upstream (the keyed route answered the first call's retry path)
        assert any(call.key_ok for call in ft.calls("keyed"))
    time.sleep(0.1)
    with sqlite3.connect(db) as conn:
        stored = " ".join(str(row) for row in conn.execute("SELECT ns, key, value FROM kv"))
    assert "keyed/m1" in stored  # the failure was persisted …
    seen.append(stored)
    seen.extend(r.getMessage() for r in caplog.records)
    leaks = [s[:200] for s in seen if CANARY in s or CANARY[3:] in s]
    assert leaks == []  # … but never the key


def test_a_provider_key_is_in_no_json_log_line_nor_the_metrics(tmp_path: Path) -> None:
    """The real `modelpool serve` at debug level, its stderr a pipe (so JSON lines), while the upstream
    echoes the key in its errors — on a switched call, a failed call and a stream."""
    from serve_process import serve_process

    fast = {"ttft": 0.005, "tps": 5000.0}
    spec = FleetSpec(
        [
            SimProvider("keyed", models=[SimModel("m1", output_tokens=3)], api_key=CANARY, **fast),
            SimProvider("spare", models=[SimModel("m1", output_tokens=3)], **fast),
        ]
    )
    with FleetThread(spec) as ft:
        cfg = ft.to_config(state={"backend": "memory"}, server={"admin_token": ADMIN_TOKEN})
        cfg["pool"] = {"strategy": "priority", "retries_per_route": 0}
        cfg["holidays"] = {"source": "bundled"}
        ft.set_faults("keyed", [Fault("status", status=401, message=f"invalid api key {CANARY}")])
        with serve_process(cfg, tmp_path, "--log-level", "debug") as srv:
            c = openai.OpenAI(base_url=srv.url + "/v1", api_key="x", max_retries=0)
            msgs = [{"role": "user", "content": "hi"}]
            assert c.chat.completions.create(model="m1", messages=msgs).choices  # type: ignore[arg-type]
            assert list(c.chat.completions.create(model="m1", messages=msgs, stream=True))  # type: ignore[arg-type]
            ft.set_faults("spare", [Fault("server_error", message=f"upstream says {CANARY}")])
            failed = httpx.post(srv.url + "/v1/chat/completions", json={"model": "m1", "messages": msgs})
            assert failed.status_code >= 400
            metrics = httpx.get(srv.url + "/metrics", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}).text
            assert "modelpool_attempts_total" in metrics
            stderr = srv.stop()
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert any('"logger":"modelpool.calls"' in line and '"kind":"auth"' in line for line in lines)
    for text in [*lines, metrics]:
        assert CANARY not in text and CANARY[3:] not in text
