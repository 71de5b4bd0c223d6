"""Run events: append-only, numbered per run, small (previews, never whole payloads)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from runtime.trusted import made

EventType = Literal[
    "run_started",
    "step_started",
    "model_response",
    "tool_call",
    "tool_result",
    "approval_requested",
    "approval_decided",
    "clarification_requested",
    "clarification_answered",
    "handoff",
    "escalation",
    "child_run_started",
    "child_run_finished",
    "intent_matched",
    "tools_unavailable",
    "hook_decision",
    "context_compacted",
    "step_completed",
    "run_completed",
    "run_failed",
    "run_swept",
]

PREVIEW_CHARS = 500


class Event(BaseModel):
    model_config = ConfigDict(extra="forbid")

    seq: int
    type: EventType
    at: float
    run_id: str
    data: dict[str, Any] = {}


def made_event(seq: int, kind: EventType, at: float, run_id: str, data: dict[str, Any]) -> Event:
    """An event the engine made from its own values, equal to `Event(...)` without the
    validation (the float and the copied dict are what validation would produce). Every
    commit makes a few (runtime.trusted)."""
    values = {"seq": seq, "type": kind, "at": float(at), "run_id": run_id, "data": dict(data)}
    return made(Event, values)


#: Called with each event as it is committed (live progress in the CLI, tests).
EventListener = Callable[[Event], None]


def preview(text: str | None, limit: int = PREVIEW_CHARS) -> str:
    if text is None:
        return ""
    return text if len(text) <= limit else text[:limit] + f"… [{len(text)} chars]"
