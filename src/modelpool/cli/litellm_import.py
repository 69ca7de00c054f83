"""`modelpool config import-litellm`: a LiteLLM proxy `config.yaml` as a modelpool config.

LiteLLM's unit is the *deployment* (a `model_list` entry: public `model_name` + `litellm_params`); several
deployments sharing a `model_name` are one load-balanced group. modelpool's units are the provider (one
endpoint + key) and the route (provider × model id); a pool is what clients name. So deployments are
grouped into providers by (kind, endpoint, key), each `model_name` becomes a pool (`pool.groups` entry
listing its routes), and the router's settings map to the nearest `pool.*` keys. Everything that has no
counterpart is reported with its key path and the reason, never silently dropped. Secrets are copied as
references (`os.environ/VAR` → `api_key_env: VAR` / `${VAR}`); a literal key is copied (it was already in
the user's file) but never printed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from modelpool.cli.litellm_tables import (
    ENV_PREFIX,
    FALLBACK_HOW,
    FALLBACK_KEYS,
    FOREIGN_APIS,
    GENERIC_REASON,
    INFO_KEYS,
    NON_CHAT_MODES,
    PARAM_KEYS,
    PARAM_REASON,
    PREFIXES,
    ROUTER_KEYS,
    STRATEGIES,
    UNMAPPED_REASONS,
    Prefix,
    fallback_pairs,
    model_info,
    split_model,
)


@dataclass
class Finding:
    key: str  # the LiteLLM key path, e.g. `router_settings.allowed_fails`
    text: str  # why it was not mapped, or how it was approximated


@dataclass
class ImportResult:
    config: dict[str, Any]
    unmapped: list[Finding] = field(default_factory=list)
    approximated: list[Finding] = field(default_factory=list)
    env_vars: list[str] = field(default_factory=list)  # variables the produced config reads

    def report(self) -> dict[str, Any]:
        return {
            "unmapped": [{"key": f.key, "reason": f.text} for f in self.unmapped],
            "approximated": [{"key": f.key, "how": f.text} for f in self.approximated],
            "env_vars": self.env_vars,
        }


def import_litellm(data: Mapping[str, Any]) -> ImportResult:
    return _Converter().run(data)


@dataclass
class _Provider:
    entry: dict[str, Any]
    discover: bool = False  # a wildcard deployment: the provider's model list decides
    order: int | None = None
    weight: float | None = None
    cost: float | None = None


class _Converter:
    def __init__(self) -> None:
        self.providers: dict[tuple[Any, ...], _Provider] = {}
        self.pools: dict[str, list[str]] = {}  # model_name → route keys
        self.result = ImportResult(config={})
        self.pool_cfg: dict[str, Any] = {}
        self.metric: str | None = None  # weight | rpm | tpm: what simple-shuffle would draw by

    # ---- entry point ---------------------------------------------------------------------------------

    def run(self, data: Mapping[str, Any]) -> ImportResult:
        router = _section(data, "router_settings")
        settings = _section(data, "litellm_settings")
        general = _section(data, "general_settings")
        deployments = data.get("model_list") or []
        if router.get("routing_strategy", "simple-shuffle") == "simple-shuffle":
            # LiteLLM's shuffle draws by the first of these any deployment sets; elsewhere they are limits.
            self.metric = next(
                (m for m in ("weight", "rpm", "tpm") if any(_params(d).get(m) for d in deployments)), None
            )
        for i, entry in enumerate(deployments):
            self._deployment(i, entry)
        cfg = self.result.config
        cfg["providers"] = [self._finish_provider(p) for p in self.providers.values()]
        self._pools()
        self._strategy(router.get("routing_strategy"))
        self._router(router, settings)
        self._fallbacks(router, settings)
        self._general(general)
        self._redis(router)
        groups = self.pool_cfg.pop("groups")
        cfg["pool"] = {**self.pool_cfg, "groups": groups}  # the long list last, for the reader
        self._leftovers(data, router, settings, general)
        self.result.env_vars = sorted(set(self.result.env_vars))
        return self.result

    # ---- findings and values ---------------------------------------------------------------------------

    def unmapped(self, key: str, reason: str) -> None:
        self.result.unmapped.append(Finding(key, reason))

    def approx(self, key: str, how: str) -> None:
        self.result.approximated.append(Finding(key, how))

    def value(self, v: Any) -> Any:
        """`os.environ/VAR` (LiteLLM's env reference) → `${VAR}` (modelpool's)."""
        if isinstance(v, str) and v.startswith(ENV_PREFIX):
            var = v[len(ENV_PREFIX) :]
            self.result.env_vars.append(var)
            return f"${{{var}}}"
        return v

    # ---- model_list ----------------------------------------------------------------------------------

    def _deployment(self, i: int, entry: Any) -> None:
        where = f"model_list[{i}]"
        params = _params(entry)
        name = entry.get("model_name") if isinstance(entry, dict) else None
        if not isinstance(name, str) or not isinstance(params.get("model"), str):
            self.unmapped(where, "needs `model_name` and `litellm_params.model`")
            return
        info = entry.get("model_info") if isinstance(entry.get("model_info"), dict) else {}
        if info.get("mode") in NON_CHAT_MODES:
            self.unmapped(where, f"{name}: mode {info['mode']} is not chat; modelpool routes chat models")
            return
        prefix, model_id = split_model(params["model"], params.get("custom_llm_provider"))
        pfx = self._prefix(where, name, prefix, params)
        if pfx is None:
            return
        base = self._base_url(where, prefix, pfx, params)
        if base is None:
            return
        provider = self._provider(pfx, base, params, where)
        if "*" in model_id:
            provider.discover = True
            self.approx(where, f"{name}: wildcard → provider {provider.entry['id']} discovers its models")
        else:
            self._add_route(name, provider, model_id, info, where)
        self._deployment_hints(provider, params, where)
        for key in sorted(params.keys() - PARAM_KEYS):
            if key in ("rpm", "tpm") and self.metric == key:
                continue  # used as the shuffle weight
            self.unmapped(f"{where}.litellm_params.{key}", UNMAPPED_REASONS.get(key, PARAM_REASON))
        for key in sorted(info.keys() - INFO_KEYS):
            self.unmapped(f"{where}.model_info.{key}", GENERIC_REASON)
        for key in sorted(entry.keys() - {"model_name", "litellm_params", "model_info"}):
            self.unmapped(f"{where}.{key}", UNMAPPED_REASONS.get(key, GENERIC_REASON))

    def _prefix(self, where: str, name: str, prefix: str | None, params: dict[str, Any]) -> Prefix | None:
        if prefix in FOREIGN_APIS:
            self.unmapped(where, f"{name}: {prefix}/ — {FOREIGN_APIS[prefix]}")
            return None
        if prefix is None:
            if params.get("api_base"):  # LiteLLM would call it as OpenAI-compatible
                return PREFIXES["openai_like"]
            self.unmapped(where, f"{name}: cannot tell the provider of {params['model']!r}")
            return None
        pfx = PREFIXES.get(prefix)
        if pfx is None:
            self.unmapped(
                where, f"{name}: unknown provider {prefix}/ (OpenAI-compatible? use openai/ + api_base)"
            )
        return pfx

    def _base_url(self, where: str, prefix: str | None, pfx: Prefix, params: dict[str, Any]) -> str | None:
        given = self.value(params.get("api_base") or params.get("base_url"))
        if prefix == "azure":
            if params.get("api_version"):
                self.approx(f"{where}.litellm_params.api_version", "dropped: Azure's v1 API takes none")
            self.approx(where, "azure/ → {api_base}/openai/v1, Azure OpenAI's OpenAI-compatible v1 API")
            if not given:
                self.result.env_vars.append("AZURE_API_BASE")
            return f"{str(given or '${AZURE_API_BASE}').rstrip('/')}/openai/v1"
        if not given and pfx.base_url is None:
            self.unmapped(where, f"{params['model']}: needs `api_base` (no default endpoint)")
            return None
        return str(given or pfx.base_url)

    def _provider(self, pfx: Prefix, base: str, params: dict[str, Any], where: str) -> _Provider:
        key = params.get("api_key")
        auth: dict[str, str] = {}
        if isinstance(key, str) and key.startswith(ENV_PREFIX):
            auth["api_key_env"] = key[len(ENV_PREFIX) :]
            self.result.env_vars.append(auth["api_key_env"])
        elif isinstance(key, str) and key:
            auth["api_key"] = key
            self.approx(f"{where}.litellm_params.api_key", "a literal key was copied; prefer os.environ/VAR")
        elif pfx.key_env and pfx.base_url in (None, base):
            auth["api_key_env"] = pfx.key_env  # LiteLLM reads the provider's usual variable
            self.result.env_vars.append(pfx.key_env)
        extra = params.get("extra_headers")
        headers: dict[str, Any] = extra if isinstance(extra, dict) else {}
        ident = (pfx.kind, base, tuple(sorted(auth.items())), tuple(sorted(headers.items())))
        if ident not in self.providers:
            entry: dict[str, Any] = {"id": self._provider_id(pfx.provider_id), "kind": pfx.kind}
            if pfx.name and pfx.base_url in (None, base):  # `openai/` on a custom api_base is not OpenAI
                entry["name"] = pfx.name
            entry |= {"base_url": base, **auth, "models": []}
            if headers:
                entry["headers"] = {str(k): str(self.value(v)) for k, v in headers.items()}
            self.providers[ident] = _Provider(entry)
        return self.providers[ident]

    def _provider_id(self, base_id: str) -> str:
        taken = {p.entry["id"] for p in self.providers.values()}
        n, candidate = 1, base_id
        while candidate in taken:
            n += 1
            candidate = f"{base_id}-{n}"
        return candidate

    def _add_route(
        self, name: str, provider: _Provider, model_id: str, info: dict[str, Any], where: str
    ) -> None:
        models = provider.entry["models"]
        if model_id not in models:
            models.append(model_id)
        declared = model_info(info)
        if declared:
            provider.entry.setdefault("model_info", {})[model_id] = declared
        route = f"{provider.entry['id']}/{model_id}"
        routes = self.pools.setdefault(name, [])
        if route in routes:
            self.approx(where, f"{name}: {route} is listed twice; one route serves both")
        else:
            routes.append(route)

    def _deployment_hints(self, provider: _Provider, params: dict[str, Any], where: str) -> None:
        order = params.get("order")
        if isinstance(order, int):
            provider.order = order if provider.order is None else min(provider.order, order)
        weight = params.get(self.metric) if self.metric else None
        if isinstance(weight, int | float) and not isinstance(weight, bool):
            if provider.weight is not None and provider.weight != weight:
                self.approx(where, f"{self.metric}: one weight per provider in modelpool; the larger is kept")
            provider.weight = max(float(weight), provider.weight or 0.0)
        costs = [params.get(k) for k in ("input_cost_per_token", "output_cost_per_token")]
        if any(isinstance(c, int | float) for c in costs):
            # One number per provider: dollars per million tokens, input + output.
            provider.cost = sum(float(c) for c in costs if isinstance(c, int | float)) * 1e6

    def _finish_provider(self, p: _Provider) -> dict[str, Any]:
        entry = dict(p.entry)
        if p.discover:
            entry.pop("models")
        if p.weight is not None and self.metric:
            entry["weight"] = p.weight
        if p.cost is not None:
            entry["cost"] = round(p.cost, 6)
        return entry

    # ---- pools and router ----------------------------------------------------------------------------

    def _pools(self) -> None:
        owner: dict[str, str] = {}
        groups: list[dict[str, Any]] = []
        aliases: dict[str, str] = {}
        for name, routes in self.pools.items():
            fresh = [r for r in routes if r not in owner]
            if not fresh:
                aliases[name] = owner[routes[0]]
                self.approx(f"model_name {name}", f"its routes are pool {aliases[name]}'s: an alias of it")
                continue
            if len(fresh) < len(routes):
                shared = ", ".join(r for r in routes if r in owner)
                self.approx(f"model_name {name}", f"{shared} stay in their first pool (one pool per route)")
            groups.append({"id": name, "name": name, "models": fresh})
            owner.update(dict.fromkeys(fresh, name))
        self.pool_cfg["groups"] = groups
        if aliases:
            self.result.config["aliases"] = aliases

    def _strategy(self, strategy: Any) -> None:
        with_order = [p for p in self.providers.values() if p.order is not None]
        ordered = sorted(with_order, key=lambda p: p.order or 0)
        name = strategy or "simple-shuffle"
        if ordered:
            self.pool_cfg["provider_order"] = [p.entry["id"] for p in ordered]
        if ordered and name == "simple-shuffle":
            self.pool_cfg["strategy"] = "priority"
            self.approx("model_list[].litellm_params.order", "strategy priority over pool.provider_order")
            return
        if name not in STRATEGIES:
            self.unmapped("router_settings.routing_strategy", f"{name}: no modelpool counterpart")
            return
        if name == "simple-shuffle":
            self.approx(
                "pool.sticky",
                "modelpool keeps a conversation on its route (prompt caches stay warm); "
                "pool.sticky: false spreads every call like LiteLLM",
            )
        self.pool_cfg["strategy"], how = STRATEGIES[name]
        self.approx("router_settings.routing_strategy", f"{name} → {self.pool_cfg['strategy']}: {how}")
        if ordered:
            self.approx("model_list[].litellm_params.order", "pool.provider_order, a tie-break here")

    def _router(self, router: dict[str, Any], settings: dict[str, Any]) -> None:
        where = "router_settings" if "num_retries" in router else "litellm_settings"
        retries = router.get("num_retries", settings.get("num_retries"))
        if isinstance(retries, int):
            self.pool_cfg["retries_per_route"] = max(0, min(5, retries))
            self.approx(f"{where}.num_retries", "pool.retries_per_route (0–5): retries before switching")
        timeouts: dict[str, Any] = {}
        where = "router_settings.timeout" if "timeout" in router else "litellm_settings.request_timeout"
        timeout = router.get("timeout", settings.get("request_timeout"))
        if isinstance(timeout, int | float):
            timeouts["response"] = timeout
            self.approx(where, "timeouts.response (a whole non-streamed answer; streams: first_byte/idle)")
        if isinstance(router.get("stream_timeout"), int | float):
            timeouts["first_byte"] = router["stream_timeout"]
        if timeouts:
            self.result.config["timeouts"] = timeouts
        if isinstance(router.get("cooldown_time"), int | float):
            self.pool_cfg["cooldown"] = router["cooldown_time"]
            self.approx("router_settings.cooldown_time", "pool.cooldown, doubled per repeated failure")
        if isinstance(router.get("retry_after"), int | float):
            self.pool_cfg["retry_backoff"] = router["retry_after"]
            self.approx("router_settings.retry_after", "pool.retry_backoff: the nth retry waits n× this")
        alias = router.get("model_group_alias")
        if isinstance(alias, dict):
            for k, v in alias.items():
                target = v.get("model") if isinstance(v, dict) else v
                if isinstance(target, str):
                    self.result.config.setdefault("aliases", {})[str(k)] = target

    def _fallbacks(self, router: dict[str, Any], settings: dict[str, Any]) -> None:
        from modelpool.catalog.normalize import family

        pairs: list[tuple[str, str]] = []
        for key in FALLBACK_KEYS:
            for section, where in ((router, "router_settings"), (settings, "litellm_settings")):
                for src, dst in fallback_pairs(section.get(key), key):
                    pairs.append((src, dst))
                if section.get(key):
                    self.approx(f"{where}.{key}", FALLBACK_HOW[key])
        if not pairs:
            return
        same = all(src == "*" or family(src) == family(dst) for src, dst in pairs)
        self.pool_cfg["model_fallback"] = "same-family" if same else "any"

    def _general(self, general: dict[str, Any]) -> None:
        master = general.get("master_key")
        if isinstance(master, str) and master:
            self.result.config["server"] = {"api_keys": [self.value(master)]}
            self.approx(
                "general_settings.master_key", "server.api_keys (clients); the admin token is separate"
            )

    def _redis(self, router: dict[str, Any]) -> None:
        url = self.value(router.get("redis_url"))
        if not url and router.get("redis_host"):
            password = self.value(router.get("redis_password"))
            auth = f":{password}@" if password else ""
            host, port = self.value(router["redis_host"]), self.value(router.get("redis_port") or 6379)
            url = f"redis://{auth}{host}:{port}/0"
        if url:
            self.result.config["state"] = {"backend": "redis", "redis_url": url}
            self.approx(
                "router_settings.redis_*", "state.backend redis: workers share health, pins and rests"
            )

    def _leftovers(self, data: Mapping[str, Any], *sections: dict[str, Any]) -> None:
        router, settings, general = sections
        known_top = {"model_list", "router_settings", "litellm_settings", "general_settings"}
        for key in sorted(data.keys() - known_top):
            self.unmapped(key, UNMAPPED_REASONS.get(key, GENERIC_REASON))
        read = {
            "router_settings": (router, ROUTER_KEYS | set(FALLBACK_KEYS)),
            "litellm_settings": (settings, {*FALLBACK_KEYS, "num_retries", "request_timeout"}),
        }
        for where, (section, consumed) in read.items():
            for key in sorted(section.keys() - consumed):
                self.unmapped(f"{where}.{key}", UNMAPPED_REASONS.get(key, GENERIC_REASON))
        for key in sorted(general.keys() - {"master_key"}):
            self.unmapped(f"general_settings.{key}", UNMAPPED_REASONS.get(key, GENERIC_REASON))


def _section(data: Mapping[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def _params(entry: Any) -> dict[str, Any]:
    params = entry.get("litellm_params") if isinstance(entry, dict) else None
    return params if isinstance(params, dict) else {}
