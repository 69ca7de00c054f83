"""The consent gate (SPEC §3.5): ask before the first switch of a walk; fail-open.

A question is raised only when someone can answer it — a live `/admin/events` watcher (the dashboard or
a script). Approval, any non-refusal answer or silence until `confirm_timeout` proceed; *Keep* or a typed
refusal ends the call with the original error. One question per walk.
"""

from __future__ import annotations

import asyncio
import itertools
import re
import time
from dataclasses import dataclass, field
from typing import Any

from modelpool.events import EventBus

REFUSAL = re.compile(
    r"^\s*(?:keep|不|否|取消|拒绝|保持.*|no|nope|cancel|stop|don'?t|do not)\b", re.IGNORECASE
)
MAX_PENDING = 200


@dataclass(slots=True)
class Question:
    id: str
    pool: str
    session: str | None
    from_route: str
    to_route: str
    kind: str
    message: str
    created: float
    expires: float
    answer: str | None = None
    outcome: str | None = None  # "switch" | "keep" | "timeout" | "unattended" (the last watcher left)
    future: asyncio.Future[bool] | None = field(default=None, repr=False)

    def public(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "pool": self.pool,
            "session": self.session,
            "from": self.from_route,
            "to": self.to_route,
            "kind": self.kind,
            "message": self.message,
            "created": self.created,
            "expires": self.expires,
            "remaining": max(0.0, round(self.expires - time.time(), 1)),
            "answer": self.answer,
            "outcome": self.outcome,
        }


def is_refusal(answer: str) -> bool:
    return bool(REFUSAL.match(answer))


class QuestionBoard:
    def __init__(self, events: EventBus) -> None:
        self._events = events
        self._questions: dict[str, Question] = {}
        self._ids = itertools.count(1)
        self.id_suffix = ""  # shared state: the replica's id, so a question's id is unique in the fleet
        events.on_unwatched(self._unattended)

    async def ask(
        self,
        pool: str,
        session: str | None,
        from_route: str,
        to_route: str,
        kind: str,
        message: str,
        timeout: float,
    ) -> bool:
        """True: go on and switch. Never raises: any problem means proceed (fail-open)."""
        if self._events.watchers == 0:
            return True  # nobody to answer: an unattended gateway must not stall
        try:
            return await self._ask(pool, session, from_route, to_route, kind, message, timeout)
        except asyncio.CancelledError:
            raise
        except Exception:
            return True

    async def _ask(
        self,
        pool: str,
        session: str | None,
        from_route: str,
        to_route: str,
        kind: str,
        message: str,
        timeout: float,
    ) -> bool:
        now = time.time()
        q = Question(
            id=f"q{next(self._ids)}{self.id_suffix}",
            pool=pool,
            session=session,
            from_route=from_route,
            to_route=to_route,
            kind=kind,
            message=message,
            created=now,
            expires=now + timeout,
            future=asyncio.get_running_loop().create_future(),
        )
        self._remember(q)
        self._events.publish("question", question=q.public())
        try:
            assert q.future is not None
            proceed = await asyncio.wait_for(asyncio.shield(q.future), timeout)
        except TimeoutError:
            q.outcome = "timeout"
            proceed = True
        self._events.publish("question-closed", question=q.public())
        return proceed

    def answer(self, qid: str, answer: str) -> Question:
        q = self._questions[qid]  # KeyError → 404 at the API
        if q.outcome is not None:
            return q
        q.answer = answer
        keep = is_refusal(answer)
        q.outcome = "keep" if keep else "switch"
        if q.future is not None and not q.future.done():
            q.future.set_result(not keep)
        return q

    def _unattended(self) -> None:
        """The last watcher hung up: nobody can answer any more, so every open question proceeds now."""
        for q in self.pending():
            q.outcome = "unattended"
            if q.future is not None and not q.future.done():
                q.future.set_result(True)

    def pending(self) -> list[Question]:
        return [q for q in self._questions.values() if q.outcome is None]

    def all(self) -> list[Question]:
        return list(self._questions.values())

    def _remember(self, q: Question) -> None:
        self._questions[q.id] = q
        while len(self._questions) > MAX_PENDING:
            self._questions.pop(next(iter(self._questions)))
