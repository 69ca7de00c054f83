"""Reading the upstreams' rate-limit headers (SPEC §3.8) and the quota book's verdicts, in-process."""

from __future__ import annotations

from datetime import UTC, datetime

from multidict import CIMultiDict

from modelpool.health.quota import QuotaBook
from modelpool.health.quota_headers import Quota, announces_quota, parse_reset, read_quota

NOW = 1_800_000_000.0


def test_openai_durations_of_every_shape() -> None:
    assert parse_reset("6m0s", NOW) == NOW + 360
    assert parse_reset("1s", NOW) == NOW + 1
    assert parse_reset("20ms", NOW) == NOW + 0.02
    assert parse_reset("1h2m3.5s", NOW) == NOW + 3723.5
    assert parse_reset("7", NOW) == NOW + 7
    assert parse_reset(str(NOW + 50), NOW) == NOW + 50  # a Unix time, as some upstreams send it
    assert (
        parse_reset("soon", NOW) is None and parse_reset("", NOW) is None and parse_reset("6x", NOW) is None
    )


def test_openai_headers_case_insensitive() -> None:
    headers = CIMultiDict(
        {
            "X-RateLimit-Remaining-Requests": "0",
            "X-RateLimit-Reset-Requests": "1.5s",
            "x-ratelimit-remaining-tokens": "900",
            "x-ratelimit-reset-tokens": "20ms",
        }
    )
    assert announces_quota(headers)
    q = read_quota(headers, NOW)
    assert q == Quota(requests=0, requests_reset=NOW + 1.5, tokens=900, tokens_reset=NOW + 0.02, at=NOW)


def test_anthropic_headers_take_the_tightest_token_budget() -> None:
    reset = datetime.fromtimestamp(NOW + 30, UTC).isoformat().replace("+00:00", "Z")
    headers = CIMultiDict(
        {
            "anthropic-ratelimit-requests-remaining": "4",
            "anthropic-ratelimit-requests-reset": reset,
            "anthropic-ratelimit-tokens-remaining": "5000",
            "anthropic-ratelimit-tokens-reset": reset,
            "anthropic-ratelimit-input-tokens-remaining": "1200",
            "anthropic-ratelimit-input-tokens-reset": reset,
            "anthropic-ratelimit-output-tokens-remaining": "8000",
        }
    )
    q = read_quota(headers, NOW)
    assert q is not None
    assert (q.requests, q.requests_reset, q.tokens, q.tokens_reset) == (4, NOW + 30, 1200, NOW + 30)


def test_retry_after_on_any_answer_means_no_request_until_then() -> None:
    q = read_quota(CIMultiDict({"Retry-After": "3"}), NOW)
    assert q is not None and q.requests == 0 and q.requests_reset == NOW + 3


def test_a_reply_without_the_headers_announces_nothing() -> None:
    headers = CIMultiDict({"content-type": "application/json", "x-request-id": "r1"})
    assert not announces_quota(headers)
    assert read_quota(headers, NOW) is None
    assert read_quota(CIMultiDict({"x-ratelimit-remaining-requests": "many"}), NOW) is None


def test_the_book_demotes_until_the_reset_and_takes_a_route_back_on_room() -> None:
    clock = [NOW]
    book = QuotaBook(lambda: (1, 10, True), clock=lambda: clock[0])
    book.update("a/m", Quota(requests=0, requests_reset=NOW + 5, at=NOW))
    assert book.why_low("a/m", NOW, lambda: 1) == (
        f"quota low: 0 requests left until {datetime.fromtimestamp(NOW + 5).strftime('%H:%M:%S')}"
    )
    assert book.why_low("a/m", NOW + 5.1, lambda: 1) is None  # its reset passed
    book.update("a/m", Quota(requests=3, requests_reset=NOW + 5, tokens=50, tokens_reset=NOW + 5, at=NOW))
    assert book.why_low("a/m", NOW, lambda: 30) is None  # 50 ≥ 30 + the reserve of 10
    why = book.why_low("a/m", NOW, lambda: 45)
    assert why is not None and why.startswith("quota low: 50 tokens left (call ~55) until ")
    assert book.why_low("b/m", NOW, lambda: 10**6) is None  # never announced anything


def test_attempts_between_two_replies_spend_the_announced_requests() -> None:
    book = QuotaBook(lambda: (1, 0, True), clock=lambda: NOW)
    book.update("a/m", Quota(requests=2, requests_reset=NOW + 5, at=NOW))
    book.spend("a/m")
    assert book.why_low("a/m", NOW, lambda: 1) is None  # one left
    book.spend("a/m")
    assert "a/m" in book.low and book.why_low("a/m", NOW, lambda: 1) is not None


def test_switched_off_the_book_demotes_nothing() -> None:
    book = QuotaBook(lambda: (1, 0, False), clock=lambda: NOW)
    book.update("a/m", Quota(requests=0, requests_reset=NOW + 5, at=NOW))
    assert book.why_low("a/m", NOW, lambda: 1) is None and not book.low


def test_a_shared_reading_older_than_the_local_one_is_ignored() -> None:
    shared: list[tuple[str, object, float]] = []
    book = QuotaBook(lambda: (1, 0, True), clock=lambda: NOW, share=lambda k, v, t: shared.append((k, v, t)))
    book.update("a/m", Quota(requests=0, requests_reset=NOW + 5, at=NOW))
    assert shared and shared[0][0] == "a/m" and shared[0][2] >= 5  # lives in redis until its reset
    book.apply_shared("a/m", Quota(requests=50, requests_reset=NOW + 5, at=NOW - 1).to_dict())
    assert "a/m" in book.low  # the older view from elsewhere does not revive it
    book.apply_shared("a/m", Quota(requests=50, requests_reset=NOW + 5, at=NOW + 1).to_dict())
    assert "a/m" not in book.low
