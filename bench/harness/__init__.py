"""Shared pieces of the modelpool benchmarks (see bench/README.md).

`procs`  — child processes (simulated fleet, gateway, LiteLLM) with guaranteed teardown and CPU accounting;
`load`   — the aiohttp load generator (closed loop at concurrency N, open loop at a fixed rate);
`stats`  — percentiles, per-target summaries and gateway-minus-direct deltas;
`report` — machine description, human table, JSON and a RESULTS.md-ready markdown block.

`python bench/<script>.py` puts `bench/` on sys.path, so scripts import this as `harness`.
"""
