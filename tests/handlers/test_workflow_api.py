"""The workflow routes of the API, on the demo spec's generated template under moto: start
a workflow run, follow it while a step waits for an approval, decide it with the ordinary
run route, read the result; bad requests name their field."""

from __future__ import annotations

from typing import Any

from infra.local.embedded_stack import EmbeddedStack
from tests.handlers.test_handlers import call, poll


def _waiting_run(body: dict[str, Any]) -> dict[str, Any] | None:
    for step in body["steps"]:
        for step_run in step["runs"]:
            if step_run["status"] == "awaiting_approval":
                return step_run
    return None


def test_a_workflow_run_through_the_api_with_an_approval(stack: EmbeddedStack) -> None:
    listed = call("GET", "/workflows")
    assert listed.status == 200
    assert [w["name"] for w in listed.body["workflows"]] == ["damaged_order"]
    started = call("POST", "/workflows/damaged_order/runs", {"input": {"order_id": "ORD-1001"}})
    assert started.status == 202, started.body
    run_id = started.body["workflow_run_id"]
    path = f"/workflow-runs/{run_id}"
    waiting = poll(lambda: call("GET", path), lambda a: _waiting_run(a.body) is not None)
    step_run = _waiting_run(waiting.body)
    assert step_run is not None and step_run["agent"] == "billing"
    check = waiting.body["steps"][0]
    assert check["status"] == "succeeded" and check["result"][1]["within_window"] is True
    decided = call("POST", f"/runs/{step_run['run_id']}/approval", {"approved": True})
    assert decided.status == 200, decided.body
    done = poll(lambda: call("GET", path), lambda a: a.body["status"] != "running")
    assert done.body["status"] == "succeeded", done.body
    assert done.body["result"] == "Refund RF-1001 of 189.00 EUR issued."
    again = call("POST", f"{path}/cancel")
    assert again.status == 409 and again.body["status"] == "succeeded"


def test_workflow_requests_that_are_wrong_say_which_field(stack: EmbeddedStack) -> None:
    unknown = call("POST", "/workflows/nope/runs", {"input": "x"})
    assert unknown.status == 404 and unknown.body["field"] == "workflow"
    bad = call("POST", "/workflows/damaged_order/runs", {"input": {"order_id": "1001"}})
    assert bad.status == 400 and bad.body["field"] == "input"
    assert "input_schema" in bad.body["error_message"]
    missing = call("POST", "/workflows/damaged_order/runs", {})
    assert missing.status == 400 and "input" in missing.body["error_message"]
    extra = call("POST", "/workflows/damaged_order/runs", {"input": {}, "wait": 1})
    assert extra.status == 400
    nothing = call("GET", "/workflow-runs/" + "0" * 32)
    assert nothing.status == 404 and nothing.body["field"] == "workflow_run_id"


def test_a_retried_workflow_start_with_the_same_idempotency_key_starts_one_run(
    stack: EmbeddedStack,
) -> None:
    from tests.handlers.test_handlers import idempotency_records

    before = {r["id"]["S"] for r in idempotency_records(stack)}
    body = {"input": {"order_id": "ORD-1002"}}
    key = {"Idempotency-Key": "wf-retry-1"}
    first = call("POST", "/workflows/damaged_order/runs", body, headers=key)
    second = call("POST", "/workflows/damaged_order/runs", body, headers=key)
    assert first.status == second.status == 202, first.body
    assert second.body["workflow_run_id"] == first.body["workflow_run_id"]
    (record,) = [r for r in idempotency_records(stack) if r["id"]["S"] not in before]
    assert record["id"]["S"].startswith("StartWorkflowRun#")
    other = call("POST", "/workflows/damaged_order/runs", {"input": {"order_id": "ORD-1003"}}, headers=key)  # fmt: skip
    assert other.status == 422 and other.body["field"] == "Idempotency-Key"
    plain = call("POST", "/workflows/damaged_order/runs", body)  # no key: a new run each time
    assert plain.body["workflow_run_id"] != first.body["workflow_run_id"]
    for started in (first, plain):
        path = f"/workflow-runs/{started.body['workflow_run_id']}"
        call("POST", f"{path}/cancel")
