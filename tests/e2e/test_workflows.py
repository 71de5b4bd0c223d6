"""Workflows under moto, as deployed: the generated workflow state machines execute, each
step is a real agent run in its agent's own state machine, a step that waits for a person
holds the workflow without polling, and cancelling cascades to the step runs."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from infra.local.aws import embedded_aws
from infra.local.embedded_stack import EmbeddedStack
from runtime.errors import InvalidRequest
from runtime.workflows.service import WorkflowService
from tests.e2e.workflow_specs import workflow_spec
from tests.helpers import wait_for


@pytest.fixture
def stack() -> Iterator[tuple[EmbeddedStack, WorkflowService]]:
    with embedded_aws() as clients:
        built = EmbeddedStack(workflow_spec(), clients)
        yield built, WorkflowService(built.service)


def _finished(workflows: WorkflowService, workflow_run_id: str) -> dict[str, Any]:
    return wait_for(
        lambda: (v := workflows.view(workflow_run_id))["status"] != "running" and v,
        what="the workflow to end",
    )


def _execution(built: EmbeddedStack, workflow: str, workflow_run_id: str) -> dict[str, Any]:
    machine = built.service.stack.workflow_state_machine(workflow)
    assert machine is not None
    arn = machine.replace(":stateMachine:", ":execution:") + f":{workflow_run_id}"
    return wait_for(
        lambda: (
            (e := built.service.sfn.describe_execution(executionArn=arn))["status"] != "RUNNING"
            and e
        ),
        what="the workflow's execution to end",
    )


def _step(view: dict[str, Any], step_id: str) -> dict[str, Any]:
    return next(s for s in view["steps"] if s["id"] == step_id)


def test_a_parallel_step_with_an_approval_wait_then_a_draft_and_a_review(
    stack: tuple[EmbeddedStack, WorkflowService],
) -> None:
    built, workflows = stack
    started = workflows.start("triage", {"ticket": "I was charged twice"})
    run_id = started["workflow_run_id"]
    assert started["status"] == "running"
    waiting = wait_for(
        lambda: next(
            (
                r
                for r in _step(workflows.view(run_id), "investigate")["runs"]
                if r["status"] == "awaiting_approval"
            ),
            None,
        ),
        what="the billing branch to wait for its approval",
    )
    assert waiting["agent"] == "billing"
    time.sleep(0.3)  # the workflow holds while the run waits: nothing after it starts
    view = workflows.view(run_id)
    assert view["status"] == "running" and _step(view, "draft")["runs"] == []
    built.service.approve(waiting["run_id"], True, by="alice")
    view = _finished(workflows, run_id)
    assert view["status"] == "succeeded", view
    classify = _step(view, "classify")
    assert classify["result"] == {"category": "billing"}
    investigate = _step(view, "investigate")
    # branch 2's `when` was false: skipped, its place in the results kept
    assert investigate["skipped_branches"] == [2]
    assert investigate["result"] == ["logs: nothing odd", "billing: refund of 5 issued", None]
    draft = _step(view, "draft")
    (draft_run,) = draft["runs"]
    sent = built.service.get(draft_run["run_id"])
    # the draft's input was rendered from the input and the parallel step's results
    events = built.service.events_after(draft_run["run_id"])["events"]
    assert events[0]["data"]["input"] == (
        'Ticket: I was charged twice\nFindings: ["logs: nothing odd",'
        '"billing: refund of 5 issued",null]'
    )
    assert sent["result"] == "Dear customer, it is fixed."
    review = _step(view, "review")
    assert review["iteration"] == 1 and review["until_met"] is True
    assert view["result"] == {"approved": True}
    assert _execution(built, "triage", run_id)["status"] == "SUCCEEDED"
    # every step run is an ordinary run, with its own execution of its agent's state machine
    for step in view["steps"]:
        for step_run in step["runs"]:
            assert built.execution(step_run["run_id"])["status"] in ("SUCCEEDED", "RUNNING")


def test_a_map_step_runs_one_agent_per_element_with_its_concurrency_limit(
    stack: tuple[EmbeddedStack, WorkflowService],
) -> None:
    built, workflows = stack
    run_id = workflows.start("fanout", "plan the release")["workflow_run_id"]
    view = _finished(workflows, run_id)
    assert view["status"] == "succeeded"
    work = _step(view, "work")
    assert [r["index"] for r in sorted(work["runs"], key=lambda r: r["index"])] == [0, 1, 2]
    inputs = sorted(
        built.service.events_after(r["run_id"])["events"][0]["data"]["input"] for r in work["runs"]
    )
    assert inputs == ["do alpha", "do beta", "do gamma"]
    assert view["result"] == ["done", "done", "done"]
    # At most two at once: the third run began only after one of the first two had ended.
    heads = sorted(
        (built.service.engine.store.load_head(r["run_id"]) for r in work["runs"]),
        key=lambda h: h.created_at,
    )
    assert heads[2].created_at >= min(h.updated_at for h in heads[:2]) - 0.05
    machine = built.service.stack.workflow_state_machine("fanout")
    assert machine is not None
    definition = built.service.sfn.describe_state_machine(stateMachineArn=machine)["definition"]
    assert '"MaxConcurrency": 2' in definition


def test_a_loop_runs_until_its_condition_or_its_maximum(
    stack: tuple[EmbeddedStack, WorkflowService],
) -> None:
    _built, workflows = stack
    view = _finished(workflows, workflows.start("stubborn", "review it")["workflow_run_id"])
    review = _step(view, "review")
    assert view["status"] == "succeeded"
    assert review["iteration"] == 3 and review["until_met"] is False
    # each pass is its own run; the step shows the last one
    assert len(review["runs"]) == 1


def test_a_failed_step_fails_the_workflow_unless_it_says_continue(
    stack: tuple[EmbeddedStack, WorkflowService],
) -> None:
    built, workflows = stack
    run_id = workflows.start("fragile", "try")["workflow_run_id"]
    view = _finished(workflows, run_id)
    assert view["status"] == "failed"
    assert view["failed_step"] == "required" and view["error_code"] == "MODEL_ERROR"
    optional = _step(view, "optional")
    assert optional["status"] == "failed" and optional["result"] is None
    assert optional["runs"][0]["attempt"] == 1  # retried once, as the step says
    assert _step(view, "never")["status"] == "pending"
    assert _execution(built, "fragile", run_id)["status"] == "FAILED"


def test_cancelling_a_workflow_cancels_its_waiting_step_run(
    stack: tuple[EmbeddedStack, WorkflowService],
) -> None:
    built, workflows = stack
    run_id = workflows.start("triage", {"ticket": "refund"})["workflow_run_id"]
    waiting = wait_for(
        lambda: next(
            (
                r
                for r in _step(workflows.view(run_id), "investigate")["runs"]
                if r["status"] == "awaiting_approval"
            ),
            None,
        ),
        what="the approval wait",
    )
    view = workflows.cancel(run_id, by="bob")
    assert view["status"] == "cancelled" and view["error_code"] == "CANCELLED"
    assert built.service.get(waiting["run_id"])["status"] == "cancelled"
    # AWS reports a stopped execution ABORTED; moto's interpreter, stopped inside a Map,
    # ends it FAILED. Either way it is over, and nothing after the step ran.
    assert _execution(built, "triage", run_id)["status"] in ("ABORTED", "FAILED")
    assert _step(workflows.view(run_id), "draft")["runs"] == []
    with pytest.raises(Exception, match="cancelled"):
        workflows.cancel(run_id)


def test_bad_requests_name_the_field(stack: tuple[EmbeddedStack, WorkflowService]) -> None:
    _built, workflows = stack
    with pytest.raises(InvalidRequest) as unknown:
        workflows.start("nope", "x")
    assert unknown.value.field == "workflow" and unknown.value.not_found
    with pytest.raises(InvalidRequest) as bad_input:
        workflows.start("triage", {"ticket": 7})
    assert bad_input.value.field == "input" and "input_schema" in str(bad_input.value)
    with pytest.raises(InvalidRequest) as no_text:
        workflows.start("fanout", {"not": "text"})
    assert no_text.value.field == "input"
    with pytest.raises(InvalidRequest) as missing:
        workflows.view("0" * 32)
    assert missing.value.field == "workflow_run_id" and missing.value.not_found


def test_llm_steps_call_their_model_once_and_feed_later_steps(
    stack: tuple[EmbeddedStack, WorkflowService],
) -> None:
    """`llm` steps under moto's Step Functions: no agent run, the JSON answer (fenced, as
    models do) checked against output_schema and read by the next step's condition, the
    text answer of the second given to an agent step as its input."""
    built, workflows = stack
    run_id = workflows.start("oneshot", {"ticket": "charged twice"})["workflow_run_id"]
    view = _finished(workflows, run_id)
    assert view["status"] == "succeeded", view
    tags = _step(view, "tags")
    assert tags["result"] == {"tags": ["refund", "urgent"]}
    assert tags["runs"] == [] and tags["kind"] == "llm"
    summary = _step(view, "summary")["result"]
    assert summary == "Refund twice charged customer; urgent."
    draft = _step(view, "draft")
    assert draft["status"] == "succeeded" and len(draft["runs"]) == 1
    engine = built.service.engine
    head = engine.store.load_head(draft["runs"][0]["run_id"])
    assert engine.store.load_messages(head)[0].content == summary
    assert view["result"] == "Dear customer, it is fixed."
    assert _execution(built, "oneshot", run_id)["status"] == "SUCCEEDED"


def test_an_llm_step_whose_answer_misses_its_schema_fails_after_its_retries(
    stack: tuple[EmbeddedStack, WorkflowService],
) -> None:
    built, workflows = stack
    run_id = workflows.start("unparsable", "tag it")["workflow_run_id"]
    view = _finished(workflows, run_id)
    assert view["status"] == "failed" and view["failed_step"] == "tags"
    assert view["error_code"] == "OUTPUT_INVALID" and "not JSON" in view["error_message"]
    assert _execution(built, "unparsable", run_id)["status"] == "FAILED"
