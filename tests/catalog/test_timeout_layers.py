"""Time limits per route (SPEC §3.9): the layers resolve key by key, the README's example as documented."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from modelpool.catalog.model import Route
from modelpool.catalog.timeouts import resolve_timeouts
from modelpool.config import load_config
from modelpool.runtime import Runtime

README = Path(__file__).parents[2] / "README.md"


def readme_example() -> dict[str, object]:
    section = README.read_text().split("### Time limits per route", 1)[1]
    block = re.search(r"```yaml\n(.*?)\n```", section, re.S)
    assert block is not None
    data: dict[str, object] = yaml.safe_load(block.group(1))
    return data


def test_the_readme_example_resolves_key_by_key_with_its_layers() -> None:
    cfg = readme_example()
    providers = cfg["providers"]
    assert isinstance(providers, list)
    providers[0]["models"] = ["deepseek-reasoner", "deepseek-chat"]
    config = load_config({**cfg, "holidays": {"source": "bundled"}}).config
    p = config.providers[0]
    reasoner = resolve_timeouts(config, p, Route("deepseek", "deepseek-reasoner", "deepseek-reasoner"))
    assert (reasoner.connect, reasoner.first_byte, reasoner.idle, reasoner.response) == (10, 120, 60, 600)
    assert reasoner.layers == ("default", "model_info *-reasoner", "provider", "default")
    chat = resolve_timeouts(config, p, Route("deepseek", "deepseek-chat", "deepseek-chat"))
    assert (chat.first_byte, chat.idle) == (15, 60)
    assert chat.layers == ("default", "default", "provider", "default")


def test_every_matching_model_info_entry_counts_the_exact_id_most() -> None:
    config = load_config(
        {
            "timeouts": {"first_byte": "1s"},
            "providers": [
                {
                    "id": "p",
                    "base_url": "http://127.0.0.1:9",
                    "models": ["big-reasoner"],
                    "model_info": {
                        "*": {"timeouts": {"first_byte": "5s", "response": "30s"}},
                        "*-reasoner": {"timeouts": {"first_byte": "90s"}},
                        "big-reasoner": {"context_window": 1000, "timeouts": {"connect": "2s"}},
                    },
                }
            ],
            "holidays": {"source": "bundled"},
        }
    ).config
    t = resolve_timeouts(config, config.providers[0], Route("p", "big-reasoner", "big-reasoner"))
    # the first matching glob beats a later one; the exact id sets what it names
    assert (t.connect, t.first_byte, t.response) == (2, 5, 30)
    assert t.layers[:2] == ("model_info big-reasoner", "model_info *")


def test_a_runtime_resolves_each_route_once() -> None:
    config = load_config(
        {
            "providers": [
                {"id": "p", "base_url": "http://127.0.0.1:9", "models": ["m"], "timeouts": {"idle": 3}}
            ],
            "holidays": {"source": "bundled"},
        }
    ).config
    from modelpool.catalog.build import build_catalog

    rt = Runtime(config=config, catalog=build_catalog(config, {}), endpoints={})
    first = rt.route_timeouts()["p/m"]
    assert first is rt.route_timeouts()["p/m"]  # memoised with the snapshot, not rebuilt per call
    assert first.idle == 3 and first.layer("idle") == "provider"
