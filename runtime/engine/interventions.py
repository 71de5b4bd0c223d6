"""What people do to a run from outside the loop: answer a question, decide on pending
tool calls, let an approval time out, cancel.

Each records its decision in the store first (the source of truth) with one conditional
commit; a second decision on the same call, or one on a run in the wrong state, is refused
(WrongState → HTTP 409), so nothing is lost or applied twice.
"""

from __future__ import annotations

from typing import Any

from runtime.engine.approval import decision_event
from runtime.engine.tool_phase import ToolPhase
from runtime.errors import InvalidRequest, WrongState
from runtime.events import EventType
from runtime.messages import AssistantMessage, ToolResultMessage
from runtime.schema_check import SchemaViolation, check
from runtime.store.base import TERMINAL, ApprovalDecision, RunHead
from runtime.tools.builtins import CLARIFY


class Interventions(ToolPhase):
    def reply(self, run_id: str, text: str) -> RunHead:
        """Answer a clarification: the reply becomes that tool call's result."""
        head = self.store.load_head(run_id)
        if head.status != "awaiting_input" or head.clarification is None:
            raise WrongState(
                f"run {run_id} is {head.status}, not awaiting_input", status=head.status
            )
        clarification = head.clarification
        messages = self.store.load_messages(head)
        turn = next(
            (m.turn for m in reversed(messages) if isinstance(m, AssistantMessage)), head.turn
        )
        result = ToolResultMessage(
            tool_call_id=clarification.tool_call_id,
            tool_name=CLARIFY,
            content=text,
            inputs={"question": clarification.question},
            output=text,
            turn=turn,
        )
        events: list[tuple[EventType, dict[str, Any]]] = [
            ("clarification_answered", {"tool_call_id": clarification.tool_call_id})
        ]
        update = {"status": "running", "clarification": None}
        return self._commit(head, [result], events, update=update)

    def cancel(self, run_id: str, reason: str = "cancelled by request") -> RunHead:
        head = self.store.load_head(run_id)
        if head.status in TERMINAL:
            raise WrongState(f"run {run_id} is already {head.status}", status=head.status)
        head = head.model_copy(
            update={"status": "cancelled", "error_code": "CANCELLED", "error_message": reason}
        )
        return self._commit(
            head,
            [],
            [("run_failed", {"error_code": "CANCELLED", "error_message": reason})],
            release=True,
        )

    def decide(
        self,
        run_id: str,
        approved: bool,
        *,
        tool_call_id: str | None = None,
        reason: str | None = None,
        edited_inputs: dict[str, Any] | None = None,
    ) -> RunHead:
        """Approve, reject or edit pending tool calls: one (`tool_call_id`) or all of them."""
        head = self.store.load_head(run_id)
        if tool_call_id is not None and tool_call_id in head.decisions:
            raise WrongState(f"tool call {tool_call_id} was already decided", status=head.status)
        if head.status != "awaiting_approval":
            raise WrongState(
                f"run {run_id} is {head.status}, not awaiting_approval", status=head.status
            )
        targets = [p for p in head.pending_approval if tool_call_id in {None, p.tool_call_id}]
        if not targets:
            raise InvalidRequest(
                f"no pending approval for tool call {tool_call_id!r}",
                field="tool_call_id",
                not_found=True,
            )
        if edited_inputs is not None and (not approved or len(targets) != 1):
            raise InvalidRequest(
                "edited_inputs needs approved=true and one tool_call_id", field="edited_inputs"
            )
        wanted = "edit" if edited_inputs is not None else "approve" if approved else "reject"
        decisions = dict(head.decisions)
        events: list[tuple[EventType, dict[str, Any]]] = []
        for pending in targets:
            if wanted not in pending.decisions:
                raise InvalidRequest(
                    f"{wanted!r} is not allowed for {pending.tool_name}; allowed: "
                    f"{', '.join(pending.decisions)}",
                    field="approved" if wanted != "edit" else "edited_inputs",
                )
            if edited_inputs is not None:
                tool = self._tools(head.agent).get(pending.tool_name)
                try:
                    check(tool.input_schema if tool else {"type": "object"}, edited_inputs)
                except SchemaViolation as exc:
                    raise InvalidRequest(f"edited_inputs: {exc}", field="edited_inputs") from None
            decision = ApprovalDecision(
                approved=approved, reason=reason, edited_inputs=edited_inputs
            )
            decisions[pending.tool_call_id] = decision
            events.append(("approval_decided", decision_event(pending.tool_call_id, decision)))
        return self._record_decisions(head, decisions, events, {t.tool_call_id for t in targets})

    def expire_approvals(self, run_id: str) -> RunHead:
        """The approval wait timed out: every pending call is blocked (APPROVAL_TIMEOUT)."""
        head = self.store.load_head(run_id)
        if head.status != "awaiting_approval":
            raise WrongState(
                f"run {run_id} is {head.status}, not awaiting_approval", status=head.status
            )
        decisions = dict(head.decisions)
        events: list[tuple[EventType, dict[str, Any]]] = []
        for pending in head.pending_approval:
            decision = ApprovalDecision(approved=False, timed_out=True)
            decisions[pending.tool_call_id] = decision
            events.append(("approval_decided", decision_event(pending.tool_call_id, decision)))
        ids = {p.tool_call_id for p in head.pending_approval}
        return self._record_decisions(head, decisions, events, ids)

    def _record_decisions(
        self,
        head: RunHead,
        decisions: dict[str, ApprovalDecision],
        events: list[tuple[EventType, dict[str, Any]]],
        decided: set[str],
    ) -> RunHead:
        remaining = [p for p in head.pending_approval if p.tool_call_id not in decided]
        update: dict[str, Any] = {"decisions": decisions, "pending_approval": remaining}
        if not remaining:
            update["status"] = "running"
        return self._commit(head, [], events, update=update)

    def expire_input(self, run_id: str) -> RunHead:
        """The clarification wait timed out: the question is answered with an error result,
        so the model knows no one replied, and the run carries on."""
        head = self.store.load_head(run_id)
        if head.status != "awaiting_input" or head.clarification is None:
            raise WrongState(
                f"run {run_id} is {head.status}, not awaiting_input", status=head.status
            )
        question = head.clarification
        result = ToolResultMessage(
            tool_call_id=question.tool_call_id,
            tool_name=CLARIFY,
            content="Error: INPUT_TIMEOUT: no one answered the question in time.",
            success=False,
            inputs={"question": question.question},
            output={"error": "INPUT_TIMEOUT"},
            turn=head.turn,
        )
        events: list[tuple[EventType, dict[str, Any]]] = [
            ("clarification_answered", {"tool_call_id": question.tool_call_id, "timed_out": True})
        ]
        update = {"status": "running", "clarification": None}
        return self._commit(head, [result], events, update=update)

    def store_task_token(self, run_id: str, token: str) -> RunHead:
        """Keep the waiting execution's task token on the head, where decisions find it."""
        head = self.store.load_head(run_id)
        return self._commit(head, [], [], update={"task_token": token})
