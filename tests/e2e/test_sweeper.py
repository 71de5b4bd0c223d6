"""The stale-run sweeper under moto, with the generated state machines executing: it
re-sends a resume every attempt of which was lost, starts a run that never got an
execution, and gives up (STRANDED) on a run that keeps losing it."""

from __future__ import annotations

import time
from typing import Any

from infra.local.embedded_stack import EmbeddedStack
from runtime.sweeper import MAX_SWEEPS, Sweeper
from tests.e2e.test_durability import (
    FlakySfn,
    _paused,
    _status,
)
from tests.helpers import wait_for


def test_the_sweeper_resends_a_resume_that_every_attempt_lost(durable_stack: EmbeddedStack) -> None:
    durable_stack.service._sleep = lambda seconds: None
    run_id = _paused(durable_stack, "billing", "Refund ORD-1001", "awaiting_approval")
    durable_stack.service.sfn = FlakySfn(durable_stack.service.sfn, failures=100)
    durable_stack.service.approve(run_id, True)
    durable_stack.service.sfn = durable_stack.service.sfn.inner
    sweeper = Sweeper(durable_stack.service)
    assert sweeper.sweep(now=time.time()).resent == []  # not stale yet: left alone
    report = sweeper.sweep(now=time.time() + 3600)
    assert report.resent == [run_id], report
    wait_for(lambda: _status(durable_stack, run_id) == "succeeded", what="the swept run")
    events = durable_stack.service.engine.store.list_events(run_id, limit=200)
    assert any(e.type == "run_swept" and e.data["action"] == "resent" for e in events)


class NoStarts:
    """Step Functions that cannot start executions (throttled to the end)."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.exceptions = inner.exceptions

    def start_execution(self, **kwargs: Any) -> Any:
        from botocore.exceptions import ClientError

        raise ClientError({"Error": {"Code": "ThrottlingException"}}, "StartExecution")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_the_sweeper_starts_a_run_that_never_got_an_execution(durable_stack: EmbeddedStack) -> None:
    real = durable_stack.service.sfn
    durable_stack.service.sfn = NoStarts(real)
    code, body = durable_stack.service.start("orders", "ORD-1001 arrived broken", wait_seconds=0)
    assert code == 202
    run_id = body["run_id"]
    durable_stack.service.sfn = real
    assert (
        durable_stack.service.execution_status(durable_stack.service.engine.store.load_head(run_id))
        is None
    )
    report = Sweeper(durable_stack.service).sweep(now=time.time() + 3600)
    assert report.resumed == [run_id], report
    wait_for(lambda: _status(durable_stack, run_id) == "succeeded", what="the swept run")
    head = durable_stack.service.engine.store.load_head(run_id)
    assert head.generation == 1 and head.sweeps == 1
    assert durable_stack.execution(run_id)["name"] == f"{run_id}-1"


def test_the_sweeper_gives_up_on_a_run_that_keeps_losing_its_execution(
    durable_stack: EmbeddedStack,
) -> None:
    durable_stack.service.sfn = NoStarts(durable_stack.service.sfn)
    _code, body = durable_stack.service.start("orders", "ORD-1001 arrived broken", wait_seconds=0)
    run_id = body["run_id"]
    sweeper = Sweeper(durable_stack.service)
    later = time.time()
    for _ in range(MAX_SWEEPS):
        later += 3600
        sweeper.sweep(now=later)
    report = sweeper.sweep(now=later + 3600)
    assert report.failed == [run_id], report
    result = durable_stack.service.get(run_id)
    assert result["status"] == "failed" and result["error_code"] == "STRANDED"
