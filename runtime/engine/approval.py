"""Approval rules: which tool calls wait for a person, and what a decision does to them.

A rule matches a tool by its identity, the reference the spec names it by (`refund`,
`builtin:http_request`, `mcp:orders/delete.item`; globs allowed) and that the tool carries
(`Tool.reference`), or, with `destructive: true` / `open_world: true`, by the tool's
destructive / open-world hint. The
model-facing name is never parsed back: it may be sanitised or shortened with a hash.
Decisions are recorded on the run head before anything runs, so a
decision is never lost and never applied twice.
"""

from __future__ import annotations

import fnmatch
from typing import Any

from runtime.engine.toolrun import error_result
from runtime.messages import ToolCall, ToolResultMessage
from runtime.spec import AgentfnSpec, ApprovalRule
from runtime.store.base import ApprovalDecision
from runtime.structs import replace
from runtime.tools.base import Tool


def gates_by_annotation(rule: ApprovalRule) -> bool:
    """Does the rule match tools by what they declare (destructive, open-world)?"""
    return bool(rule.destructive or getattr(rule, "open_world", False))


def rule_for(spec: AgentfnSpec, agent: str, tool: Tool | None) -> ApprovalRule | None:
    """The first approval rule of the agent that gates this tool, if any (an unknown tool
    runs nothing, so nothing gates it)."""
    if tool is None:
        return None
    for rule in spec.agents[agent].approval:
        if rule.tools is None and not gates_by_annotation(rule):
            return rule  # no matcher at all: every tool
        if any(fnmatch.fnmatchcase(tool.reference, pattern) for pattern in rule.tools or []):
            return rule
        if (rule.destructive and tool.destructive) or (rule.open_world and tool.open_world):
            return rule
    return None


def timeout_for(spec: AgentfnSpec, rule: ApprovalRule) -> float:
    return rule.timeout or spec.defaults.approval_timeout


def apply_decision(
    call: ToolCall, decision: ApprovalDecision, turn: int
) -> tuple[ToolCall | None, ToolResultMessage | None]:
    """(the call to run, or None) and (the result to record instead, or None)."""
    if decision.timed_out:
        return None, error_result(
            call, turn, "APPROVAL_TIMEOUT: no one approved this call in time; it was not run"
        )
    if not decision.approved:
        why = f": {decision.reason}" if decision.reason else ""
        rejected = error_result(call, turn, f"the approver rejected this call{why}; it was not run")
        return None, replace(rejected, decided_by=decision.by)
    if decision.edited_inputs is not None:
        return replace(call, arguments=decision.edited_inputs), None
    return call, None


def decision_event(call_id: str, decision: ApprovalDecision) -> dict[str, Any]:
    return {
        "tool_call_id": call_id,
        "approved": decision.approved,
        "reason": decision.reason,
        "edited": decision.edited_inputs is not None,
        "timed_out": decision.timed_out,
        "by": decision.by,
    }
