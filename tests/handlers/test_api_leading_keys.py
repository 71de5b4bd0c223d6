"""The API function's DynamoDB grant is scoped with `dynamodb:LeadingKeys` (infra.sam.grants:
RUN#, SES#, WF#). Scoping can break the API in a way no template test sees, so: drive the API
handler through every kind of request on the embedded stack (moto), record each DynamoDB
request the API's own code makes (not the agent and workflow functions it runs), and check
each one — its IAM action, table and partition key — against the API role as CloudFormation
would deploy it. Then the role refuses what the API never needs."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import botocore.client
import pytest

from infra.local.aws import LOCAL_IDEMPOTENCY_TABLE
from infra.local.embedded_stack import EmbeddedStack
from infra.sam.template import build_template
from runtime.spec import AgentfnSpec
from tests.handlers.test_handlers import call, poll, run_status
from tests.infra.cfn import allowed, concrete, role_statements, sam_transform

Request = tuple[str, str, str]  # IAM action, table, partition key

#: What DynamoDB checks for each item of a transaction or batch (IAM has no action of its
#: own for TransactWriteItems/TransactGetItems: each item is authorized as this action).
_TRANSACT = {"Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem",
             "ConditionCheck": "ConditionCheckItem", "Get": "GetItem"}  # fmt: skip


def _in_api_code() -> bool:
    """Whether the current call comes from the API handler itself, not from an agent or a
    workflow function that the embedded stack runs in process on the API's behalf."""
    frame = sys._getframe(2)
    api = False
    while frame is not None:
        path = frame.f_code.co_filename
        if path.endswith(("handlers/step.py", "handlers/workflow.py")):
            return False
        api = api or path.endswith("handlers/api.py")
        frame = frame.f_back  # type: ignore[assignment]
    return api


def _key(item: dict[str, Any]) -> str:
    value = item.get("pk") or item.get("id")
    assert value is not None, item
    return str(value["S"])


def _requests(operation: str, params: dict[str, Any]) -> list[Request]:
    if operation in ("GetItem", "DeleteItem", "UpdateItem"):
        return [(operation, params["TableName"], _key(params["Key"]))]
    if operation == "PutItem":
        return [(operation, params["TableName"], _key(params["Item"]))]
    if operation == "Query":
        assert "IndexName" not in params, params  # the API reads no index
        condition = params["KeyConditionExpression"]
        assert condition.startswith("pk = :pk"), condition
        return [(operation, params["TableName"], params["ExpressionAttributeValues"][":pk"]["S"])]
    if operation in ("TransactWriteItems", "TransactGetItems"):
        found = []
        for entry in params["TransactItems"]:
            ((kind, item),) = entry.items()
            key = item.get("Key") or item.get("Item")
            found.append((_TRANSACT[kind], item["TableName"], _key(key)))
        return found
    raise AssertionError(f"the API made a DynamoDB request this test cannot check: {operation}")


@pytest.fixture(scope="module")
def recorded(stack: EmbeddedStack) -> Iterator[list[Request]]:
    seen: list[Request] = []
    original = botocore.client.BaseClient._make_api_call

    def record(client: Any, operation: str, params: dict[str, Any]) -> Any:
        if client.meta.service_model.service_name == "dynamodb" and _in_api_code():
            seen.extend(_requests(operation, params))
        return original(client, operation, params)

    botocore.client.BaseClient._make_api_call = record  # type: ignore[method-assign]
    try:
        _every_kind_of_request()
    finally:
        botocore.client.BaseClient._make_api_call = original  # type: ignore[method-assign]
    yield seen


def _every_kind_of_request() -> None:
    """Inline and background runs, reads, events, approval, reply, cancel, the agent-scoped
    paths, Idempotency-Key replays, and a workflow run with its approval."""
    done = call("POST", "/agents/orders/runs", {"input": "My grinder broke", "wait_seconds": 10})
    assert done.status == 200, done
    run = done.body["run_id"]
    for path in (f"/runs/{run}", f"/runs/{run}/events", f"/agents/orders/runs/{run}", "/agents"):
        assert call("GET", path).status == 200, path
    key = {"Idempotency-Key": "leading-keys-1"}
    body = {"input": "Broken", "wait_seconds": 0, "session_id": "s-lk"}
    first = call("POST", "/agents/orders/runs", body, headers=key)
    assert call("POST", "/agents/orders/runs", body, headers=key).body == first.body
    run_status(first.body["run_id"], "succeeded")

    billing = call("POST", "/agents/billing/runs", {"input": "Refund ORD-1001", "wait_seconds": 0})
    refund = billing.body["run_id"]
    poll(lambda: call("GET", f"/runs/{refund}"), lambda a: a.body["status"] == "awaiting_approval")
    decided = call("POST", f"/agents/billing/runs/{refund}/approval", {"approved": True})
    assert decided.status == 200, decided
    run_status(refund, "succeeded")

    asked = call("POST", "/agents/triage/runs", {"input": "Where is my order?", "wait_seconds": 10})
    assert asked.body["status"] == "awaiting_input", asked
    reply = call("POST", f"/runs/{asked.body['run_id']}/reply", {"input": "ORD-1002"})
    assert reply.status == 200, reply
    waiting = call("POST", "/agents/triage/runs", {"input": "Help", "wait_seconds": 10})
    assert call("POST", f"/runs/{waiting.body['run_id']}/cancel").status == 200

    flow = call("POST", "/workflows/damaged_order/runs", {"input": {"order_id": "ORD-1001"}})
    assert flow.status == 202, flow
    path = f"/workflow-runs/{flow.body['workflow_run_id']}"
    poll(lambda: call("GET", path), lambda a: a.body["status"] != "running" or _waits(a.body))
    assert call("POST", f"{path}/cancel").status in (200, 409)


def _waits(workflow_run: dict[str, Any]) -> bool:
    return any(r["status"] == "awaiting_approval" for s in workflow_run["steps"] for r in s["runs"])


@pytest.fixture(scope="module")
def api_role(demo_spec: AgentfnSpec) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The deployed API role's statements and the deployed ARN of each local table."""
    deployed = sam_transform(build_template(demo_spec))
    resolve = concrete(deployed)
    arns = {
        "agentfn-local": resolve({"Fn::GetAtt": ["StateTable", "Arn"]}),
        LOCAL_IDEMPOTENCY_TABLE: resolve({"Fn::GetAtt": ["IdempotencyTable", "Arn"]}),
    }
    return role_statements(deployed, "ApiFunctionRole"), arns


def test_every_request_the_api_makes_is_allowed_by_its_scoped_role(
    recorded: list[Request],
    api_role: tuple[list[dict[str, Any]], dict[str, str]],
    stack: EmbeddedStack,
) -> None:
    statements, arns = api_role
    arns = {stack.clients.table: arns["agentfn-local"], **arns}
    assert len(recorded) > 50
    prefixes = {key.partition("#")[0] for _, table, key in recorded if table == stack.clients.table}
    assert {"RUN", "SES", "WF"} <= prefixes  # runs, sessions and a workflow run were reached
    for action, table, key in recorded:
        context = {"dynamodb:LeadingKeys": [key]}
        assert allowed(statements, f"dynamodb:{action}", arns[table], context), (action, key)


def test_the_api_role_refuses_partitions_the_api_never_uses(
    api_role: tuple[list[dict[str, Any]], dict[str, str]],
) -> None:
    statements, arns = api_role
    table = arns["agentfn-local"]
    for key in ("CONN#abc", "SWEEP#03", "LEASE#x", "other", "run#lowercase"):
        for action in ("GetItem", "PutItem", "Query"):
            context = {"dynamodb:LeadingKeys": [key]}
            assert not allowed(statements, f"dynamodb:{action}", table, context), (action, key)
    # WATCH# items: the live grant lets it find and forget watchers, nothing more.
    watch = {"dynamodb:LeadingKeys": ["WATCH#abc"]}
    assert allowed(statements, "dynamodb:Query", table, watch)
    assert not allowed(statements, "dynamodb:PutItem", table, watch)
    assert not allowed(statements, "dynamodb:Scan", table)
