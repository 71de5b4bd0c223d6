"""What people do to a run from outside the loop: answer a question, decide on pending
tool calls, let an approval time out, cancel.

Each records its decision in the store first (the source of truth) with one conditional
commit, with who made it (`by`: the caller's identity) in the run and its events. A decision
that repeats one already recorded (a client retrying after a lost answer) is accepted again
without a second commit, so the caller can resume the run again; a different second
decision, or one on a run in the wrong state, is refused (WrongState → HTTP 409), so nothing
is lost or applied twice. None of them takes the run's lease: the worker that resumes the
run must not find it locked by the API.
"""

from __future__ import annotations

from typing import Any

from runtime.engine.approval import decision_event
from runtime.engine.result import build_result
from runtime.engine.shortcuts import Shortcuts
from runtime.engine.state import check_max_turns, pending_calls
from runtime.engine.toolrun import error_result
from runtime.errors import InvalidRequest, RunNotFound, WrongState
from runtime.events import EventType
from runtime.messages import AssistantMessage, Message, ToolCall, ToolResultMessage
from runtime.safety.schema_check import SchemaViolation, check
from runtime.store.base import TERMINAL, ApprovalDecision, ChildRun, RunHead
from runtime.structs import load, replace
from runtime.tools.builtins import CLARIFY
from runtime.tools.team import control_of

OUTCOME_UNKNOWN_CANCELLED = (
    "outcome unknown: the run was cancelled while this call was running; its result was not "
    "recorded. Check its effect before retrying."
)
MAYBE_RAN_CANCELLED = (
    "outcome unknown: the run was cancelled before this call's result was recorded, and it "
    "may have been running (only at_most_once calls record their start). Check its effect "
    "before retrying."
)
READ_ONLY_CANCELLED = (
    "cancelled: the run was cancelled before this read-only call's result was recorded (a "
    "read-only call has no effect to check)"
)
NOT_STARTED_CANCELLED = "not run: the run was cancelled before this call started"


class Interventions(Shortcuts):
    def answered_instead(
        self,
        agent: str,
        text: str,
        session_id: str | None,
        step_of: Any,
        max_turns: int | None,
        answer_pending: bool,
    ) -> RunHead | None:
        """Before a run starts: `max_turns` lowers its turn limit, and the agent's own stays
        the ceiling, so a caller can never buy more turns than the spec allows (a larger
        value is refused). With `answer_pending`, a message to a session whose latest run
        waits for the answer to a question answers it: that run (returned) goes on."""
        check_max_turns(self.spec, agent, max_turns)
        if answer_pending and session_id is not None and step_of is None:
            waiting = self.pending_question(agent, session_id)
            if waiting is not None:
                return self.answer_pending(waiting, text)
        return None

    def _child_view(self, ref: ChildRun) -> dict[str, Any]:
        if ref.remote is not None:  # a remote A2A agent's task (runtime.engine.remote_asks)
            from runtime.protocols.a2a_client import remote_view

            return remote_view(ref)
        run_id = ref.run_id
        try:
            child = self.store.load_head(run_id)
        except RunNotFound:
            return {"run_id": run_id, "status": "starting"}
        view = build_result(child, [], self.store.blobs)
        keep = ("run_id", "agent", "status", "pending_approval", "clarification", "children")
        return {k: v for k, v in view.items() if k in keep}

    def pending_question(self, agent: str, session_id: str) -> RunHead | None:
        """The session's latest run when it (or a child it waits for) waits for the answer
        to a question: the next message of the session is that answer (issue 25)."""
        from runtime.teams import waiting_for_a_person

        run_id = self.store.latest_session_run(agent, session_id)
        if run_id is None:
            return None
        head = self.store.load_head(run_id)
        if waiting_for_a_person(self.store, head, "awaiting_input") is None:
            return None
        return head

    def answer_pending(self, head: RunHead, text: str, *, by: str | None = None) -> RunHead:
        """Answer the question `head` (or its waiting child) asked; `head` as it is now."""
        from runtime.teams import waiting_for_a_person

        target = waiting_for_a_person(self.store, head, "awaiting_input") or head
        answered = self.reply(target.run_id, text, by=by)
        return answered if target.run_id == head.run_id else self.store.load_head(head.run_id)

    def reply(self, run_id: str, text: str, *, by: str | None = None) -> RunHead:
        """Answer a clarification: the reply becomes that tool call's result."""
        head = self.store.load_head(run_id)
        if head.status != "awaiting_input" or head.clarification is None:
            if head.status == "running" and self._replied(head, text):
                return head  # the same answer again: already recorded
            raise WrongState(
                f"run {run_id} is {head.status}, not awaiting_input", status=head.status
            )
        clarification = head.clarification
        messages = self.store.load_messages(head, head.context.base)
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
            decided_by=by,
        )
        events: list[tuple[EventType, dict[str, Any]]] = [
            ("clarification_answered", {"tool_call_id": clarification.tool_call_id, "by": by})
        ]
        update = {"status": "running", "clarification": None}
        return self._commit(head, [result], events, update=update, keep_lease=True)

    def _replied(self, head: RunHead, text: str) -> bool:
        """Is `text` the answer the run's latest clarification already got?"""
        messages = self.store.load_messages(head, head.context.base)
        last = messages[-1] if messages else None
        return (
            isinstance(last, ToolResultMessage)
            and last.tool_name == CLARIFY
            and last.success
            and last.content == text
        )

    def cancel(
        self, run_id: str, reason: str = "cancelled by request", *, by: str | None = None
    ) -> RunHead:
        """Cancel the run. Every call of the interrupted step whose result is not recorded
        gets one, so the result accounts for each call the model asked for: "outcome
        unknown" for a call that may have had an effect (an at_most_once call that had
        started; an idempotent or unknown one, which records no start, on a run that was
        running), a plain error for the others (a read-only call, or one that had not
        started)."""
        head = self.store.load_head(run_id)
        if head.status in TERMINAL:
            raise WrongState(f"run {run_id} is already {head.status}", status=head.status)
        unknown: list[Message] = []
        if head.started_calls or head.status == "running":
            messages = self.store.load_messages(head, head.context.base)
            turn = next(
                (m.turn for m in reversed(messages) if isinstance(m, AssistantMessage)), head.turn
            )
            for call in pending_calls(messages):
                result = self._cut_off(head, call, turn)
                if result is not None:
                    unknown.append(result)
        head = replace(
            head,
            status="cancelled",
            error_code="CANCELLED",
            error_message=reason,
            cancelled_by=by,
            started_calls=[],
        )
        data = {"error_code": "CANCELLED", "error_message": reason, "by": by}
        return self._commit(head, unknown, [("run_failed", data)], release=True)

    def _cut_off(self, head: RunHead, call: ToolCall, turn: int) -> ToolResultMessage | None:
        """The result a cancel records for a call of the interrupted step (None: nothing
        can have been running, the run was waiting)."""
        if call.id in head.started_calls:
            result = error_result(call, turn, OUTCOME_UNKNOWN_CANCELLED)
            return replace(result, outcome_unknown=True)
        if head.status != "running":
            return None
        tool = self._toolbox(head).get(call.name)
        if tool is None:  # e.g. an MCP tool this process has not listed: assume the worst
            result = error_result(call, turn, MAYBE_RAN_CANCELLED)
            return replace(result, outcome_unknown=True)
        control = call.name == CLARIFY or control_of(tool.reference) is not None
        if control or call.arguments is None or tool.effect == "at_most_once":
            # The run's own control flow (commits, never cut off half way), arguments that
            # never run, or an at_most_once call whose start would have been recorded.
            return error_result(call, turn, NOT_STARTED_CANCELLED)
        if tool.effect == "read_only":
            return error_result(call, turn, READ_ONLY_CANCELLED)
        result = error_result(call, turn, MAYBE_RAN_CANCELLED)  # idempotent: no start record
        return replace(result, outcome_unknown=True)

    def decide(
        self,
        run_id: str,
        approved: bool,
        *,
        tool_call_id: str | None = None,
        reason: str | None = None,
        edited_inputs: dict[str, Any] | None = None,
        by: str | None = None,
    ) -> RunHead:
        """Approve, reject or edit pending tool calls: one (`tool_call_id`) or all of them."""
        head = self.store.load_head(run_id)
        try:  # validated: the decision comes from outside (a request, a chat, a remote agent)
            values = {"approved": approved, "reason": reason, "edited_inputs": edited_inputs}
            asked = load(ApprovalDecision, values, strict=False)
        except ValueError as exc:
            raise InvalidRequest(f"invalid decision: {exc}") from None
        if tool_call_id is not None:
            repeated = head.status != "succeeded" and _repeats(head, [tool_call_id], asked)
        else:  # "all pending": a repeat only once nothing is pending any more
            repeated = head.status == "running" and _repeats(head, list(head.decisions), asked)
        if repeated:
            return head  # the same decision again (a retry): already recorded
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
                tool = self._toolbox(head).get(pending.tool_name)
                try:
                    check(tool.input_schema if tool else {"type": "object"}, edited_inputs)
                except SchemaViolation as exc:
                    raise InvalidRequest(f"edited_inputs: {exc}", field="edited_inputs") from None
            decision = replace(asked, by=by)
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
        return self._commit(head, [], events, update=update, keep_lease=True)

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
        return self._commit(head, [result], events, update=update, keep_lease=True)

    def next_generation(self, run_id: str, *, swept: bool = False) -> RunHead:
        """Name the run's next Step Functions execution (committed before it is started, so
        a retry starts the same one). `swept`: the sweeper restarts a run that lost its
        execution, and counts it."""
        head = self.store.load_head(run_id)
        update: dict[str, Any] = {"generation": head.generation + 1, "task_token": None}
        if swept:
            update["sweeps"] = head.sweeps + 1
        return self._commit(head, [], [], update=update, keep_lease=True)

    def postpone_sweep(self, run_id: str, until: float) -> RunHead:
        """The sweeper found the run healthy: look again at `until`, not at every sweep."""
        head = self.store.load_head(run_id)
        return self._commit(head, [], [], update={"sweep_after": until}, keep_lease=True)

    def record_event(self, run_id: str, kind: EventType, data: dict[str, Any]) -> RunHead:
        """Append one event to the run (what was done to it from outside the loop)."""
        head = self.store.load_head(run_id)
        return self._commit(head, [], [(kind, data)], keep_lease=True)

    def store_task_token(self, run_id: str, token: str) -> RunHead:
        """Keep the waiting execution's task token on the head, where decisions find it."""
        head = self.store.load_head(run_id)
        return self._commit(head, [], [], update={"task_token": token}, keep_lease=True)

    def store_workflow_token(self, run_id: str, token: str) -> RunHead:
        """Keep the token of the workflow task that now waits for this run's end."""
        head = self.store.load_head(run_id)
        return self._commit(head, [], [], update={"workflow_token": token}, keep_lease=True)


def _repeats(head: RunHead, call_ids: list[str], asked: ApprovalDecision) -> bool:
    """Are these calls all decided already, exactly as `asked`?"""
    return bool(call_ids) and all(
        call_id in head.decisions and head.decisions[call_id].same_as(asked) for call_id in call_ids
    )
