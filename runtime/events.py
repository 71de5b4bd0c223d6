"""Run events: append-only, numbered per run, small (previews, never whole payloads)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import msgspec

from runtime.structs import Record

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


class Event(Record, kw_only=True):
    seq: int
    type: EventType
    at: float
    run_id: str
    data: dict[str, Any] = msgspec.field(default_factory=dict)


def made_event(seq: int, kind: EventType, at: float, run_id: str, data: dict[str, Any]) -> Event:
    """An event the engine made from its own values: `at` a float whatever the clock gave
    (as stored: `5.0`, not `5`), `data` a copy of the caller's dict."""
    return Event(seq=seq, type=kind, at=float(at), run_id=run_id, data=dict(data))


#: Called with each event as it is committed (live progress in the CLI, tests).
EventListener = Callable[[Event], None]


def preview(text: str | None, limit: int = PREVIEW_CHARS) -> str:
    if text is None:
        return ""
    return text if len(text) <= limit else text[:limit] + f"… [{len(text)} chars]"
