"""The README's client guides, run as written against a live gateway over the simulated fleet.

Each example is a fenced block right after a `<!-- tested: NAME -->` marker. The test takes the block from
README.md (so an edit to the README is what gets tested), replaces the documented address
`http://127.0.0.1:4000` and the placeholder key `your-modelpool-key` with the live ones, runs it the way a
reader would (Python in a subprocess, shell through bash and the real curl), and checks what it printed.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest
import yaml

from gateway_server import ADMIN_TOKEN, GatewayServer, free_port
from modelpool.sim import FleetSpec, FleetThread, SimModel, SimProvider, expected_text

README = Path(__file__).parents[2] / "README.md"
DOC_URL, DOC_KEY = "http://127.0.0.1:4000", "your-modelpool-key"
KEY = "sk-readme-test"
TOKENS = 5
POOL = "deepseek-v4.1-flash"
BLOCK = re.compile(r"<!-- tested: ([\w-]+) -->\n```(\w+)\n(.*?)\n```", re.S)
# route → the sim text that route answers with
POOL_ROUTES = {
    "deepseek/deepseek-flash": expected_text("deepseek", "deepseek-flash", TOKENS),
    "workbuddy/deepseek-v4.1-flash": expected_text("workbuddy", "deepseek-v4.1-flash", TOKENS),
}


def examples() -> dict[str, tuple[str, str]]:
    found = {name: (lang, code) for name, lang, code in BLOCK.findall(README.read_text(encoding="utf-8"))}
    return found


def example(name: str, url: str) -> str:
    _lang, code = examples()[name]
    return code.replace(DOC_URL, url).replace(DOC_KEY, KEY)


def test_every_guide_is_marked() -> None:
    assert set(examples()) >= {
        "openai-sdk",
        "anthropic-sdk",
        "google-genai",
        "claude-code",
        "deepseek-harness",
        "curl-chat",
        "curl-stream",
        "curl-messages",
        "lb-config",
        "lb-serve",
        "tracing-config",
        "demo-claude",  # run against the real `modelpool demo` by tests/clients/test_demo_agents.py
        "demo-codex",
    }


def fleet_spec() -> FleetSpec:
    def model(mid: str) -> SimModel:
        return SimModel(mid, output_tokens=TOKENS)

    return FleetSpec(
        [
            SimProvider("deepseek", models=[model("deepseek-flash")], ttft=0.002, tps=5000.0),
            SimProvider("workbuddy", kind="anthropic", models=[model("deepseek-v4.1-flash")], ttft=0.002),
            SimProvider("zhipu", models=[model("glm-5.3-flash")], ttft=0.002, tps=5000.0),
        ]
    )


@pytest.fixture(scope="module")
def gateway() -> Iterator[GatewayServer]:
    with FleetThread(fleet_spec()) as ft:
        cfg = ft.to_config(
            server={"api_keys": [KEY], "admin_token": ADMIN_TOKEN},
            state={"backend": "memory"},
            holidays={"source": "bundled"},
            aliases={"claude-*": POOL},
        )
        with GatewayServer(cfg) as gw:
            yield gw


def run_python(code: str, env: dict[str, str] | None = None) -> str:
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert res.returncode == 0, res.stderr
    return res.stdout


def run_shell(code: str) -> str:
    if shutil.which("curl") is None:
        pytest.fail("curl is not installed (.ci/run installs it with apt-get)")
    res = subprocess.run(["bash", "-c", code], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    return res.stdout


def test_openai_sdk(gateway: GatewayServer) -> None:
    route, answer, streamed = run_python(example("openai-sdk", gateway.url)).splitlines()
    assert answer == POOL_ROUTES[route]  # the answer of the route the header named
    assert streamed in POOL_ROUTES.values()


def test_anthropic_sdk(gateway: GatewayServer) -> None:
    out = run_python(example("anthropic-sdk", gateway.url))
    assert out.strip() in POOL_ROUTES.values()


def test_google_genai(gateway: GatewayServer) -> None:
    route, answer, streamed, models = run_python(example("google-genai", gateway.url)).splitlines()
    assert answer == POOL_ROUTES[route]  # the answer of the route the header named
    assert streamed in POOL_ROUTES.values()
    assert f"'models/{POOL}'" in models


CLAUDE_CODE_PROBE = """
import anthropic

client = anthropic.Anthropic()  # like Claude Code: everything from ANTHROPIC_BASE_URL / ANTHROPIC_AUTH_TOKEN
msgs = [{"role": "user", "content": "Hello"}]
raw = client.messages.with_raw_response.create(model="claude-sonnet-4-5", max_tokens=256, messages=msgs)
print(raw.headers["x-modelpool-pool"])
print(raw.parse().content[0].text)
print(client.messages.count_tokens(model="claude-sonnet-4-5", messages=msgs).input_tokens)
"""


def test_claude_code_environment(gateway: GatewayServer) -> None:
    code = example("claude-code", gateway.url)
    exports = dict(re.findall(r"^export (\w+)=(\S+)", code, re.M))
    assert code.strip().splitlines()[-1] == "claude"
    assert set(exports) == {"ANTHROPIC_BASE_URL", "ANTHROPIC_AUTH_TOKEN"}
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")} | exports
    pool, text, tokens = run_python(CLAUDE_CODE_PROBE, env).splitlines()
    assert pool == POOL and text in POOL_ROUTES.values() and int(tokens) > 0
    # The token really is checked: the same call without it is refused.
    env.pop("ANTHROPIC_AUTH_TOKEN")
    res = subprocess.run([sys.executable, "-c", CLAUDE_CODE_PROBE], capture_output=True, text=True, env=env)
    assert res.returncode != 0


def test_deepseek_harness_route(gateway: GatewayServer) -> None:
    rows = yaml.safe_load(example("deepseek-harness", gateway.url))
    row = next(r for r in rows if r["id"] == "llm-pi-ai")
    route = row["config"]["providers"]["modelpool"]
    assert route["api"] == "openai-completions" and route["baseUrl"] == gateway.url + "/v1"
    env = {route["apiKeyEnv"]: KEY}  # the variable the snippet names, holding the modelpool key
    client = openai.OpenAI(base_url=route["baseUrl"], api_key=env[route["apiKeyEnv"]], max_retries=0)
    pools = {m.id for m in client.models.list()}
    for entry in route["models"]:
        assert entry["id"] in pools
        stream = client.chat.completions.create(
            model=entry["id"], stream=True, messages=[{"role": "user", "content": "Hello"}]
        )
        text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
        assert text.strip()


def test_curl(gateway: GatewayServer) -> None:
    reply = json.loads(run_shell(example("curl-chat", gateway.url)))
    assert reply["choices"][0]["message"]["content"] in POOL_ROUTES.values()
    lines = [line for line in run_shell(example("curl-stream", gateway.url)).splitlines() if line]
    assert lines[-1] == "data: [DONE]" and len(lines) > 2
    message = json.loads(run_shell(example("curl-messages", gateway.url)))
    assert message["type"] == "message" and message["content"][0]["text"] in POOL_ROUTES.values()


def _start_redis(workdir: Path) -> tuple[subprocess.Popen[bytes], str]:
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.fail("redis-server is not installed (.ci/run installs it with apt-get)")
    port = free_port()
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--dir", str(workdir)],
        stdout=subprocess.DEVNULL,
    )
    return proc, f"redis://127.0.0.1:{port}/0"


def _wait_ready(url: str, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 40
    while True:
        try:
            if httpx.get(url + "/readyz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"serve did not come up: {proc.communicate()[1][-2000:]}")
        time.sleep(0.2)


def test_behind_a_load_balancer_with_redis(tmp_path: Path) -> None:
    cfg_text = example("lb-config", DOC_URL)
    command = shlex.split(example("lb-serve", DOC_URL))
    assert command[:2] == ["modelpool", "serve"] and "--workers" in command
    redis, redis_url = _start_redis(tmp_path)
    hosts: list[tuple[str, subprocess.Popen[str]]] = []
    env = os.environ | {"MODELPOOL_CLIENT_KEY": KEY, "MODELPOOL_ADMIN_TOKEN": ADMIN_TOKEN}
    try:
        with FleetThread(fleet_spec()) as ft:
            for name in ("host-a", "host-b"):
                cfg = yaml.safe_load(cfg_text)
                assert cfg["state"]["backend"] == "redis"
                port = free_port()
                # Loopback stand-ins for the hosts' addresses, Redis and providers; the rest as written.
                cfg["server"] |= {"host": "127.0.0.1", "port": port}
                cfg["state"]["redis_url"] = redis_url
                cfg["providers"] = ft.to_config()["providers"]
                cfg["holidays"] = {"source": "bundled"}
                path = tmp_path / f"{name}.yaml"
                path.write_text(yaml.safe_dump(cfg))
                args = [str(path) if a == "modelpool.yaml" else a for a in command[1:]]
                proc = subprocess.Popen(
                    [sys.executable, "-m", "modelpool", *args], env=env, stderr=subprocess.PIPE, text=True
                )
                hosts.append((f"http://127.0.0.1:{port}", proc))
            for url, proc in hosts:
                _wait_ready(url, proc)
            # The balancer: round-robin over the hosts.
            for i in range(6):
                url = hosts[i % 2][0]
                client = openai.OpenAI(base_url=url + "/v1", api_key=KEY, max_retries=0)
                reply = client.chat.completions.create(
                    model=POOL, messages=[{"role": "user", "content": f"hello {i}"}]
                )
                assert reply.choices[0].message.content in POOL_ROUTES.values()
            for url, _ in hosts:
                res = subprocess.run(
                    [sys.executable, "-m", "modelpool", "status", "--json", "--url", url],
                    capture_output=True,
                    text=True,
                    env=env,
                    timeout=30,
                )
                state = json.loads(res.stdout)["state"]
                assert state["backend"] == "redis" and state["healthy"] is True
    finally:
        for _, proc in hosts:
            proc.terminate()
            proc.communicate(timeout=20)
        redis.terminate()
        redis.wait(10)


def test_tracing_config_sends_spans_to_a_collector() -> None:
    from otlp_receiver import OtlpReceiver

    with OtlpReceiver() as rx, FleetThread(fleet_spec()) as ft:
        # The documented collector address becomes the loopback receiver's; the rest as written.
        text = example("tracing-config", DOC_URL).replace("http://127.0.0.1:4318", rx.endpoint)
        cfg = ft.to_config(state={"backend": "memory"}, holidays={"source": "bundled"})
        cfg["tracing"] = yaml.safe_load(text)["tracing"]
        with GatewayServer(cfg) as gw:
            client = openai.OpenAI(base_url=gw.url + "/v1", api_key="unused", max_retries=0)
            reply = client.chat.completions.create(model=POOL, messages=[{"role": "user", "content": "hi"}])
            assert reply.choices[0].message.content in POOL_ROUTES.values()
        spans = rx.wait_spans(2)
    names = {s["name"] for s in spans}
    assert f"chat {POOL}" in names
    assert {s["resource"]["service.name"] for s in spans} == {"modelpool"}
