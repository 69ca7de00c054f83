"""Property: `next_flip` is the first instant the period changes, checked against a brute-force scan."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st
from periods_helpers import policy

POLICY = policy()
# Inside the published snapshot (2024–2026), leaving room for the lookahead past the last holiday.
instants = st.datetimes(min_value=datetime(2024, 1, 1), max_value=datetime(2026, 12, 20)).map(
    lambda naive: naive.replace(tzinfo=UTC)
)
# The default windows start and end on the hour, so half-hour steps from the hour cannot miss a change.
STEP = timedelta(minutes=30)


@settings(max_examples=60, deadline=None)
@given(instants)
def test_next_flip_is_the_first_change(at: datetime) -> None:
    current = POLICY.is_peak(at)
    flip = POLICY.next_flip(at)
    assert flip is not None and flip > at
    assert POLICY.is_peak(flip) != current
    assert POLICY.is_peak(flip - timedelta(microseconds=1)) == current
    probe = at.astimezone(POLICY.zone).replace(minute=30 if at.minute >= 30 else 0, second=0, microsecond=0)
    while probe < flip:
        if probe > at:
            assert POLICY.is_peak(probe) == current, (at, probe, flip)
        probe += STEP


@settings(max_examples=60, deadline=None)
@given(instants)
def test_a_flip_lands_on_a_window_edge_of_a_working_day(at: datetime) -> None:
    flip = POLICY.next_flip(at)
    assert flip is not None
    assert POLICY.is_working_day(flip.date())
    assert flip.strftime("%H:%M") in {"09:00", "12:00", "14:00", "18:00"}


@settings(max_examples=200, deadline=None)
@given(instants)
def test_the_fast_check_agrees_with_the_explained_period(at: datetime) -> None:
    # `is_peak` (the routing hot path) and `period_at` (with its reason) must never disagree.
    period = POLICY.period_at(at)
    assert POLICY.is_peak(at) == period.peak
    assert ("inside window" in period.reason) == period.peak
