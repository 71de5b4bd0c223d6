"""Durability of the orchestration under moto, as deployed: the API and the agent functions
are separate engines (separate lease owners), the generated state machines really execute.
A decision resumes the run at once; a lost resume, a lost start or a lost execution is
recovered; nothing large crosses Step Functions; long runs continue in fresh executions."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from infra.checks.validate import validate_file
from infra.local.aws import embedded_aws
from infra.local.embedded_stack import EmbeddedStack
from runtime.errors import InvalidRequest
from runtime.service import RunService
from runtime.spec import AgentfnSpec
from runtime.structs import replace
from tests.helpers import DEMO_SPEC, wait_for

DEMO: AgentfnSpec = validate_file(DEMO_SPEC).spec  # type: ignore[assignment]


def _status(durable_stack: EmbeddedStack, run_id: str) -> str:
    return durable_stack.service.engine.store.load_head(run_id).status


def _paused(durable_stack: EmbeddedStack, agent: str, text: str, status: str) -> str:
    code, body = durable_stack.service.start(agent, text, wait_seconds=0)
    assert code == 202
    store = durable_stack.service.engine.store
    run_id = str(body["run_id"])
    wait_for(lambda: (h := store.load_head(run_id)).status == status and h.task_token, what=status)
    return run_id


def _execution_done(
    durable_stack: EmbeddedStack, run_id: str, timeout: float = 20.0
) -> dict[str, Any]:
    return dict(
        wait_for(
            lambda: (e := durable_stack.execution(run_id))["status"] != "RUNNING" and e,
            timeout=timeout,
            what="the execution to end",
        )
    )


def test_an_approval_resumes_the_run_within_seconds(durable_stack: EmbeddedStack) -> None:
    run_id = _paused(durable_stack, "billing", "Refund ORD-1001", "awaiting_approval")
    started = time.monotonic()
    durable_stack.service.approve(run_id, True, by="alice")
    wait_for(
        lambda: _status(durable_stack, run_id) == "succeeded", timeout=15, what="the resumed run"
    )
    assert time.monotonic() - started < 15  # not a RunLeased retry of ~130 s


class FlakySfn:
    """Step Functions whose SendTaskSuccess fails `failures` times (a passing outage)."""

    def __init__(self, inner: Any, failures: int):
        self.inner, self.failures, self.sent = inner, failures, 0
        self.exceptions = inner.exceptions

    def send_task_success(self, **kwargs: Any) -> Any:
        if self.failures > 0:
            self.failures -= 1
            from botocore.exceptions import ClientError

            raise ClientError({"Error": {"Code": "ServiceUnavailable"}}, "SendTaskSuccess")
        self.sent += 1
        return self.inner.send_task_success(**kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_a_failed_resume_is_retried_and_a_repeated_decision_resends_it(
    durable_stack: EmbeddedStack,
) -> None:
    durable_stack.service._sleep = lambda seconds: None
    run_id = _paused(durable_stack, "billing", "Refund ORD-1001", "awaiting_approval")
    flaky = FlakySfn(durable_stack.service.sfn, failures=2)
    durable_stack.service.sfn = flaky
    durable_stack.service.approve(run_id, True)  # two failures, then the retry gets through
    wait_for(lambda: _status(durable_stack, run_id) == "succeeded", what="the run after retries")
    assert flaky.sent == 1

    run_id = _paused(durable_stack, "billing", "Refund ORD-1001 again", "awaiting_approval")
    flaky.failures = 10  # every attempt of this request fails: the decision is recorded
    durable_stack.service.approve(run_id, True, reason="ok")
    assert _status(durable_stack, run_id) == "running"
    time.sleep(1)
    assert _status(durable_stack, run_id) == "running"  # ... but nothing resumed the execution
    flaky.failures = 0
    again = durable_stack.service.approve(run_id, True, reason="ok")  # the client retries: no 409
    assert again["status"] in {"running", "succeeded"}
    wait_for(lambda: _status(durable_stack, run_id) == "succeeded", what="the resent resume")


class ThrottledLambda:
    """A Lambda client whose invoke is throttled (reserved concurrency exhausted)."""

    def __init__(self, inner: Any):
        self.inner = inner

    def invoke(self, **kwargs: Any) -> Any:
        from botocore.exceptions import ClientError

        raise ClientError({"Error": {"Code": "TooManyRequestsException"}}, "Invoke")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_a_start_whose_inline_advance_fails_answers_with_the_run_and_gives_it_an_owner(
    durable_stack: EmbeddedStack,
) -> None:
    durable_stack.service.lambda_client = ThrottledLambda(durable_stack.service.lambda_client)
    code, body = durable_stack.service.start("orders", "ORD-1001 arrived broken", wait_seconds=10)
    assert code == 202 and body["run_id"]  # not a 500 without a run id
    run_id = body["run_id"]
    assert durable_stack.execution(run_id)["status"] in {"RUNNING", "SUCCEEDED"}
    wait_for(lambda: _status(durable_stack, run_id) == "succeeded", what="the state machine's run")


def _chatty_spec(turns: int, text_size: int) -> AgentfnSpec:
    zones = ["UTC", "Europe/Paris", "Asia/Tokyo"]  # never the same call three times running
    script: list[dict[str, Any]] = [
        {
            "text": "x" * text_size,
            "tool_calls": [{"name": "get_time_date", "arguments": {"timezone": zones[i % 3]}}],
        }
        for i in range(turns)
    ]
    script.append({"text": "done"})
    return AgentfnSpec.model_validate(
        {
            "version": 1,
            "models": {"m": {"provider": "scripted", "script": script}},
            "agents": {
                "a": {
                    "description": "talks a lot",
                    "model": "m",
                    "tools": ["builtin:get_time_date"],
                    "max_turns": turns + 5,
                }
            },
        }
    )


def test_a_run_bigger_than_the_state_limit_finishes_and_its_execution_output_is_small() -> None:
    spec = _chatty_spec(turns=24, text_size=12_000)  # ~290 KB of reasoning
    with embedded_aws() as clients:
        stack = EmbeddedStack(spec, clients)
        _code, body = stack.service.start("a", "go", wait_seconds=0)
        run_id = body["run_id"]
        execution = _execution_done(stack, run_id, timeout=60)
        assert execution["status"] == "SUCCEEDED", execution
        assert len(execution["output"]) < 1024
        assert json.loads(execution["output"])["status"] == "succeeded"
        assert len(stack.service.get(run_id)["reasoning"]) > 256 * 1024  # the store has it


def test_a_long_run_continues_in_a_fresh_execution(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every pause and resume is a loop of the execution; past MAX_LOOPS the run carries on
    in its next execution, so no execution's history can reach 25,000 events."""
    import runtime.service

    monkeypatch.setattr(runtime.service, "MAX_LOOPS", 2)
    spec = _chatty_spec(turns=4, text_size=10)
    data = spec.model_dump(mode="json", by_alias=True)
    data["agents"]["a"]["approval"] = [{"tools": ["builtin:get_time_date"]}]
    spec = AgentfnSpec.model_validate(data)
    with embedded_aws() as clients:
        stack = EmbeddedStack(spec, clients)
        store = stack.service.engine.store
        _code, body = stack.service.start("a", "go", wait_seconds=0)
        run_id = body["run_id"]
        for _ in range(4):
            wait_for(
                lambda: (
                    (h := store.load_head(run_id)).status == "awaiting_approval" and h.task_token
                ),
                timeout=30,
                what="the next approval",
            )
            stack.service.approve(run_id, True)
        wait_for(lambda: _status(stack, run_id) == "succeeded", timeout=30, what="the run")
        head = store.load_head(run_id)
        assert head.generation >= 1
        names = [
            e["name"]
            for e in stack.service.sfn.list_executions(
                stateMachineArn=stack.service.stack.state_machine("a")
            )["executions"]
        ]
        assert run_id in names and f"{run_id}-1" in names
        # the head commits before the execution's last state ends: wait for the execution
        assert _execution_done(stack, run_id, timeout=30)["status"] == "SUCCEEDED"  # current one
        first = stack.service.sfn.describe_execution(
            executionArn=stack.service._execution_arn(replace(head, generation=0))
        )
        assert first["status"] == "SUCCEEDED"  # it ended by continuing, not by failing


def test_an_agent_function_refuses_another_agents_run(durable_stack: EmbeddedStack) -> None:
    _code, body = durable_stack.service.start("orders", "ORD-1001 broke", wait_seconds=0)
    run_id = body["run_id"]
    wait_for(lambda: _status(durable_stack, run_id) == "succeeded", what="the run")
    before = durable_stack.service.engine.store.load_head(run_id)
    triage = RunService(durable_stack.service.engine, durable_stack.service.stack, agent="triage")
    for action in ("advance", "fail", "continue"):
        with pytest.raises(InvalidRequest):
            triage.step({"action": action, "run_id": run_id}, 900)
    assert durable_stack.service.engine.store.load_head(run_id).version == before.version
