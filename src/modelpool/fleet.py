"""The fleet view (SPEC §9, last paragraph): with a shared state backend (redis), every replica's sessions,
events and consent questions are seen — and answered — on any replica.

Nothing here touches a call's critical section. A call records its live route and publishes its events
in local memory as before; this module copies them to an outbox that a timer hands to the state backend
a moment later (`StateBackend.share`: an ephemeral item with a TTL, sent by the backend's background
writer and announced on its change feed). Other replicas' items arrive through the change-feed listener
(`state.replica`) and land in local memory: the admin API and the dashboard read only local memory.

- sessions: `live.sessions/{session}` (the live route without its plan, plus the replica that served it);
- events: `live.events/{replica}:{id}`; a `question` event makes the question answerable here, its
  `question-closed` event closes it; an answer given here for another replica's question goes to that
  replica as `live.answers/{question}` and resolves its waiting walk there;
- watchers: each replica shares its live watcher count (`live.watchers/{replica}`) whenever it changes
  and every second while it is not zero; a count not refreshed for `WATCH_TTL` seconds is gone, so a
  replica that died, or a Redis outage, stops counting as someone watching within seconds.

Bounded: items expire in Redis, the local copies are capped. A Redis outage makes the view per-process
(the backend drops shared items while degraded); on every (re)connect a replica re-shares what it has.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import OrderedDict, deque
from typing import Any

from modelpool.events import RING, EventBus, LiveRoute, SessionLog
from modelpool.state.base import StateBackend
from modelpool.walk.consent import Question, QuestionBoard, is_refusal

SESSIONS, EVENTS, WATCHERS, ANSWERS = "live.sessions", "live.events", "live.watchers", "live.answers"
SESSION_TTL = 3600.0  # a live route nobody refreshed for an hour leaves the shared view
EVENT_TTL = 3600.0
LIVE_ONLY_TTL = 30.0  # `served` events go to live watchers only: they never need to outlive the moment
WATCH_TTL = 3.0
BEAT = 1.0
ANSWER_TTL = 60.0
OUTBOX_DELAY = 0.02  # seconds: the outbox goes to the backend in one go, after the call that filled it


class FleetView:
    def __init__(
        self, state: StateBackend, events: EventBus, sessions: SessionLog, questions: QuestionBoard
    ) -> None:
        self.state = state
        self.events = events
        self.local_sessions = sessions
        self.questions = questions
        self.shared = state.shared
        self.origin: str = getattr(state, "origin", "local")
        self.sessions: OrderedDict[str, dict[str, Any]] = OrderedDict()  # other replicas' live routes
        self.remote_questions: dict[str, dict[str, Any]] = {}
        self._watchers: dict[str, tuple[int, float]] = {}  # replica → (count, monotonic deadline)
        self._seen: set[str] = set()
        self._seen_order: deque[str] = deque()
        self._dirty: dict[str, LiveRoute] = {}
        self._outbox: list[tuple[str, str, Any, float]] = []
        self._scheduled = False
        self._task: asyncio.Task[None] | None = None
        self._remote_count = 0
        if self.shared:
            questions.id_suffix = f".{self.origin}"
            events.forward = self._forward
            events.remote_watchers = self.remote_watchers
            events.on_watchers = self._watchers_changed
            sessions.on_record = self._on_record
            state.on_connect = self.reshare

    # -- lifecycle -----------------------------------------------------------------------------------

    async def start(self) -> None:
        """Load what the other replicas already share, then keep the watcher heartbeat going."""
        if not self.shared or self._task is not None:
            return
        for ns in (SESSIONS, EVENTS, WATCHERS):
            loaded = await self.state.load(ns)
            items = sorted(loaded.items(), key=lambda kv: _at(kv[1])) if ns == EVENTS else loaded.items()
            for key, value in items:
                self.apply(ns, key, value)
        self._task = asyncio.create_task(self._heartbeat(), name="modelpool-fleet-heartbeat")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self.shared and self.events.local_watchers:
            self.state.share(WATCHERS, self.origin, {"n": 0}, WATCH_TTL)  # gone: do not wait out the TTL

    async def _heartbeat(self) -> None:
        while True:
            await asyncio.sleep(BEAT)
            if self.events.local_watchers:
                self._send(WATCHERS, self.origin, {"n": self.events.local_watchers}, WATCH_TTL)
            self._recount()

    def reshare(self) -> None:
        """The shared store (re)connected — maybe empty after a restart, maybe after missing this
        replica's changes during an outage: share everything this replica owns again."""
        for live in reversed(self.local_sessions.all()):
            self._dirty[live.session] = live
        for event in self.events.recent(RING):
            if event.get("replica") == self.origin:
                self._send(EVENTS, f"{self.origin}:{event['id']}", {"e": event, "k": True}, EVENT_TTL)
        self._send(WATCHERS, self.origin, {"n": self.events.local_watchers}, WATCH_TTL)
        self._schedule()

    # -- outgoing (called on the event loop, from calls and watchers: dictionary work only) ----------

    def _on_record(self, live: LiveRoute) -> None:
        self._dirty[live.session] = live
        self._schedule()

    def _forward(self, event: dict[str, Any], keep: bool) -> None:
        if not keep and not self.remote_watchers():
            return  # a live-only event nobody elsewhere would see
        event["replica"] = self.origin
        ttl = EVENT_TTL if keep else LIVE_ONLY_TTL
        self._send(EVENTS, f"{self.origin}:{event['id']}", {"e": event, "k": keep}, ttl)

    def _watchers_changed(self, count: int) -> None:
        self._send(WATCHERS, self.origin, {"n": count}, WATCH_TTL)

    def _send(self, ns: str, key: str, value: Any, ttl: float) -> None:
        self._outbox.append((ns, key, value, ttl))
        self._schedule()

    def _schedule(self) -> None:
        if not self._scheduled:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                return
            self._scheduled = True
            loop.call_later(OUTBOX_DELAY, self._flush)

    def _flush(self) -> None:
        self._scheduled = False
        outbox, self._outbox = self._outbox, []
        dirty, self._dirty = self._dirty, {}
        for ns, key, value, ttl in outbox:
            self.state.share(ns, key, value, ttl)
        for sid, live in dirty.items():
            self.state.share(SESSIONS, sid, {**live.to_dict(plan=False), "replica": self.origin}, SESSION_TTL)

    # -- incoming (the change-feed listener) ---------------------------------------------------------

    def apply(self, ns: str, key: str, value: Any) -> None:
        if ns == SESSIONS:
            self._apply_session(key, value)
        elif ns == EVENTS and isinstance(value, dict) and isinstance(value.get("e"), dict):
            self._apply_event(key, value["e"], bool(value.get("k", True)))
        elif ns == WATCHERS and key != self.origin:
            if isinstance(value, dict) and isinstance(value.get("n"), int):
                self._watchers[key] = (value["n"], time.monotonic() + WATCH_TTL)
            else:
                self._watchers.pop(key, None)
            self._recount()
        elif ns == ANSWERS and isinstance(value, dict) and value.get("to") == self.origin:
            with contextlib.suppress(KeyError):
                self.questions.answer(key, str(value.get("answer", "")))

    def _apply_session(self, sid: str, value: Any) -> None:
        if not isinstance(value, dict):
            self.sessions.pop(sid, None)
            return
        if value.get("replica") == self.origin:
            return
        self.sessions[sid] = value
        self.sessions.move_to_end(sid)
        while len(self.sessions) > self.local_sessions.limit:
            self.sessions.popitem(last=False)

    def _apply_event(self, key: str, event: dict[str, Any], keep: bool) -> None:
        if event.get("replica") == self.origin or key in self._seen:
            return
        self._seen.add(key)
        self._seen_order.append(key)
        if len(self._seen_order) > 4 * RING:
            self._seen.discard(self._seen_order.popleft())
        question = event.get("question")
        if isinstance(question, dict) and isinstance(question.get("id"), str):
            self._track_question(event["type"], question, event.get("replica"))
        self.events.deliver(event, keep)

    def _track_question(self, kind: str, question: dict[str, Any], replica: Any) -> None:
        qid = question["id"]
        if kind == "question" and question.get("outcome") is None:
            self.remote_questions[qid] = {**question, "replica": replica}
        else:
            self.remote_questions.pop(qid, None)
        now = time.time()
        for stale in [q for q, v in self.remote_questions.items() if float(v.get("expires", 0)) < now]:
            del self.remote_questions[stale]

    # -- watchers ------------------------------------------------------------------------------------

    def remote_watchers(self) -> int:
        if not self._watchers:
            return 0
        now = time.monotonic()
        return sum(n for n, until in self._watchers.values() if until > now)

    def _recount(self) -> None:
        """Remote watchers dropped to none (they hung up, or stopped refreshing): tell the gate."""
        count = self.remote_watchers()
        dropped = self._remote_count > 0 and count == 0
        self._remote_count = count
        if dropped:
            self.events.check_unwatched()

    # -- what the admin API reads --------------------------------------------------------------------

    def all_sessions(self) -> list[dict[str, Any]]:
        """Every replica's sessions, the most recent first; a session served by several replicas shows
        its latest live route."""
        out: dict[str, dict[str, Any]] = {}
        for live in self.local_sessions.all():
            out[live.session] = self._local(live)
        for sid, remote in self.sessions.items():
            if sid not in out or _at(remote) > _at(out[sid]):
                out[sid] = remote
        return sorted(out.values(), key=_at, reverse=True)

    def session(self, sid: str) -> tuple[dict[str, Any] | None, bool]:
        """The session's latest live route and whether it is this replica's."""
        live = self.local_sessions.get(sid)
        remote = self.sessions.get(sid)
        if live is not None and (remote is None or live.at >= _at(remote)):
            return self._local(live), True
        return remote, False

    def _local(self, live: LiveRoute) -> dict[str, Any]:
        out = live.to_dict()
        if self.shared:
            out["replica"] = self.origin
        return out

    def describe(self) -> dict[str, Any]:
        """For `status`: whether the view is shared, and what this replica sees of the others."""
        return {
            "shared": self.shared,
            "replica": self.origin if self.shared else None,
            "watchers": {"here": self.events.local_watchers, "elsewhere": self.remote_watchers()},
            "sessions_elsewhere": len(self.sessions),
            "questions_elsewhere": len(self.remote_questions),
        }

    def pending_questions(self) -> list[dict[str, Any]]:
        now = time.time()
        mine = [q.public() for q in self.questions.pending()]
        theirs = [
            {**q, "remaining": max(0.0, round(float(q["expires"]) - now, 1))}
            for q in self.remote_questions.values()
            if q.get("outcome") is None and float(q.get("expires", 0)) > now
        ]
        return mine + theirs

    def answer(self, qid: str, text: str) -> dict[str, Any]:
        """Answer a question raised here, or send the answer to the replica whose walk waits on it.
        KeyError: no such open question anywhere; RuntimeError: its replica cannot be reached now."""
        try:
            question: Question = self.questions.answer(qid, text)
            return question.public()
        except KeyError:
            remote = self.remote_questions.get(qid)
            if remote is None:
                raise
        if not self.state.healthy:
            raise RuntimeError("the shared state is unreachable: the replica that asked cannot be told")
        if remote.get("outcome") is None:
            remote["answer"] = text
            remote["outcome"] = "keep" if is_refusal(text) else "switch"
            self._send(ANSWERS, qid, {"to": remote.get("replica"), "answer": text}, ANSWER_TTL)
        return dict(remote)


def _at(item: Any) -> float:
    try:
        return float(item["at"]) if "at" in item else float(item["e"]["at"])
    except (KeyError, TypeError, ValueError):
        return 0.0
