"""How the API commands show a run and its events to a person (`agentfn status`, `events`):
what it waits for, its answer or its error; one line per event."""

from __future__ import annotations

import json
import sys
from typing import Any


def dump(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def describe(run: dict[str, Any]) -> str:
    """A run's status for people: what it is waiting for, its answer or its error."""
    lines = [f"run {run.get('run_id')} · {run.get('agent')} · {run.get('status')}"]
    if run.get("session_id"):
        lines.append(f"session {run['session_id']}")
    for pending in run.get("pending_approval") or []:
        inputs = json.dumps(pending.get("inputs"), ensure_ascii=False)
        lines.append(f"waiting for approval: {pending.get('tool_name')} {inputs}")
        lines.append(f"  tool_call_id {pending.get('tool_call_id')}")
    if run.get("status") == "awaiting_approval":
        lines.append(
            f"decide: agentfn approve {run.get('run_id')} [--tool-call-id ID] [--edit JSON] "
            "[--deny] [--reason …]"
        )
    if run.get("status") == "running":
        lines.append(f"follow: agentfn events {run.get('run_id')} --follow")
    clarification = run.get("clarification")
    if run.get("status") == "awaiting_input" and clarification:
        lines.append(f"question: {clarification.get('question')}")
        lines.append(f'answer: agentfn reply {run.get("run_id")} "…"')
    if "turns_used" in run:
        calls = len(run.get("tool_calls") or [])
        lines.append(
            f"{run['turns_used']} turns · {run.get('tokens_input', 0)} in / "
            f"{run.get('tokens_output', 0)} out tokens · {calls} tool calls"
        )
    if run.get("status") == "succeeded":
        value = run.get("result")
        lines.append("result:")
        lines.append(value if isinstance(value, str) else dump(value))
    elif run.get("status") in {"failed", "cancelled"}:
        lines.append(f"{run.get('error_code')}: {run.get('error_message')}")
    return "\n".join(lines)


def event_line(event: dict[str, Any]) -> str:
    """One event on one line: its number, its type and what `agentfn run` would show."""
    from infra.local.progress import Progress
    from runtime.events import Event
    from runtime.structs import load

    head = f"{event.get('seq', '?'):>4}  {event.get('type', '?'):<24}"
    try:
        text = Progress(sys.stdout, enabled=True).line(load(Event, event, strict=False))
    except Exception:  # an event this CLI version does not know: show its data
        text = None
    if text is None:
        text = json.dumps(event.get("data", {}), ensure_ascii=False, default=str)
        text = text if len(text) <= 160 else text[:157] + "…"
    return head + " ".join(text.split())


# ---- commands ----------------------------------------------------------------------------
