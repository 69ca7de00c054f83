"""Failure classification (SPEC §5): the precedence table, English and Chinese, and Retry-After."""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import format_datetime

import pytest

from modelpool.health.classify import (
    MAX_RETRY_AFTER,
    FailureKind,
    classify,
    counts_against_route,
    error_text,
    parse_retry_after,
    retryable,
)

K = FailureKind

TABLE: list[tuple[int | None, object, FailureKind]] = [
    # quota: words first, whatever the status
    (429, "insufficient balance", K.QUOTA),
    (None, "429 insufficient balance", K.QUOTA),
    (429, "Insufficient Balance", K.QUOTA),
    (402, "", K.QUOTA),
    (402, None, K.QUOTA),
    (None, "402 Payment Required", K.QUOTA),
    (429, "You exceeded your current quota, please check your plan and billing details.", K.QUOTA),
    (429, '{"error":{"code":"insufficient_quota","type":"insufficient_quota"}}', K.QUOTA),
    (400, "Your credit balance is too low to access the Anthropic API.", K.QUOTA),
    (403, "You are out of credits. Please top up.", K.QUOTA),
    (None, "quota exceeded for this month", K.QUOTA),
    (429, "余额不足", K.QUOTA),
    (403, "账户余额不足，请充值", K.QUOTA),
    (None, "该令牌额度已用尽", K.QUOTA),
    (None, "账户已欠费", K.QUOTA),
    (None, {"error": {"message": "余额不足"}}, K.QUOTA),
    (None, b'{"error":{"message":"\\u4f59\\u989d\\u4e0d\\u8db3"}}', K.QUOTA),
    # auth: before a bare 429
    (429, "invalid api key", K.AUTH),
    (None, "429 invalid api key", K.AUTH),
    (401, "", K.AUTH),
    (403, "Forbidden", K.AUTH),
    (None, "401 Unauthorized", K.AUTH),
    (400, "Incorrect API key provided: sk-****", K.AUTH),
    (400, "API key not valid. Please pass a valid API key.", K.AUTH),
    (None, '{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}', K.AUTH),
    (None, "无效的令牌", K.AUTH),
    (None, "鉴权失败", K.AUTH),
    # unsupported: a refusal of the request's shape by this route
    (400, "does not support reasoning effort high", K.UNSUPPORTED),
    (400, "provider X model Y does not support reasoning effort high", K.UNSUPPORTED),
    (400, "Unsupported parameter: 'reasoning_effort' is not supported with this model.", K.UNSUPPORTED),
    (400, "unsupported model", K.UNSUPPORTED),
    (404, '{"error":{"code":"model_not_found","message":"The model `x` does not exist"}}', K.UNSUPPORTED),
    (404, "The model `gpt-9` does not exist or you do not have access to it.", K.UNSUPPORTED),
    (None, "该模型不支持图片输入", K.UNSUPPORTED),
    (None, "当前分组 default 下对于模型 x 无可用渠道", K.UNSUPPORTED),
    # rate-limit
    (429, "", K.RATE_LIMIT),
    (429, "Too Many Requests", K.RATE_LIMIT),
    (None, "429 Too Many Requests", K.RATE_LIMIT),
    (None, "Rate limit reached for requests", K.RATE_LIMIT),
    (None, "请求过于频繁，请稍后再试", K.RATE_LIMIT),
    (None, "触发限流", K.RATE_LIMIT),
    # server
    (500, "", K.SERVER),
    (503, "", K.SERVER),
    (502, "<html>Bad Gateway</html>", K.SERVER),
    (529, "Overloaded", K.SERVER),
    (None, '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}', K.SERVER),
    (None, "HTTP 503 Service Unavailable", K.SERVER),
    (None, "当前分组上游负载已饱和，请稍后再试", K.SERVER),
    # network
    (None, "connect timeout", K.NETWORK),
    (None, "Connection reset by peer", K.NETWORK),
    (None, "ECONNREFUSED 127.0.0.1:9", K.NETWORK),
    (None, "stream ended without terminator", K.NETWORK),
    (None, "请求超时", K.NETWORK),
    (408, "", K.NETWORK),
    # request: the client's own fault
    (400, "messages: field required", K.REQUEST),
    (400, "This model's maximum context length is 128000 tokens.", K.REQUEST),
    # llama-server's own words, also when they arrive without a status (an in-stream error)
    (
        None,
        "request (3031 tokens) exceeds the available context size (2048 tokens), try increasing it",
        K.REQUEST,
    ),
    (404, "Not Found", K.UNCLASSIFIED),  # a wrong base_url: the route rests
    (413, "Request Entity Too Large", K.REQUEST),
    (422, "Unprocessable Entity", K.REQUEST),
    # nothing recognisable
    (None, "", K.UNCLASSIFIED),
    (None, None, K.UNCLASSIFIED),
    (418, "I'm a teapot", K.UNCLASSIFIED),
    (None, "runtime output mismatch", K.UNCLASSIFIED),
    (None, "error at step 500 tokens", K.UNCLASSIFIED),
]


@pytest.mark.parametrize(("status", "message", "expected"), TABLE)
def test_classification_table(status: int | None, message: object, expected: FailureKind) -> None:
    assert classify(status, message) is expected


def test_network_flag_marks_transport_failures() -> None:
    assert classify(None, "ClientOSError: [Errno 104]", network=True) is K.NETWORK
    assert classify(None, None, network=True) is K.NETWORK


def test_quota_words_beat_the_network_flag() -> None:
    # The words decide before the transport: a balance message is a balance message.
    assert classify(None, "余额不足", network=True) is K.QUOTA


def test_kinds_are_string_enum_values() -> None:
    assert K.RATE_LIMIT == "rate-limit"
    assert FailureKind("quota") is K.QUOTA
    assert {k.value for k in K} == {
        "quota",
        "auth",
        "unsupported",
        "rate-limit",
        "server",
        "network",
        "request",
        "cancelled",
        "unclassified",
    }


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        (K.QUOTA, False),
        (K.UNSUPPORTED, False),
        (K.REQUEST, False),
        (K.CANCELLED, False),
        (K.AUTH, True),
        (K.RATE_LIMIT, True),
        (K.SERVER, True),
        (K.NETWORK, True),
        (K.UNCLASSIFIED, True),
        ("rate-limit", True),
    ],
)
def test_retryable(kind: FailureKind, expected: bool) -> None:
    assert retryable(kind) is expected


def test_request_and_cancelled_are_not_route_failures() -> None:
    assert not counts_against_route(K.REQUEST)
    assert not counts_against_route(K.CANCELLED)
    assert all(counts_against_route(k) for k in K if k not in (K.REQUEST, K.CANCELLED))


class _Payload:
    def __init__(self) -> None:
        self.message = "余额不足"
        self.code = 402


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        ({"error": {"message": "余额不足"}}, '{"error":{"message":"余额不足"}}'),
        ([1, {2: "x"}], '[1,{"2":"x"}]'),
        (_Payload(), '{"message":"余额不足","code":402}'),
        (b"\xffquota exceeded", "\ufffdquota exceeded"),
        (ValueError({"detail": "x"}), 'ValueError: {"detail":"x"}'),
        (None, ""),
    ],
)
def test_error_text_serialises_objects(payload: object, expected: str) -> None:
    text = error_text(payload)
    assert text == expected
    assert "[object" not in text and "object at 0x" not in text


def test_error_text_unescapes_json_escapes() -> None:
    assert "余额不足" in error_text('{"message": "\\u4f59\\u989d\\u4e0d\\u8db3"}')
    assert error_text("plain \\u text") == "plain \\u text"


NOW = 1_750_000_000.0


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("5", 5.0),
        (" 2.5 ", 2.5),
        ("0", 0.0),
        (7, 7.0),
        ("-3", None),
        ("nan", None),
        ("soon", None),
        ("", None),
        (None, None),
        ("999999999", MAX_RETRY_AFTER),
    ],
)
def test_parse_retry_after_seconds(value: str | None, expected: float | None) -> None:
    assert parse_retry_after(value, NOW) == expected


def test_parse_retry_after_http_date() -> None:
    future = datetime.fromtimestamp(NOW + 120, UTC)
    assert parse_retry_after(format_datetime(future, usegmt=True), NOW) == pytest.approx(120.0)
    past = datetime.fromtimestamp(NOW - 60, UTC)
    assert parse_retry_after(format_datetime(past, usegmt=True), NOW) == 0.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", NOW) == 0.0
