"""Which relay serves a call: byte-faithful for an OpenAI client meeting only OpenAI-compatible routes,
translating for every other pairing (one coherent client stream even when the walk changes dialect)."""

from __future__ import annotations

from modelpool.routing.call import Call, Plan
from modelpool.upstream.client import UpstreamClient
from modelpool.walk.openai_relay import Emit, OpenAIOnceRelay, OpenAIStreamRelay, Order, Start
from modelpool.walk.translate_relay import TranslatingOnceRelay, TranslatingStreamRelay
from modelpool.walk.walker import WalkState

OnceRelay = OpenAIOnceRelay | TranslatingOnceRelay
StreamRelay = OpenAIStreamRelay | TranslatingStreamRelay


def byte_faithful(call: Call, plan: Plan) -> bool:
    return call.ingress == "openai" and not any(c.endpoint.speaks_anthropic for c in plan.candidates)


def once_relay(call: Call, plan: Plan, client: UpstreamClient, order: Order | None) -> OnceRelay:
    if byte_faithful(call, plan):
        return OpenAIOnceRelay(call, client, order)
    return TranslatingOnceRelay(call, client, order)


def stream_relay(
    call: Call,
    plan: Plan,
    client: UpstreamClient,
    state: WalkState,
    start: Start,
    emit: Emit,
    order: Order | None,
) -> StreamRelay:
    if byte_faithful(call, plan):
        return OpenAIStreamRelay(call, client, state, start, emit, order)
    return TranslatingStreamRelay(call, client, state, start, emit, order, call.est_tokens)
