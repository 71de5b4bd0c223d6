"""The workflow tasks are idempotent, as Step Functions' retries need: a `run_item` retried
after a crash finds the run it started (and keeps the newer token), a finished run answers
its token at once, and a cancelled workflow starts nothing more."""

from __future__ import annotations

import json
from typing import Any

from runtime.service import RunService
from runtime.stack import Stack
from runtime.workflows.records import StepState, WorkflowRun
from runtime.workflows.service import WorkflowService
from tests.e2e.workflow_specs import workflow_spec
from tests.runtime.engine.kit import new_engine


class Tokens:
    """A Step Functions client that records the tokens it is sent and starts nothing."""

    class exceptions:
        class ExecutionAlreadyExists(Exception):
            pass

    def __init__(self) -> None:
        self.sent: list[tuple[str, Any]] = []
        self.started: list[str] = []

    def send_task_success(self, taskToken: str, output: str) -> None:
        self.sent.append((taskToken, json.loads(output)["run_id"]))

    def start_execution(self, stateMachineArn: str, name: str, input: str) -> None:
        self.started.append(name)


def _service() -> tuple[WorkflowService, Tokens]:
    sfn = Tokens()
    stack = Stack(function_prefix="agentfn-x-", state_machine_prefix="arn:sm:agentfn-x-")
    runs = RunService(new_engine(workflow_spec()), stack, sfn=sfn)
    return WorkflowService(runs), sfn


def _workflow(workflows: WorkflowService, name: str, given: Any) -> str:
    config = workflows.engine.spec.workflows[name]
    run = WorkflowRun(
        workflow_run_id="f" * 32,
        workflow=name,
        input=given,
        steps={s.id: StepState() for s in config.steps},
        created_at=0,
        updated_at=0,
        expires_at=10**10,
        spec_hash="x",
    )
    workflows.store.save_workflow_run(run, None)
    return run.workflow_run_id


def _task(workflows: WorkflowService, **event: Any) -> dict[str, Any]:
    return workflows.task({"workflow_run_id": "f" * 32, **event})


def test_a_retried_run_item_finds_its_run_and_keeps_the_newer_token() -> None:
    workflows, sfn = _service()
    _workflow(workflows, "triage", {"ticket": "T"})
    assert _task(workflows, action="plan", step="classify") == {
        "run": True,
        "items": [0],
        "stop": False,
    }
    first = _task(workflows, action="run_item", step="classify", item=0, task_token="t1")
    again = _task(workflows, action="run_item", step="classify", item=0, task_token="t2")
    assert first == again
    head = workflows.engine.store.load_head(first["run_id"])
    assert head.workflow_token == "t2" and head.workflow_run_id == "f" * 32
    assert len(workflows.load("f" * 32).steps["classify"].runs) == 1
    assert sfn.started == [first["run_id"], first["run_id"]]  # idempotent by its name
    # the run ends: its end answers the token that waits now
    import asyncio

    head = asyncio.run(workflows.engine.advance(first["run_id"]))
    workflows.runs.notify(head)
    assert sfn.sent == [("t2", first["run_id"])]
    # a third attempt after the end answers at once
    _task(workflows, action="run_item", step="classify", item=0, task_token="t3")
    assert sfn.sent[-1] == ("t3", first["run_id"])
    assert _task(workflows, action="recheck", step="classify", item=0) == {"done": True}
    assert _task(workflows, action="collect", step="classify")["next"] == "continue"
    assert workflows.view("f" * 32)["steps"][0]["result"] == {"category": "billing"}


def test_a_cancelled_workflow_starts_nothing_more() -> None:
    workflows, sfn = _service()
    run_id = _workflow(workflows, "fanout", "go")
    workflows.cancel(run_id, by="bob")
    assert _task(workflows, action="plan", step="plan")["stop"] is True
    answer = _task(workflows, action="run_item", step="plan", item=0, task_token="t1")
    assert answer == {"run_id": None} and sfn.sent == [("t1", None)]
    assert workflows.load(run_id).steps["plan"].runs == []


def test_an_llm_task_renders_its_prompt_calls_once_and_a_retry_does_not_call_again() -> None:
    workflows, _sfn = _service()
    engine = workflows.engine
    calls: list[tuple[str, str, str]] = []
    real = engine._build_model

    def counted(name: str) -> Any:
        model = real(name)
        ask = model.request

        async def request(request: Any) -> Any:
            calls.append((name, request.system, request.messages[0].content))
            return await ask(request)

        model.request = request  # type: ignore[method-assign]
        return model

    engine._build_model = counted  # type: ignore[method-assign]
    _workflow(workflows, "oneshot", {"ticket": "charged twice"})
    assert _task(workflows, action="plan", step="tags")["run"] is True
    assert _task(workflows, action="llm", step="tags")["next"] == "continue"
    assert _task(workflows, action="llm", step="tags")["next"] == "continue"  # a retried task
    assert _task(workflows, action="plan", step="summary")["run"] is True  # its `when` holds
    assert _task(workflows, action="llm", step="summary")["next"] == "continue"
    assert calls[0][0] == "tagger" and calls[0][2] == "Tag this ticket: charged twice"
    assert '"tags"' in calls[0][1] and "JSON Schema" in calls[0][1]
    assert calls[1] == (
        "summariser",
        "One line.",
        'Ticket: charged twice. Tags: ["refund","urgent"]',
    )
    assert len(calls) == 2
    run = workflows.load("f" * 32)
    assert run.steps["tags"].result_ref is not None and run.steps["tags"].runs == []
    assert workflows.scope(run)["tags"] == {"tags": ["refund", "urgent"]}


def test_a_steps_max_turns_is_on_the_run_it_starts() -> None:
    """A workflow step's `max_turns:` lowers its runs' limit (issue 25); the run keeps it."""
    spec = workflow_spec().model_dump(by_alias=True, exclude_unset=True)
    spec["workflows"]["triage"]["steps"][0]["max_turns"] = 1
    from runtime.spec import AgentfnSpec

    stack = Stack(function_prefix="agentfn-x-", state_machine_prefix="arn:sm:agentfn-x-")
    workflows = WorkflowService(
        RunService(new_engine(AgentfnSpec.model_validate(spec)), stack, sfn=Tokens())
    )
    _workflow(workflows, "triage", {"ticket": "T"})
    _task(workflows, action="plan", step="classify")
    started = _task(workflows, action="run_item", step="classify", item=0, task_token="t1")
    assert workflows.engine.store.load_head(started["run_id"]).max_turns == 1
