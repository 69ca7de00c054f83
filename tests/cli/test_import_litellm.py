"""`modelpool config import-litellm`: a realistic LiteLLM proxy config converted by the real CLI, then served
by the real gateway over the simulated fleet and called with the official `openai` SDK."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
import yaml

from gateway_server import GatewayServer
from modelpool.cli.litellm_import import import_litellm
from modelpool.sim import Fault, FleetSpec, FleetThread, SimModel, SimProvider

FIXTURE = Path(__file__).parent / "data" / "litellm_config.yaml"
MASTER_KEY = "sk-litellm-master"
CLI = [sys.executable, "-m", "modelpool"]


def _fleet_spec() -> FleetSpec:
    def p(pid: str, model: str, kind: str = "openai") -> SimProvider:
        return SimProvider(
            pid,
            kind=kind,
            models=[SimModel(model, output_tokens=5)],
            ttft=0.002,
            tps=5000.0,
            api_key=f"k-{pid}",
        )  # type: ignore[arg-type]

    return FleetSpec(
        [
            p("eu", "gpt-4o"),
            p("us", "gpt-4o"),
            p("claude", "claude-sonnet-4-5", "anthropic"),
            p("ds", "deepseek-chat"),
            p("or", "meta-llama/llama-3.3-70b-instruct"),
        ]
    )


@pytest.fixture
def sim() -> Iterator[FleetThread]:
    with FleetThread(_fleet_spec()) as ft:
        yield ft


def _env(ft: FleetThread) -> dict[str, str]:
    """The variables the LiteLLM config reads, pointing at the simulated fleet."""
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_API_BASE"))}
    env |= {
        "OPENAI_EU_BASE": ft.base_url("eu"),
        "OPENAI_EU_KEY": "k-eu",
        "OPENAI_US_BASE": ft.base_url("us"),
        "OPENAI_US_KEY": "k-us",
        "ANTHROPIC_API_BASE": ft.base_url("claude"),
        "ANTHROPIC_API_KEY": "k-claude",
        "DEEPSEEK_API_BASE": ft.base_url("ds"),
        "DEEPSEEK_API_KEY": "k-ds",
        "OPENROUTER_API_BASE": ft.base_url("or"),
        "OPENROUTER_API_KEY": "k-or",
        "AZURE_API_BASE": ft.root_url("eu"),  # never called here: the Azure path is not one the sim serves
        "AZURE_API_KEY": "k-azure",
        "LITELLM_MASTER_KEY": MASTER_KEY,
    }
    return env


def _convert(tmp_path: Path, env: dict[str, str]) -> tuple[Path, dict[str, Any]]:
    out = tmp_path / "modelpool.yaml"
    res = subprocess.run(
        [*CLI, "config", "import-litellm", str(FIXTURE), "-o", str(out), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert res.returncode == 0, res.stderr
    return out, json.loads(res.stdout)


def test_the_report_names_every_key_it_could_not_map(sim: FleetThread, tmp_path: Path) -> None:
    out, report = _convert(tmp_path, _env(sim))
    assert report["written"] == str(out)
    unmapped = {u["key"]: u["reason"] for u in report["unmapped"]}
    assert "SigV4" in unmapped["model_list[6]"]  # bedrock
    assert "embedding" in unmapped["model_list[7]"]
    for key in (
        "router_settings.allowed_fails",
        "router_settings.enable_pre_call_checks",
        "litellm_settings.drop_params",
        "litellm_settings.success_callback",
        "general_settings.database_url",
        "environment_variables",
        "model_list[0].litellm_params.timeout",
        "model_list[3].litellm_params.temperature",
    ):
        assert key in unmapped, key
    approximated = {a["key"]: a["how"] for a in report["approximated"]}
    assert "weighted-random" in approximated["router_settings.routing_strategy"]
    assert "model_fallback" in approximated["litellm_settings.fallbacks"]
    cfg = yaml.safe_load(out.read_text())
    assert cfg == report["config"]
    groups = {g["id"]: g["models"] for g in cfg["pool"]["groups"]}
    assert groups["gpt-4o"] == ["openai/gpt-4o", "openai-2/gpt-4o"]
    assert cfg["pool"]["strategy"] == "weighted-random" and cfg["pool"]["model_fallback"] == "any"
    assert [p["weight"] for p in cfg["providers"][:2]] == [600, 300]  # rpm, as LiteLLM's shuffle weighs
    assert cfg["server"]["api_keys"] == ["${LITELLM_MASTER_KEY}"]
    assert cfg["aliases"] == {"gpt-4": "gpt-4o"}
    azure = next(p for p in cfg["providers"] if p["id"] == "azure")
    assert azure["base_url"] == "${AZURE_API_BASE}/openai/v1"
    # `modelpool config check` accepts what was written.
    check = subprocess.run(
        [*CLI, "config", "check", str(out), "--json"], capture_output=True, text=True, env=_env(sim)
    )
    assert check.returncode == 0 and json.loads(check.stdout)["valid"] is True


def test_the_converted_config_serves_openai_sdk_calls(sim: FleetThread, tmp_path: Path) -> None:
    env = _env(sim)
    out, _ = _convert(tmp_path, env)
    served = yaml.safe_load(out.read_text())
    served["holidays"] = {"source": "bundled"}  # the one addition: tests never fetch the calendar online
    with GatewayServer(served, env=env) as gw:
        client = openai.OpenAI(base_url=gw.url + "/v1", api_key=MASTER_KEY, max_retries=0)
        seen = {"gpt-4o": set(), "claude-sonnet": set(), "deepseek-chat": set(), "gpt-4": set()}
        for i in range(12):
            for model, routes in seen.items():
                # A new conversation each time: one conversation stays on its route (pool.sticky).
                raw = client.chat.completions.with_raw_response.create(
                    model=model, messages=[{"role": "user", "content": f"hi {i}"}]
                )
                assert raw.parse().choices[0].message.content
                routes.add(raw.headers["x-modelpool-route"])
        # Weighted draw over both (600:300): twelve draws all land on the heavier route 0.8 % of the time,
        # so draw on until both are seen; 60 draws all on one would mean a weight is ignored (odds 3e-11).
        for i in range(12, 60):
            if len(seen["gpt-4o"]) == 2:
                break
            raw = client.chat.completions.with_raw_response.create(
                model="gpt-4o", messages=[{"role": "user", "content": f"hi {i}"}]
            )
            seen["gpt-4o"].add(raw.headers["x-modelpool-route"])
        assert seen["gpt-4o"] == {"openai/gpt-4o", "openai-2/gpt-4o"}
        assert seen["gpt-4"] <= seen["gpt-4o"]  # model_group_alias
        assert seen["claude-sonnet"] == {"anthropic/claude-sonnet-4-5"}  # OpenAI client, Anthropic route
        assert seen["deepseek-chat"] == {"deepseek/deepseek-chat"}
        with pytest.raises(openai.AuthenticationError):  # master_key became the client key
            openai.OpenAI(base_url=gw.url + "/v1", api_key="wrong", max_retries=0).chat.completions.create(
                model="gpt-4o", messages=[{"role": "user", "content": "hi"}]
            )
        # LiteLLM's fallbacks became `model_fallback: any`: with both gpt-4o deployments down, another
        # pool answers (modelpool picks it by family and score; the report says it is not a per-model list).
        for pid in ("eu", "us"):
            sim.set_faults(pid, [Fault("server_error")])
        raw = client.chat.completions.with_raw_response.create(
            model="gpt-4o", messages=[{"role": "user", "content": "hi"}]
        )
        assert raw.parse().choices[0].message.content
        assert raw.headers["x-modelpool-route"] not in seen["gpt-4o"]
        assert sim.calls("eu") and sim.calls("us")  # both were tried first


def _convert_dict(data: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str], dict[str, str]]:
    result = import_litellm(data)
    report = result.report()
    return (
        result.config,
        {u["key"]: u["reason"] for u in report["unmapped"]},
        {a["key"]: a["how"] for a in report["approximated"]},
    )


def _deployment(name: str, model: str, **params: Any) -> dict[str, Any]:
    return {"model_name": name, "litellm_params": {"model": model, **params}}


def test_order_becomes_priority_and_redis_becomes_the_state_backend() -> None:
    cfg, _, approx = _convert_dict(
        {
            "model_list": [
                _deployment("m", "openai/m", api_base="http://a.example/v1", order=2),
                _deployment("m", "openai/m", api_base="http://b.example/v1", order=1),
            ],
            "router_settings": {
                "redis_host": "os.environ/REDIS_HOST",
                "redis_password": "pw",
                "redis_port": 6380,
            },
        }
    )
    assert cfg["pool"]["strategy"] == "priority"
    assert cfg["pool"]["provider_order"] == ["openai-2", "openai"]
    assert cfg["state"] == {"backend": "redis", "redis_url": "redis://:pw@${REDIS_HOST}:6380/0"}
    assert "model_list[].litellm_params.order" in approx


def test_strategies_keys_wildcards_and_shared_routes() -> None:
    cfg, unmapped, approx = _convert_dict(
        {
            "model_list": [
                _deployment("fast", "deepseek/deepseek-chat", api_key="sk-literal-secret"),
                _deployment("fast-too", "deepseek/deepseek-chat", api_key="sk-literal-secret"),
                _deployment("any-openai", "openai/*"),
                _deployment("mystery", "someprovider/x"),
                _deployment("vertex", "vertex_ai/gemini-pro"),
            ],
            "router_settings": {"routing_strategy": "latency-based-routing", "num_retries": 9},
        }
    )
    assert cfg["pool"]["strategy"] == "fastest" and cfg["pool"]["retries_per_route"] == 5
    deepseek = cfg["providers"][0]
    assert deepseek["api_key"] == "sk-literal-secret"  # copied: it was already in the user's file…
    assert "sk-literal" not in json.dumps([unmapped, approx])  # …but never printed in the report
    assert cfg["aliases"] == {"fast-too": "fast"}  # same route twice: one pool, one alias
    openai_ = next(p for p in cfg["providers"] if p["id"] == "openai")
    assert "models" not in openai_ and openai_["api_key_env"] == "OPENAI_API_KEY"  # wildcard: discovery
    assert "unknown provider" in unmapped["model_list[3]"] and "Google" in unmapped["model_list[4]"]


def test_a_file_that_is_not_a_litellm_config_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "x.yaml"
    bad.write_text("providers: []\n")
    res = subprocess.run([*CLI, "config", "import-litellm", str(bad)], capture_output=True, text=True)
    assert res.returncode == 2 and "model_list" in res.stderr


def test_without_out_the_yaml_goes_to_stdout_and_the_report_to_stderr(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_API_BASE"))}
    res = subprocess.run(
        [*CLI, "config", "import-litellm", str(FIXTURE)], capture_output=True, text=True, env=env, timeout=60
    )
    assert res.returncode == 0, res.stderr
    cfg = yaml.safe_load(res.stdout)
    assert [g["id"] for g in cfg["pool"]["groups"]][:2] == ["gpt-4o", "claude-sonnet"]
    assert "not mapped:" in res.stderr and "model_list[6]: claude-bedrock" in res.stderr
    assert "approximated" in res.stderr and "reads environment variables:" in res.stderr
    # An existing file is not overwritten without --force.
    out = tmp_path / "modelpool.yaml"
    out.write_text("keep me\n")
    res = subprocess.run(
        [*CLI, "config", "import-litellm", str(FIXTURE), "-o", str(out)],
        capture_output=True,
        text=True,
        env=env,
    )
    assert res.returncode == 2 and out.read_text() == "keep me\n"
