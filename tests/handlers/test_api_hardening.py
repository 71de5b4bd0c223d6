"""The API under a hostile or careless caller: no body reaches a 5xx, sizes and depths are
bounded, and who made each decision is recorded from the request context."""

from __future__ import annotations

import json
from typing import Any

from infra.local.embedded_stack import EmbeddedStack
from tests.handlers.test_handlers import FakeContext, apigw_event, call, poll, run_status


def _raw(method: str, path: str, resource: str, raw: str, params: dict[str, str]) -> Any:
    from handlers.api import handler

    event = apigw_event(method, path, resource, raw_body=raw, path_parameters=params)
    response = handler(event, FakeContext())
    return response["statusCode"], json.loads(response["body"])


def test_deeply_nested_bodies_are_400_naming_the_problem(stack: EmbeddedStack) -> None:
    for depth in (100, 100_000):
        nested = "[" * depth + "]" * depth
        raw = '{"approved": true, "edited_inputs": {"a": ' + nested + "}}"
        status, body = _raw(
            "POST", "/runs/r1/approval", "/runs/{run_id}/approval", raw, {"run_id": "r1"}
        )
        assert status == 400, body
        assert body["field"] == "body" and "nested deeper than" in body["error_message"]
        raw = '{"input": ' + '{"a": ' * depth + "1" + "}" * depth + "}"
        status, body = _raw(
            "POST", "/agents/support/runs", "/agents/{agent}/runs", raw, {"agent": "support"}
        )
        assert status == 400 and "nested deeper than" in body["error_message"], body


def test_a_body_over_the_limit_is_413_before_anything_is_parsed(stack: EmbeddedStack) -> None:
    raw = json.dumps({"input": "x" * (2 * 1024 * 1024)})
    status, body = _raw(
        "POST", "/agents/support/runs", "/agents/{agent}/runs", raw, {"agent": "support"}
    )
    assert status == 413 and body["error_code"] == "PAYLOAD_TOO_LARGE" and body["field"] == "body"
    document = call("GET", "/openapi.json").body
    assert "413" in document["paths"]["/agents/{agent}/runs"]["post"]["responses"]


def test_the_callers_identity_is_recorded_with_the_decision(stack: EmbeddedStack) -> None:
    from handlers.api import handler

    run_id = call("POST", "/agents/billing/runs", {"input": "Refund ORD-1001", "wait_seconds": 0})
    run_id = run_id.body["run_id"]
    poll(
        lambda: call("GET", f"/runs/{run_id}"),
        lambda a: a.body["status"] == "awaiting_approval",
    )
    event = apigw_event(
        "POST",
        f"/agents/billing/runs/{run_id}/approval",
        "/agents/{agent}/runs/{run_id}/approval",
        {"approved": True, "reason": "photos checked"},
        {"agent": "billing", "run_id": run_id},
    )
    alice = "arn:aws:sts::123456789012:assumed-role/BillingApprover/alice"
    event["requestContext"]["identity"]["userArn"] = alice
    answer = handler(event, FakeContext())
    assert answer["statusCode"] == 200, answer["body"]
    done = run_status(run_id, "succeeded")
    assert done.body["tool_calls"][0]["decided_by"] == alice
    events = call("GET", f"/runs/{run_id}/events", query={"limit": "100"}).body["events"]
    decided = next(e for e in events if e["type"] == "approval_decided")
    assert decided["data"]["by"] == alice


def test_agent_scoped_routes_refuse_another_agents_run(stack: EmbeddedStack) -> None:
    run_id = call("POST", "/agents/orders/runs", {"input": "hi"}).body["run_id"]
    assert call("GET", f"/agents/orders/runs/{run_id}").status == 200
    wrong = call("GET", f"/agents/billing/runs/{run_id}")
    assert wrong.status == 404 and wrong.body["field"] == "run_id"
    refused = call("POST", f"/agents/billing/runs/{run_id}/cancel")
    assert refused.status == 404
    assert call("GET", f"/runs/{run_id}").body["status"] == "succeeded"  # untouched


def test_a_body_not_sent_as_json_is_415_and_decides_nothing(stack: EmbeddedStack) -> None:
    """What a web page can send without a CORS preflight — no Content-Type (a Blob), text,
    a form — is never taken for JSON (Powertools parsed the first as JSON and a form as a
    form: `input: Field required`)."""
    run_id = call("POST", "/agents/billing/runs", {"input": "Refund ORD-1001", "wait_seconds": 0}).body["run_id"]  # fmt: skip
    run_status(run_id, "awaiting_approval")
    decision = json.dumps({"approved": True, "edited_inputs": {"amount": 4242}})
    for kind in (None, "text/plain;charset=UTF-8", "application/x-www-form-urlencoded"):
        from handlers.api import handler

        path, resource = f"/runs/{run_id}/approval", "/runs/{run_id}/approval"
        event = apigw_event("POST", path, resource, raw_body=decision, path_parameters={"run_id": run_id})  # fmt: skip
        del event["headers"]["Content-Type"]
        if kind is not None:
            event["headers"]["content-type"] = kind
        answer = handler(event, FakeContext())
        body = json.loads(answer["body"])
        assert answer["statusCode"] == 415 and body["field"] == "Content-Type", body
        assert "application/json" in body["error_message"]
    form = call("POST", "/agents/billing/runs", raw_body="input=refund", headers={"Content-Type": "application/x-www-form-urlencoded"})  # fmt: skip
    assert form.status == 415
    not_json = call("POST", "/agents/billing/runs", raw_body="input=refund")  # says JSON, is not
    assert not_json.status == 400 and not_json.body["error_message"].startswith("body: not valid JSON")  # fmt: skip
    assert call("GET", f"/runs/{run_id}").body["status"] == "awaiting_approval"
