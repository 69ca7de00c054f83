"""Fixtures of the aggregator tests: saved real-shape answers, a hand-driven clock."""

from __future__ import annotations

from typing import Any

import pytest
from agg_fixtures import FakeClock, load_json


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def fixture_a() -> Any:
    return load_json("vercel_fixture_a.json")


@pytest.fixture
def vercel_22() -> Any:
    return load_json("vercel_22_providers.json")
