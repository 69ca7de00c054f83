"""The small pieces of the Gemini API's shape that the sim's other rooms need too (its errors, the agent's
look for the working directory), kept apart from the Gemini provider so neither imports the other."""

from __future__ import annotations

from typing import Any

_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND"}
_STATUS |= {429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}


def pick(obj: dict[str, Any], camel: str) -> Any:
    """A field by its camelCase name or its snake_case twin (the API accepts both)."""
    snake = "".join("_" + c.lower() if c.isupper() else c for c in camel)
    return obj.get(camel, obj.get(snake))


def texts(body: dict[str, Any]) -> list[str]:
    """Every text of the system instruction and the turns."""
    out: list[str] = []
    system = pick(body, "systemInstruction")
    for content in [system, *(body.get("contents") or [])]:
        if isinstance(content, str):
            out.append(content)
        elif isinstance(content, dict):
            out.extend(
                p["text"]
                for p in content.get("parts") or []
                if isinstance(p, dict) and isinstance(p.get("text"), str)
            )
    return out


def error_obj(status: int, message: str) -> dict[str, Any]:
    name = _STATUS.get(status, "INVALID_ARGUMENT" if status < 500 else "INTERNAL")
    return {"error": {"code": status, "message": message, "status": name}}
