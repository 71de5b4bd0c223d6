"""The result contract (DESIGN §4): one shape from the API, the CLI's --json and the state
machine's output. Built from the head and the persisted messages, never stored twice."""

from __future__ import annotations

import json
from typing import Any

from runtime.messages import AssistantMessage, Message, ToolResultMessage
from runtime.store.base import BlobStore, RunHead
from runtime.structs import dump


def reasoning_trace(messages: list[Message]) -> str:
    """Each turn's reasoning text (what the model said alongside its tool calls)."""
    lines = [
        f"Turn {m.turn}: {m.text.strip()}"
        for m in messages
        if isinstance(m, AssistantMessage) and m.tool_calls and m.text and m.text.strip()
    ]
    return "\n".join(lines)


def tool_call_records(messages: list[Message]) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    for m in messages:
        if not isinstance(m, ToolResultMessage):
            continue
        record: dict[str, Any] = {
            "turn_number": m.turn,
            "tool_name": m.tool_name,
            "tool_call_id": m.tool_call_id,
            "inputs": m.inputs,
            "output": m.output,
            "success": m.success,
            "duration_ms": m.duration_ms,
        }
        if m.output_truncated:  # `output` is a preview: how long the whole is, and where
            record["output_truncated"] = True
            record["output_chars"] = m.full_size
            record["full_output"] = {
                "cache_id": m.reused_from or m.tool_call_id,
                "key": m.full_output_ref,
            }
        if m.outcome_unknown:
            record["outcome_unknown"] = True
        if m.decided_by:
            record["decided_by"] = m.decided_by  # who approved, edited or answered it
        if m.child_run_id:
            record["child_run_id"] = m.child_run_id  # the sub-agent's own run
        records.append(record)
    return records


def final_result(head: RunHead, blobs: BlobStore) -> Any:
    if head.result_ref:
        return json.loads(blobs.get(head.result_ref))
    return head.result


def build_result(head: RunHead, messages: list[Message], blobs: BlobStore) -> dict[str, Any]:
    out: dict[str, Any] = {
        "run_id": head.run_id,
        "agent": head.agent,
        "session_id": head.session_id,
        "status": head.status,
    }
    if head.trigger is not None:  # a run a schedule, webhook, queue or event started
        out["trigger"] = dict(head.trigger)
    reasoning = reasoning_trace(messages)
    if head.status == "succeeded":
        out["result"] = final_result(head, blobs)
        if head.truncated:  # still cut off after every continuation: said, not hidden
            out["truncated"] = True
        out["reasoning"] = reasoning
    elif head.status in {"failed", "cancelled"}:
        out["error_message"] = head.error_message or ""
        out["error_code"] = head.error_code or (
            "CANCELLED" if head.status == "cancelled" else "INTERNAL"
        )
        if head.cancelled_by:
            out["cancelled_by"] = head.cancelled_by
        out["partial_reasoning"] = reasoning
    else:
        out["reasoning"] = reasoning
    out["tool_calls"] = tool_call_records(messages)
    out["turns_used"] = head.turn
    out["model_used"] = head.model_used
    out["tokens_input"] = head.usage.input_tokens
    out["tokens_output"] = head.usage.output_tokens
    out["cost_usd"] = round(head.cost_usd, 6)
    if head.cost_by_model:
        out["cost_by_model"] = {k: round(v, 6) for k, v in head.cost_by_model.items()}
    if head.warnings:
        out["warnings"] = list(head.warnings)
    if head.trace is not None:  # deployment.telemetry: find the run in the tracing backend
        out["trace_id"] = head.trace.trace_id
    if head.agent_path or head.usage_by_agent or head.parent_run_id:
        out.update(team_fields(head, messages))
    if head.status == "awaiting_approval":
        out["pending_approval"] = [dump(p) for p in head.pending_approval]
    if head.status == "awaiting_input" and head.clarification is not None:
        out["clarification"] = dump(head.clarification)
    return out


def team_fields(head: RunHead, messages: list[Message]) -> dict[str, Any]:
    """Who handled the run (`agent_path`, `active_agent`), its child runs and each agent's
    tokens; a child names its parent."""
    fields: dict[str, Any] = {
        "active_agent": head.active_agent,
        "agent_path": list(head.agent_path or [head.agent]),
        "usage_by_agent": {
            name: {"tokens_input": u.input_tokens, "tokens_output": u.output_tokens}
            for name, u in head.usage_by_agent.items()
        },
        "cost_by_agent": {k: round(v, 6) for k, v in head.cost_by_agent.items()},
        "child_run_ids": [
            m.child_run_id for m in messages if isinstance(m, ToolResultMessage) and m.child_run_id
        ]
        + [c.run_id for c in head.children],
    }
    if head.parent_run_id:
        fields["parent_run_id"] = head.parent_run_id
    return fields
