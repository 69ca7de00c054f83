"""What one Gemini stream event means, for the native relay: error, reasoning, content, the final event."""

from __future__ import annotations

from typing import Any

import orjson

# A read holding none of these can be forwarded unparsed once committed: a quote inside a JSON string is
# escaped, so these bare keys only appear as keys (an "error" key in call arguments just takes the parse
# path, which reads the event correctly).
SPECIAL = (b'"finishReason"', b'"error"')


class EventInfo:
    __slots__ = ("content", "error", "final", "meaningful", "obj", "usage")

    def __init__(self, obj: Any) -> None:
        self.obj = obj
        self.error: Any = None
        self.meaningful = self.content = self.final = False
        self.usage: Any = None
        if not isinstance(obj, dict):
            self.error = {"message": "malformed event from upstream: not a JSON object"}
            return
        if obj.get("error"):
            self.error = obj["error"]
            return
        self.usage = obj.get("usageMetadata")
        for cand in obj.get("candidates") or ():
            if not isinstance(cand, dict):
                continue
            if cand.get("finishReason"):
                self.final = True
            content = cand.get("content")
            for part in content.get("parts") or () if isinstance(content, dict) else ():
                if not isinstance(part, dict):
                    continue
                if part.get("functionCall") or part.get("executableCode"):
                    self.meaningful = self.content = True
                elif part.get("text"):
                    self.meaningful = True
                    if not part.get("thought"):
                        self.content = True


def inspect(data: bytes) -> EventInfo:
    try:
        return EventInfo(orjson.loads(data))
    except orjson.JSONDecodeError:
        return EventInfo(None)
