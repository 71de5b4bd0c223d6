"""What people do to a run from outside the loop, as deployed: the API and the step function
are separate engines (separate lease owners). Decisions never lock the worker out, a
repeated decision is accepted again, every decision carries who made it, and a cancel lists
a call that was running."""

from __future__ import annotations

import asyncio

from runtime.clock import FakeClock
from runtime.engine.loop import Engine
from runtime.errors import ModelError
from runtime.models.base import ModelRequest, ModelResponse
from runtime.spec import AgentfnSpec
from runtime.store.memory import MemoryStore
from tests.runtime.engine.kit import CALLS, call, make_spec

APPROVER = "arn:aws:sts::123456789012:assumed-role/Approver/alice"


def _gated() -> AgentfnSpec:
    script = [
        {"tool_calls": [call("charge", {"amount": 5}, id="c1")]},
        {"tool_calls": [call("agent_clarify", {"question": "Receipt by mail?"}, id="q1")]},
        {"text": "done"},
    ]
    return make_spec(script, tools=["charge"], approval=[{"tools": ["charge"]}])


def _engines(spec: AgentfnSpec) -> tuple[Engine, Engine, MemoryStore]:
    store, clock = MemoryStore(), FakeClock()
    return Engine(spec, store, clock=clock), Engine(spec, store, clock=clock), store


def test_a_decision_does_not_take_the_lease_so_the_worker_resumes_at_once() -> None:
    worker, api, _store = _engines(_gated())
    head = asyncio.run(worker.run("a", "charge me"))
    assert head.status == "awaiting_approval"
    decided = api.decide(head.run_id, approved=True, by=APPROVER)
    assert decided.lease_owner is None and decided.lease_until == 0.0
    # The state machine's Advance runs in another process: no RunLeased, no 130 s wait.
    resumed = asyncio.run(worker.advance(head.run_id))
    assert resumed.status == "awaiting_input"
    replied = api.reply(head.run_id, "yes", by=APPROVER)
    assert replied.lease_owner is None
    assert asyncio.run(worker.advance(head.run_id)).status == "succeeded"


def test_every_decision_reply_and_cancel_records_who_made_it() -> None:
    worker, api, store = _engines(_gated())
    head = asyncio.run(worker.run("a", "charge me"))
    api.decide(head.run_id, approved=True, reason="looks right", by=APPROVER)
    asyncio.run(worker.advance(head.run_id))
    api.reply(head.run_id, "yes", by="cognito:bob")
    asyncio.run(worker.advance(head.run_id))
    result = worker.result(head.run_id)
    by_call = {c["tool_call_id"]: c for c in result["tool_calls"]}
    assert by_call["c1"]["decided_by"] == APPROVER and by_call["q1"]["decided_by"] == "cognito:bob"
    events = {e.type: e.data for e in store.list_events(head.run_id, limit=100)}
    assert events["approval_decided"]["by"] == APPROVER
    assert events["clarification_answered"]["by"] == "cognito:bob"

    other = asyncio.run(worker.run("a", "charge again"))
    cancelled = api.cancel(other.run_id, by="arn:aws:iam::123456789012:user/ops")
    assert cancelled.cancelled_by == "arn:aws:iam::123456789012:user/ops"
    last = store.list_events(other.run_id, limit=100)[-1]
    assert last.type == "run_failed" and last.data["by"] == "arn:aws:iam::123456789012:user/ops"


def test_the_same_decision_again_is_accepted_and_a_different_one_refused() -> None:
    worker, api, _ = _engines(_gated())
    head = asyncio.run(worker.run("a", "charge me"))
    first = api.decide(head.run_id, approved=True, tool_call_id="c1", by=APPROVER)
    again = api.decide(head.run_id, approved=True, tool_call_id="c1", by=APPROVER)
    assert again.version == first.version  # nothing written twice
    all_again = api.decide(head.run_id, approved=True)  # "all pending", repeated
    assert all_again.version == first.version
    try:
        api.decide(head.run_id, approved=False, tool_call_id="c1")
    except Exception as exc:
        assert type(exc).__name__ == "WrongState"
    else:
        raise AssertionError("a different decision on a decided call must be refused")


def test_cancelling_during_an_at_most_once_call_lists_it_with_its_outcome_unknown() -> None:
    script = [
        {"tool_calls": [call("slow_charge", {"amount": 9, "seconds": 0.5}, id="pay")]},
        {"text": "never"},
    ]
    worker, api, store = _engines(make_spec(script, tools=["slow_charge"]))
    head = worker.start("a", "pay")
    CALLS.clear()

    async def advance_and_cancel() -> str:
        task = asyncio.create_task(worker.advance(head.run_id))
        await asyncio.sleep(0.2)  # the worker is inside the charge
        api.cancel(head.run_id, by="ops")
        return (await task).status

    assert asyncio.run(advance_and_cancel()) == "cancelled"
    assert [c[0] for c in CALLS] == ["slow_charge"]
    (record,) = worker.result(head.run_id)["tool_calls"]
    assert record["tool_name"] == "slow_charge" and record["tool_call_id"] == "pay"
    assert record["success"] is False and "outcome unknown" in record["output"]["error"]
    assert store.load_head(head.run_id).started_calls == []


class HangingModel:
    """A model whose answer takes longer than any budget."""

    name = "m"
    model_id = "hang"

    def __init__(self) -> None:
        self.requests: list[ModelRequest] = []

    async def request(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        await asyncio.sleep(30)
        raise ModelError("unreachable")


def test_the_time_budget_bounds_a_model_call_in_flight() -> None:
    spec = make_spec([{"text": "x"}], tools=[])
    model = HangingModel()
    engine = Engine(spec, MemoryStore(), models=lambda name: model)
    head = engine.start("a", "go")
    loop = asyncio.new_event_loop()
    try:
        started = loop.time()
        after = loop.run_until_complete(engine.advance(head.run_id, budget_seconds=0.3))
        took = loop.time() - started
    finally:
        loop.close()
    assert took < 5, took  # not the model's 30 s
    assert after.status == "running" and after.lease_owner is None  # released for the next one
    assert after.answers == 0 and len(model.requests) == 1  # nothing committed: asked again later


def test_a_tool_that_cannot_finish_within_the_budget_is_left_for_the_next_invocation() -> None:
    script = [{"tool_calls": [call("slow_charge", {"amount": 1}, id="p")]}, {"text": "ok"}]
    spec = make_spec(script, tools=["slow_charge"], tool_timeout="20s")
    engine = Engine(spec, MemoryStore())
    CALLS.clear()
    head = asyncio.run(engine.advance(engine.start("a", "go").run_id, budget_seconds=5))
    assert head.status == "running" and head.started_calls == [] and CALLS == []
    done = asyncio.run(engine.advance(head.run_id, budget_seconds=60))
    assert done.status == "succeeded" and [c[0] for c in CALLS] == ["slow_charge"]


def test_cancelling_during_a_read_only_call_records_it_as_cut_off() -> None:
    """Issue 22, point 14: a cancel records every call of the interrupted step whose result
    was not recorded, so the result accounts for each call the model asked for. A read-only
    call has no effect to check: it is listed as cut off, without `outcome_unknown`; an
    idempotent call of the same step is `outcome_unknown` (it may have been running)."""
    script = [
        {
            "tool_calls": [
                call("aslow", {"label": "look", "seconds": 0.5}, id="look"),
                call("slow", {"seconds": 0.01}, id="next"),
            ]
        },
        {"text": "never"},
    ]
    worker, api, store = _engines(make_spec(script, tools=["aslow", "slow"]))
    head = worker.start("a", "look it up")
    CALLS.clear()

    async def advance_and_cancel() -> str:
        task = asyncio.create_task(worker.advance(head.run_id))
        await asyncio.sleep(0.2)  # the worker is inside the read-only call
        api.cancel(head.run_id, by="ops")
        return (await task).status

    assert asyncio.run(advance_and_cancel()) == "cancelled"
    assert [c[0] for c in CALLS] == ["aslow"]
    records = {r["tool_call_id"]: r for r in worker.result(head.run_id)["tool_calls"]}
    assert set(records) == {"look", "next"}
    look, following = records["look"], records["next"]
    assert look["success"] is False and "outcome_unknown" not in look
    assert "cancelled" in look["output"]["error"] and "read-only" in look["output"]["error"]
    # Idempotent calls record no start, so a cancel cannot tell whether it was under way.
    assert following["outcome_unknown"] is True
    events = [e.type for e in store.list_events(head.run_id, limit=100)]
    assert events[-1] == "run_failed"
