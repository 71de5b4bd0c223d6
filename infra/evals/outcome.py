"""What a case's runs did, read back from the store: the tool trajectory (a run's calls,
with each asked agent's calls after the call that asked it), handoffs, approvals asked,
the result, tokens and cost. The same store `agentfn status` and the API read."""

from __future__ import annotations

import threading
from typing import Any

from infra.evals.assertions import Call, Outcome
from runtime.events import Event
from runtime.messages import AssistantMessage, ToolResultMessage


class Collector:
    """The engine's event listener: every run's events of one case, as committed."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self._lock = threading.Lock()

    def __call__(self, event: Event) -> None:
        with self._lock:
            self.events.append(event)

    @property
    def handoffs(self) -> list[str]:
        return [str(e.data.get("to")) for e in self.events if e.type == "handoff"]

    @property
    def approvals_asked(self) -> list[str]:
        return [
            str(call.get("tool_name"))
            for e in self.events
            if e.type == "approval_requested"
            for call in e.data.get("calls", [])
        ]


def trajectory(store: Any, run_id: str, depth: int = 0) -> list[Call]:
    """The run's tool calls in order; an asked agent's own calls follow the asking call."""
    head = store.load_head(run_id)
    messages = store.load_messages(head)
    caller: dict[str, str] = {}
    for message in messages:
        if isinstance(message, AssistantMessage):
            for call in message.tool_calls:
                caller[call.id] = message.agent or head.agent
    calls: list[Call] = []
    for message in messages:
        if not isinstance(message, ToolResultMessage):
            continue
        agent = caller.get(message.tool_call_id, head.agent)
        output = message.output
        calls.append(
            Call(agent, message.tool_name, dict(message.inputs or {}), message.success, output)
        )
        if message.child_run_id and depth < 8:
            calls += trajectory(store, message.child_run_id, depth + 1)
    return calls


def outcome_of(store: Any, results: list[dict[str, Any]], collector: Collector) -> Outcome:
    """The case's outcome from its runs' result contracts (one per turn of a conversation):
    status, result and error of the last; tokens, cost and turns summed over all of them."""
    last = results[-1]
    calls: list[Call] = []
    for result in results:
        if "run_id" in result:
            calls += trajectory(store, result["run_id"])
    return Outcome(
        status=str(last["status"]),
        result=last.get("result"),
        error_code=last.get("error_code"),
        error_message=last.get("error_message"),
        turns=sum(int(r.get("turns_used") or 0) for r in results),
        tokens=sum(
            int(r.get("tokens_input") or 0) + int(r.get("tokens_output") or 0) for r in results
        ),
        cost_usd=round(sum(float(r.get("cost_usd") or 0) for r in results), 6),
        trajectory=calls,
        handoffs=collector.handoffs,
        approvals_asked=collector.approvals_asked,
    )
