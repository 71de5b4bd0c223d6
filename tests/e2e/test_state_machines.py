"""End to end under moto: the generated state machines run in moto's Step Functions
interpreter, their Lambda tasks are dispatched to the real step handler in process, runs
live in moto's DynamoDB and S3. Approve, reject, edit, time out, clarify, cancel, crash,
and many runs at once."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from infra.checks.validate import validate_file
from infra.local.aws import embedded_aws
from infra.local.embedded_stack import EmbeddedStack
from runtime.spec import AgentfnSpec
from runtime.store.base import Commit
from tests.helpers import DEMO_SPEC, ROOT, wait_for

DEMO: AgentfnSpec = validate_file(DEMO_SPEC).spec  # type: ignore[assignment]


class RecordingEvents:
    """An EventBridge client stand-in that keeps what was put (and forwards nothing)."""

    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []

    def put_events(self, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        self.entries.extend(Entries)
        return {"FailedEntryCount": 0}


@pytest.fixture
def stack() -> Iterator[EmbeddedStack]:
    with embedded_aws() as clients:
        built = EmbeddedStack(DEMO, clients, template_path=ROOT / "template.yaml")
        built.set_events(RecordingEvents())
        yield built


def _paused(stack: EmbeddedStack, agent: str, text: str, status: str) -> str:
    code, body = stack.service.start(agent, text, wait_seconds=0)
    assert code == 202
    run_id = body["run_id"]
    store = stack.service.engine.store
    wait_for(lambda: (h := store.load_head(run_id)).status == status and h.task_token, what=status)
    return str(run_id)


def _finished(stack: EmbeddedStack, run_id: str) -> dict[str, Any]:
    execution = wait_for(
        lambda: (e := stack.execution(run_id))["status"] != "RUNNING" and e,
        what="the execution to end",
    )
    return {"execution": execution, "result": stack.service.get(run_id)}


def test_approve_runs_the_tool_and_the_execution_outputs_the_result(stack: EmbeddedStack) -> None:
    run_id = _paused(stack, "billing", "Refund ORD-1001, it broke", "awaiting_approval")
    paused = stack.service.get(run_id)
    assert [p["tool_name"] for p in paused["pending_approval"]] == ["issue_refund"]
    stack.service.approve(run_id, True)
    done = _finished(stack, run_id)
    assert done["execution"]["status"] == "SUCCEEDED"
    output = json.loads(done["execution"]["output"])
    assert output["run_id"] == run_id and output["status"] == "succeeded"
    refund = done["result"]["tool_calls"][0]
    assert (
        refund["tool_name"] == "issue_refund"
        and refund["success"]
        and refund["output"]["status"] == "issued"
    )
    kinds = [e["DetailType"] for e in stack.service.events.entries]  # type: ignore[attr-defined]
    assert kinds == ["Approval Requested", "Run Finished"]


def test_reject_tells_the_model_and_the_run_carries_on(stack: EmbeddedStack) -> None:
    run_id = _paused(stack, "billing", "Refund ORD-1001", "awaiting_approval")
    stack.service.approve(run_id, False, reason="over the limit")
    done = _finished(stack, run_id)
    assert done["execution"]["status"] == "SUCCEEDED"
    refund = done["result"]["tool_calls"][0]
    assert refund["success"] is False and "over the limit" in refund["output"]["error"]


def test_edit_runs_the_tool_with_the_edited_inputs(stack: EmbeddedStack) -> None:
    run_id = _paused(stack, "billing", "Refund ORD-1001", "awaiting_approval")
    call_id = stack.service.get(run_id)["pending_approval"][0]["tool_call_id"]
    edited = {"order_id": "ORD-1001", "amount": 50.0, "reason": "partial"}
    stack.service.approve(run_id, True, tool_call_id=call_id, edited_inputs=edited)
    refund = _finished(stack, run_id)["result"]["tool_calls"][0]
    assert refund["inputs"] == edited and refund["output"]["amount"] == 50.0


def test_a_second_decision_is_refused_and_nothing_runs_twice(stack: EmbeddedStack) -> None:
    from runtime.errors import WrongState

    run_id = _paused(stack, "billing", "Refund ORD-1001", "awaiting_approval")
    stack.service.approve(run_id, True)
    with pytest.raises(WrongState):
        stack.service.approve(run_id, False)
    result = _finished(stack, run_id)["result"]
    # issue_refund ran once; billing's request_help, with no supervisor, is refused.
    assert [c["tool_name"] for c in result["tool_calls"]] == ["issue_refund", "request_help"]
    assert [c["success"] for c in result["tool_calls"]] == [True, False]


def test_clarification_reply_resumes_the_execution(stack: EmbeddedStack) -> None:
    run_id = _paused(stack, "triage", "Where is my order?", "awaiting_input")
    assert stack.service.get(run_id)["clarification"]["question"].startswith("Which order")
    stack.service.reply(run_id, "ORD-1002")
    done = _finished(stack, run_id)
    assert done["execution"]["status"] == "SUCCEEDED"
    assert "milk jug" in done["result"]["result"]


def test_cancel_stops_the_execution_and_marks_the_run(stack: EmbeddedStack) -> None:
    run_id = _paused(stack, "billing", "Refund ORD-1001", "awaiting_approval")
    result = stack.service.cancel(run_id)
    assert result["status"] == "cancelled" and result["error_code"] == "CANCELLED"
    execution = wait_for(
        lambda: (e := stack.execution(run_id))["status"] != "RUNNING" and e, what="stop"
    )
    assert execution["status"] in {"ABORTED", "FAILED"}


def test_twenty_concurrent_runs_all_complete(stack: EmbeddedStack) -> None:
    started = [
        stack.service.start("orders", f"damaged order {i}", wait_seconds=0) for i in range(20)
    ]
    assert {code for code, _ in started} == {202}
    ids = [body["run_id"] for _, body in started]
    store = stack.service.engine.store
    wait_for(
        lambda: all(store.load_head(r).status == "succeeded" for r in ids),
        timeout=120,
        what="20 runs",
    )
    for run_id in ids:
        assert stack.service.get(run_id)["result"]["status"] == "delivered"


def test_a_run_without_pauses_takes_three_transitions(stack: EmbeddedStack) -> None:
    """The execution starts with `{"run_id": …}` only and its first task runs in the agent's
    own function (the handler defaults what the removed Init Pass state used to set), so a
    run that never pauses is Start → Route → Succeeded: 3 transitions (4 with Init)."""
    code, body = stack.service.start("orders", "My order ORD-1001 arrived damaged", wait_seconds=0)
    assert code == 202
    done = _finished(stack, body["run_id"])
    assert done["execution"]["status"] == "SUCCEEDED"
    assert json.loads(done["execution"]["input"]) == {"run_id": body["run_id"]}
    history = stack.service.sfn.get_execution_history(
        executionArn=done["execution"]["executionArn"]
    )["events"]
    entered = [
        e["stateEnteredEventDetails"]["name"] for e in history if "StateEntered" in e["type"]
    ]
    assert entered == ["Start", "Route", "Succeeded"]
    assert done["result"]["status"] == "succeeded"


def _short_waits() -> AgentfnSpec:
    data = DEMO.model_dump(mode="json", by_alias=True)
    data["agents"]["billing"]["approval"][0]["timeout"] = 1
    data["agents"]["triage"]["input_timeout"] = 1
    return AgentfnSpec.model_validate(data)


def test_approval_and_input_timeouts_block_the_call_and_the_run_carries_on() -> None:
    with embedded_aws() as clients:
        stack = EmbeddedStack(_short_waits(), clients)  # definitions generated for this spec
        billing = _paused(stack, "billing", "Refund ORD-1001", "awaiting_approval")
        triage = _paused(stack, "triage", "Where is my order?", "awaiting_input")
        refund = _finished(stack, billing)["result"]["tool_calls"][0]
        assert refund["success"] is False and refund["output"]["error"].startswith(
            "APPROVAL_TIMEOUT"
        )
        clarify = _finished(stack, triage)["result"]["tool_calls"][0]
        assert clarify["success"] is False and "INPUT_TIMEOUT" in clarify["output"]["error"]


class CrashOnce:
    """Wraps the store: the first time commit number `at` is reached, the write happens and
    then the step Lambda dies (an unhandled exception, as a crash looks to Step Functions)."""

    def __init__(self, inner: Any, at: int):
        self.inner, self.at, self.count, self.crashed = inner, at, 0, False
        self.blobs = inner.blobs
        self.lock = threading.Lock()

    def commit(self, commit: Commit) -> None:
        self.inner.commit(commit)
        with self.lock:
            self.count += 1
            crash = self.count == self.at and not self.crashed
            self.crashed = self.crashed or crash
        if crash:
            raise RuntimeError("simulated crash in the middle of a step")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_a_step_that_crashes_mid_step_is_retried_and_nothing_is_duplicated() -> None:
    with embedded_aws() as clients:
        stack = EmbeddedStack(
            DEMO,
            clients,
            template_path=ROOT / "template.yaml",
            engine_options={"lease_seconds": 1.0},
        )
        engine = stack.step_services["orders"].engine  # the crash is in the agent's function
        crashing = CrashOnce(engine.store, at=4)  # after the first tool result is committed
        engine.store = crashing  # type: ignore[assignment]
        _code, body = stack.service.start(
            "orders", "My order ORD-1001 arrived damaged", wait_seconds=0
        )
        run_id = body["run_id"]
        done = _finished(stack, run_id)
        assert crashing.crashed
        assert done["execution"]["status"] == "SUCCEEDED"
        result = done["result"]
        assert [c["tool_name"] for c in result["tool_calls"]] == ["lookup_order"]
        head = engine.store.load_head(run_id)
        events = engine.store.list_events(run_id, limit=1000)
        assert [e.seq for e in events] == list(range(head.event_seq))
        assert len(engine.store.load_messages(head)) == head.msg_seq == 4
        assert (
            sum(1 for e in events if e.type == "model_response") == 2
        )  # no answer requested twice
