"""The Lambda entry points, driven the way API Gateway and Step Functions drive them.

The API handler gets API Gateway REST proxy events (the shape of `sam local generate-event
apigateway aws-proxy`) and answers from a real RunService: the embedded stack on moto, whose
state machines (from template.yaml) run the agents' step handler in process.
"""

from __future__ import annotations

import base64
import json
import logging
import re
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from infra.local.aws import LOCAL_IDEMPOTENCY_TABLE
from infra.local.embedded_stack import EmbeddedStack
from runtime.routes import ROUTES
from tests.helpers import ROOT

POLL_SECONDS = 20.0


def apigw_event(
    method: str,
    path: str,
    resource: str,
    body: dict[str, Any] | None = None,
    path_parameters: dict[str, str] | None = None,
    *,
    query: dict[str, str] | None = None,
    headers: dict[str, str] | None = None,
    raw_body: str | None = None,
) -> dict[str, Any]:
    """An API Gateway REST proxy event, shaped like `sam local generate-event apigateway aws-proxy`."""
    all_headers = {
        "Accept": "application/json",
        "Content-Type": "application/json",
        "Host": "abc.execute-api.us-east-1.amazonaws.com",
        **(headers or {}),
    }
    return {
        "body": raw_body
        if raw_body is not None
        else json.dumps(body)
        if body is not None
        else None,
        "resource": resource,
        "path": path,
        "httpMethod": method,
        "isBase64Encoded": False,
        "queryStringParameters": query or None,
        "multiValueQueryStringParameters": {k: [v] for k, v in query.items()} if query else None,
        "pathParameters": path_parameters,
        "stageVariables": None,
        "headers": all_headers,
        "multiValueHeaders": {k: [v] for k, v in all_headers.items()},
        "requestContext": {
            "accountId": "123456789012",
            "resourceId": "123456",
            "stage": "v1",
            "requestId": "c6af9ac6-7b61-11e6-9a41-93e8deadbeef",
            "requestTime": "09/Apr/2015:12:34:56 +0000",
            "requestTimeEpoch": 1428582896000,
            "identity": {
                "sourceIp": "127.0.0.1",
                "userAgent": "pytest",
                "userArn": "arn:aws:iam::123456789012:user/tester",
            },
            "path": f"/v1{path}",
            "resourcePath": resource,
            "httpMethod": method,
            "apiId": "1234567890",
            "protocol": "HTTP/1.1",
        },
    }


class FakeContext:
    function_name = "ApiFunction"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:ApiFunction"
    aws_request_id = "req-1"

    def get_remaining_time_in_millis(self) -> int:
        return 29_000


def route_of(method: str, path: str) -> tuple[str, dict[str, str] | None]:
    """(resource, pathParameters) as API Gateway fills them for this request."""
    for route in ROUTES:
        pattern = "^" + re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(route.path)) + "$"
        match = re.match(pattern, path)
        if route.method == method and match:
            return route.path, match.groupdict() or None
    return "/{proxy+}", {"proxy": path.lstrip("/")}


@dataclass
class Answer:
    status: int
    body: Any
    headers: dict[str, str]


def call(
    method: str,
    path: str,
    body: dict[str, Any] | None = None,
    *,
    query: dict[str, str] | None = None,
    headers: dict[str, str] | None = None,
    raw_body: str | None = None,
) -> Answer:
    from handlers.api import handler

    resource, params = route_of(method, path)
    event = apigw_event(
        method, path, resource, body, params, query=query, headers=headers, raw_body=raw_body
    )
    response = handler(event, FakeContext())
    answer_headers = dict(response.get("headers") or {})
    for name, values in (response.get("multiValueHeaders") or {}).items():
        answer_headers[name] = ",".join(values)
    assert answer_headers["Content-Type"] == "application/json"
    return Answer(response["statusCode"], json.loads(response["body"]), answer_headers)


def poll(what: Callable[[], Answer], until: Callable[[Answer], bool]) -> Answer:
    deadline = time.monotonic() + POLL_SECONDS
    while True:
        answer = what()
        if until(answer):
            return answer
        assert time.monotonic() < deadline, f"gave up waiting; last answer: {answer}"
        time.sleep(0.1)


def run_status(run_id: str, status: str) -> Answer:
    return poll(lambda: call("GET", f"/runs/{run_id}"), lambda a: a.body["status"] == status)


def idempotency_records(stack: EmbeddedStack) -> list[dict[str, Any]]:
    """Idempotency-Key records: their own table, one partition per key."""
    return table_items(stack, table=LOCAL_IDEMPOTENCY_TABLE)


def table_items(
    stack: EmbeddedStack, table: str | None = None, **match: str
) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"TableName": table or stack.clients.table}
    while True:
        page = stack.clients.dynamodb.scan(**kwargs)
        items += page["Items"]
        if "LastEvaluatedKey" not in page:
            break
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    return [i for i in items if all(i.get(k, {}).get("S") == v for k, v in match.items())]


# ---- starting runs -----------------------------------------------------------------------


def test_a_run_that_finishes_inline_answers_200_with_the_result(stack: EmbeddedStack) -> None:
    answer = call("POST", "/agents/orders/runs", {"input": "My grinder broke", "wait_seconds": 10})
    assert answer.status == 200, answer
    result = answer.body
    assert result["status"] == "succeeded" and result["agent"] == "orders"
    assert result["result"] == {
        "order_id": "ORD-1001",
        "status": "delivered",
        "item": "Espresso grinder",
    }
    assert [c["tool_name"] for c in result["tool_calls"]] == ["lookup_order"]
    assert result["turns_used"] == 2 and result["tokens_input"] > 0
    assert call("GET", f"/runs/{result['run_id']}").body == result


def test_a_run_not_finished_inline_answers_202_and_the_state_machine_finishes_it(
    stack: EmbeddedStack,
) -> None:
    answer = call(
        "POST", "/agents/orders/runs", {"input": "Broken", "wait_seconds": 0, "session_id": "s-1"}
    )
    assert answer.status == 202, answer
    assert set(answer.body) == {"run_id", "agent", "session_id", "status"}
    assert answer.body["agent"] == "orders" and answer.body["session_id"] == "s-1"
    assert answer.body["status"] == "running"
    done = run_status(answer.body["run_id"], "succeeded")
    assert done.body["result"]["status"] == "delivered"
    assert stack.execution(answer.body["run_id"])["status"] in {"RUNNING", "SUCCEEDED"}


def test_events_page_after_a_sequence_number(stack: EmbeddedStack) -> None:
    run_id = call("POST", "/agents/orders/runs", {"input": "hi", "wait_seconds": 10}).body["run_id"]
    everything = call("GET", f"/runs/{run_id}/events")
    assert everything.status == 200 and everything.body["run_id"] == run_id
    seqs = [e["seq"] for e in everything.body["events"]]
    assert seqs == sorted(seqs) and len(seqs) >= 4
    assert everything.body["events"][0]["type"] == "run_started"
    assert everything.body["next_after"] == seqs[-1]

    first = call("GET", f"/runs/{run_id}/events", query={"limit": "2"})
    assert [e["seq"] for e in first.body["events"]] == seqs[:2]
    after = first.body["next_after"]
    rest = call("GET", f"/runs/{run_id}/events", query={"after": str(after), "limit": "500"})
    assert [e["seq"] for e in rest.body["events"]] == seqs[2:]
    end = call("GET", f"/runs/{run_id}/events", query={"after": str(seqs[-1])})
    assert end.body["events"] == [] and end.body["next_after"] == seqs[-1]


def test_list_agents(stack: EmbeddedStack) -> None:
    answer = call("GET", "/agents")
    assert answer.status == 200
    names = [a["name"] for a in answer.body["agents"]]
    assert names == [
        "support",
        "researcher",
        "orders",
        "triage",
        "shipping",
        "billing",
        "analyst",
        "helpdesk",
        "assistant",
    ]
    support = answer.body["agents"][0]
    assert support["model"] == "demo-support" and "order" in support["description"]


# ---- people in the loop ------------------------------------------------------------------


def test_billing_waits_for_approval_then_finishes(stack: EmbeddedStack) -> None:
    started = call("POST", "/agents/billing/runs", {"input": "Refund ORD-1001", "wait_seconds": 0})
    assert started.status == 202
    run_id = started.body["run_id"]
    waiting = poll(
        lambda: call("GET", f"/runs/{run_id}"),
        lambda a: a.body["status"] == "awaiting_approval" and bool(a.body.get("pending_approval")),
    )
    (pending,) = waiting.body["pending_approval"]
    assert pending["tool_name"] == "issue_refund"

    decided = call(
        "POST",
        f"/runs/{run_id}/approval",
        {"approved": True, "tool_call_id": pending["tool_call_id"], "reason": "looks right"},
    )
    assert decided.status == 200, decided
    assert decided.body["status"] in {"running", "succeeded"}
    done = run_status(run_id, "succeeded")
    assert done.body["result"] == "Refund RF-1001 of 189.00 EUR issued."
    # Run on its own, billing has no supervisor: its request_help is refused, not run.
    calls = {c["tool_name"]: c["success"] for c in done.body["tool_calls"]}
    assert calls == {"issue_refund": True, "request_help": False}

    again = call("POST", f"/runs/{run_id}/approval", {"approved": True})
    assert again.status == 409 and again.body["status"] == "succeeded"


def test_approval_on_a_run_that_is_not_waiting_is_409_with_its_status(
    stack: EmbeddedStack,
) -> None:
    run_id = call("POST", "/agents/orders/runs", {"input": "hi"}).body["run_id"]
    answer = call("POST", f"/runs/{run_id}/approval", {"approved": False})
    assert answer.status == 409
    assert answer.body["error_code"] == "WRONG_STATE" and answer.body["status"] == "succeeded"


def test_triage_asks_and_the_reply_lets_it_finish(stack: EmbeddedStack) -> None:
    started = call(
        "POST", "/agents/triage/runs", {"input": "Where is my order?", "wait_seconds": 10}
    )
    assert started.status == 202 and started.body["status"] == "awaiting_input"
    run_id = started.body["run_id"]
    asking = call("GET", f"/runs/{run_id}")
    assert "order id" in asking.body["clarification"]["question"]

    answered = call("POST", f"/runs/{run_id}/reply", {"input": "ORD-1002"})
    assert answered.status == 200 and answered.body["status"] in {"running", "succeeded"}
    done = run_status(run_id, "succeeded")
    assert "ORD-1002" in done.body["result"]

    late = call("POST", f"/runs/{run_id}/reply", {"input": "ORD-1002"})
    assert late.status == 409 and late.body["status"] == "succeeded"


def test_cancel_a_waiting_run(stack: EmbeddedStack) -> None:
    run_id = call("POST", "/agents/triage/runs", {"input": "Help", "wait_seconds": 10}).body[
        "run_id"
    ]
    cancelled = call("POST", f"/runs/{run_id}/cancel")
    assert cancelled.status == 200
    assert cancelled.body["status"] == "cancelled" and cancelled.body["error_code"] == "CANCELLED"
    assert call("GET", f"/runs/{run_id}").body["status"] == "cancelled"
    twice = call("POST", f"/runs/{run_id}/cancel")
    assert twice.status == 409 and twice.body["status"] == "cancelled"


# ---- Idempotency-Key -----------------------------------------------------------------------


def test_a_retried_start_with_the_same_idempotency_key_gets_the_first_answer(
    stack: EmbeddedStack,
) -> None:
    heads = len(table_items(stack, sk="HEAD"))
    records = {r["id"]["S"] for r in idempotency_records(stack)}
    body = {"input": "Broken grinder", "wait_seconds": 0, "session_id": "idem-1"}
    key = {"Idempotency-Key": "retry-me-1"}
    first = call("POST", "/agents/orders/runs", body, headers=key)
    second = call("POST", "/agents/orders/runs", body, headers=key)
    assert first.status == second.status == 202
    assert second.body == first.body
    assert len(table_items(stack, sk="HEAD")) == heads + 1  # one run, not two
    (record,) = [r for r in idempotency_records(stack) if r["id"]["S"] not in records]
    assert record["id"]["S"].startswith("StartRun#") and record["status"]["S"] == "COMPLETED"
    assert time.time() + 23 * 3600 < int(record["expiration"]["N"]) < time.time() + 25 * 3600
    assert not table_items(stack, pk="IDEMPOTENCY")  # nothing in the runs' table

    # The same key for a different request is the caller's mistake, not a replay.
    other = call("POST", "/agents/orders/runs", {**body, "input": "Other"}, headers=key)
    assert other.status == 422 and other.body["field"] == "Idempotency-Key"
    assert len(table_items(stack, sk="HEAD")) == heads + 1
    run_status(first.body["run_id"], "succeeded")


def test_a_finished_runs_replay_is_its_result(stack: EmbeddedStack) -> None:
    body = {"input": "Broken grinder", "wait_seconds": 10}
    key = {"Idempotency-Key": "retry-me-2"}
    first = call("POST", "/agents/orders/runs", body, headers=key)
    second = call("POST", "/agents/orders/runs", body, headers=key)
    assert first.status == second.status == 200
    assert second.body == first.body and first.body["status"] == "succeeded"
    # Keys belong to their caller: another caller's identical key starts its own run.
    from handlers.api import handler

    event = apigw_event("POST", "/agents/orders/runs", "/agents/{agent}/runs", body)
    event["headers"].update(key)
    event["requestContext"]["identity"]["userArn"] = "arn:aws:iam::123456789012:user/other"
    theirs = handler(event, FakeContext())
    assert json.loads(theirs["body"])["run_id"] != first.body["run_id"]


def test_a_retry_while_the_first_request_still_runs_is_409(stack: EmbeddedStack) -> None:
    """The first request's service.start retries itself, as a client would whose first
    request timed out while the run was still being started."""
    import handlers.api

    retried: list[tuple[int, dict[str, Any]]] = []

    class Impatient:
        engine = stack.service.engine

        def start(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, Any]]:
            try:
                handlers.api.start_run(*request)
            except Exception as exc:
                retried.append(handlers.api.error_answer(exc))
            return stack.service.start(*args, **kwargs)

    body = {"input": "x", "session_id": None, "wait_seconds": 0}
    request = ("orders", body, "k-409", "me", FakeContext())
    handlers.api.configure(Impatient())
    try:
        status, first = handlers.api.start_run(*request)
    finally:
        handlers.api.configure(stack.service)
    assert status == 202 and first["status"] == "running"
    (answer,) = retried
    assert answer[0] == 409 and answer[1]["error_code"] == "IDEMPOTENCY_KEY_IN_USE"
    assert answer[1]["field"] == "Idempotency-Key" and "status" not in answer[1]
    assert handlers.api.start_run(*request) == (status, first)  # done: a retry gets its answer


def test_without_the_header_no_idempotency_record_is_written(stack: EmbeddedStack) -> None:
    records = len(idempotency_records(stack))
    one = call("POST", "/agents/orders/runs", {"input": "a", "wait_seconds": 0})
    two = call("POST", "/agents/orders/runs", {"input": "a", "wait_seconds": 0})
    assert one.body["run_id"] != two.body["run_id"]
    assert len(idempotency_records(stack)) == records


# ---- the caller's mistakes -----------------------------------------------------------------


def test_unknown_agent_is_404(stack: EmbeddedStack) -> None:
    answer = call("POST", "/agents/nobody/runs", {"input": "hi"})
    assert answer.status == 404
    assert answer.body["error_code"] == "NOT_FOUND" and answer.body["field"] == "agent"
    # With a key too, and the failed attempt leaves no record: a corrected retry may run.
    records = len(idempotency_records(stack))
    keyed = call(
        "POST", "/agents/nobody/runs", {"input": "hi"}, headers={"Idempotency-Key": "k-404"}
    )
    assert keyed.status == 404
    assert len(idempotency_records(stack)) == records


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("GET", "/runs/no-such-run", None),
        ("GET", "/runs/no-such-run/events", None),
        ("POST", "/runs/no-such-run/approval", {"approved": True}),
        ("POST", "/runs/no-such-run/reply", {"input": "x"}),
        ("POST", "/runs/no-such-run/cancel", None),
    ],
)
def test_unknown_run_is_404(
    stack: EmbeddedStack, method: str, path: str, body: dict[str, Any] | None
) -> None:
    answer = call(method, path, body)
    assert answer.status == 404
    assert (
        answer.body["error_code"] == "RUN_NOT_FOUND"
        and "no-such-run" in answer.body["error_message"]
    )


@pytest.mark.parametrize(
    ("body", "raw", "field"),
    [
        ({"wait_seconds": 1}, None, "input"),
        ({"input": ""}, None, "input"),
        ({"input": 42}, None, "input"),
        ({"input": "hi", "wait_seconds": 99}, None, "wait_seconds"),
        ({"input": "hi", "wait_seconds": -1}, None, "wait_seconds"),
        ({"input": "hi", "wait_seconds": "5"}, None, "wait_seconds"),
        ({"input": "hi", "session_id": "../etc"}, None, "session_id"),
        ({"input": "hi", "colour": "blue"}, None, "colour"),
        (None, '{"input": "hi",', "body"),
        (None, '{"input": NaN}', "body"),
        (None, '["input"]', "body"),
        (None, None, "body"),
    ],
    ids=[
        "missing-input",
        "empty-input",
        "input-not-a-string",
        "wait-too-long",
        "wait-negative",
        "wait-a-string",
        "session-id-pattern",
        "unknown-field",
        "invalid-json",
        "nan",
        "not-an-object",
        "no-body",
    ],
)
def test_a_bad_start_body_is_400_naming_the_field(
    stack: EmbeddedStack, body: dict[str, Any] | None, raw: str | None, field: str
) -> None:
    answer = call("POST", "/agents/orders/runs", body, raw_body=raw)
    assert answer.status == 400, answer
    assert answer.body["error_code"] == "INVALID_REQUEST"
    assert answer.body["field"] == field
    assert answer.body["error_message"].startswith(f"{field}:")


@pytest.mark.parametrize(
    ("path", "body", "query", "field"),
    [
        ("/runs/r/approval", {"approved": "yes"}, None, "approved"),
        ("/runs/r/approval", {}, None, "approved"),
        ("/runs/r/approval", {"approved": True, "edited_inputs": []}, None, "edited_inputs"),
        ("/runs/r/approval", {"approved": True, "note": 1}, None, "note"),
        ("/runs/r/reply", {"input": None}, None, "input"),
        ("/runs/r/events", None, {"limit": "501"}, "limit"),
        ("/runs/r/events", None, {"limit": "0"}, "limit"),
        ("/runs/r/events", None, {"after": "soon"}, "after"),
    ],
)
def test_other_bad_requests_are_400_naming_the_field(
    stack: EmbeddedStack,
    path: str,
    body: dict[str, Any] | None,
    query: dict[str, str] | None,
    field: str,
) -> None:
    method = "GET" if path.endswith("/events") else "POST"
    answer = call(method, path, body, query=query)
    assert answer.status == 400, answer
    assert answer.body["field"] == field


def test_a_binary_body_that_is_not_text_is_400(stack: EmbeddedStack) -> None:
    from handlers.api import handler

    event = apigw_event("POST", "/agents/orders/runs", "/agents/{agent}/runs")
    event.update(body=base64.b64encode(b"\xff\xfe{").decode(), isBase64Encoded=True)
    response = handler(event, FakeContext())
    assert response["statusCode"] == 400 and json.loads(response["body"])["field"] == "body"


def test_a_bad_idempotency_key_is_400(stack: EmbeddedStack) -> None:
    answer = call(
        "POST", "/agents/orders/runs", {"input": "hi"}, headers={"Idempotency-Key": "k" * 300}
    )
    assert answer.status == 400 and answer.body["field"] == "Idempotency-Key"


def test_an_unknown_route_is_404_in_the_error_shape(stack: EmbeddedStack) -> None:
    answer = call("GET", "/nope")
    assert answer.status == 404 and answer.body["error_code"] == "NOT_FOUND"
    assert call("DELETE", "/runs/r").status == 404


def test_an_unexpected_error_is_500_without_internals(
    stack: EmbeddedStack, caplog: pytest.LogCaptureFixture
) -> None:
    import handlers.api

    class Broken:
        engine = stack.service.engine

        def get(self, run_id: str) -> dict[str, Any]:
            raise RuntimeError("secret connection string postgres://admin:hunter2@db")

    handlers.api.configure(Broken())
    powertools_logger = logging.getLogger("agentfn")  # Powertools' logger does not propagate
    powertools_logger.addHandler(caplog.handler)
    try:
        answer = call("GET", "/runs/r")
    finally:
        powertools_logger.removeHandler(caplog.handler)
        handlers.api.configure(stack.service)
    assert answer.status == 500
    assert answer.body == {
        "error_code": "INTERNAL",
        "error_message": "internal error (request req-1)",
    }
    assert "hunter2" in caplog.text  # logged for the operator, not returned to the caller


# ---- the OpenAPI document --------------------------------------------------------------------


def test_openapi_document_describes_every_route_with_its_request_model(
    stack: EmbeddedStack,
) -> None:
    answer = call("GET", "/openapi.json")
    assert answer.status == 200
    document = answer.body
    assert document["openapi"].startswith("3.")
    served = {(m.upper(), p) for p, ops in document["paths"].items() for m in ops}
    assert served == {(r.method, r.path) for r in ROUTES}
    operations = {
        op["operationId"]: op for ops in document["paths"].values() for op in ops.values()
    }
    assert set(operations) == {r.name for r in ROUTES}
    schemas = document["components"]["schemas"]
    for name, model in [
        ("StartRun", "StartRunRequest"),
        ("Approve", "ApprovalRequest"),
        ("Reply", "ReplyRequest"),
    ]:
        ref = operations[name]["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        assert ref.endswith(f"/{model}")
        assert schemas[model]["additionalProperties"] is False
    start = schemas["StartRunRequest"]
    assert start["required"] == ["input"]
    assert start["properties"]["wait_seconds"]["maximum"] == 25
    headers = [p["name"] for p in operations["StartRun"]["parameters"] if p["in"] == "header"]
    assert headers == ["Idempotency-Key"]
    query = {p["name"] for p in operations["GetRunEvents"]["parameters"] if p["in"] == "query"}
    assert query == {"after", "limit", "wait"}
    assert "422" not in operations["GetRun"]["responses"]  # bad requests answer 400 here


# ---- the step handler ------------------------------------------------------------------------


def test_step_handler_rejects_an_unknown_action_with_a_short_error(stack: EmbeddedStack) -> None:
    from handlers.step import StepFailed, handler_for

    handler = handler_for(stack.step_services["orders"])
    with pytest.raises(StepFailed) as failed:  # the state machine's catch marks the run failed
        handler({"action": "explode" * 1000, "run_id": "r"}, FakeContext())
    assert "unknown action" in str(failed.value) and len(str(failed.value)) <= 1000


def test_the_first_advance_gets_loops_and_function_from_the_handler() -> None:
    """The state machine's Start task sends the run id alone (no Init Pass state any more):
    the handler supplies `loops` 0 and the function it was invoked by; a later task's values
    are kept."""
    from handlers.step import with_defaults
    from infra.local.local_lambda import LocalContext

    context = LocalContext("agentfn-local-orders")
    first = {"action": "advance", "run_id": "r"}
    assert with_defaults(first, context) == {
        **first,
        "loops": 0,
        "function": "arn:aws:lambda:us-east-1:123456789012:function:agentfn-local-orders",
    }
    assert first == {"action": "advance", "run_id": "r"}  # the event itself is left alone
    later = {"action": "advance", "run_id": "r", "loops": 7, "function": "agentfn-x-billing"}
    assert with_defaults(later, context) == later


# ---- cold start ------------------------------------------------------------------------------

HEAVY = ("yaml", "infra", "moto", "jsonschema", "mcp", "httpx", "boto3")


@pytest.mark.parametrize("module", ["handlers.step", "handlers.api"])
def test_handler_import_pulls_in_nothing_heavy(module: str) -> None:
    """Cold start guard: a handler import must not drag in build-time or heavy modules."""
    code = (
        f"import sys, json; import {module}; "
        f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    loaded = set(json.loads(out.stdout))
    assert not loaded & set(HEAVY), loaded & set(HEAVY)


def test_the_api_resolver_is_built_on_first_use_not_at_import() -> None:
    """Powertools and pydantic load with the first request (or at init when prewarmed)."""
    code = (
        "import sys, json; import handlers.api; "
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    loaded = set(json.loads(out.stdout))
    assert not loaded & {"aws_lambda_powertools", "pydantic"}
