"""The A2A and MCP routes as deployed: API Gateway REST proxy events for handlers.api
(the same function as the REST routes) over the embedded stack, whose state machines really
run. The answers are parsed with the official SDKs' own types (a2a-sdk's protobuf JSON
mapping, mcp_types), so what is checked is what their clients accept."""

from __future__ import annotations

import json
import uuid
from typing import Any

from a2a.types import a2a_pb2 as pb
from google.protobuf import json_format

from infra.local.embedded_stack import EmbeddedStack
from runtime.routes import PROTOCOL_ROUTES
from tests.handlers.test_handlers import FakeContext, apigw_event

CARD = "/a2a/{agent}/.well-known/agent-card.json"


def proxy(method: str, path: str, resource: str, body: Any = None, **kw: Any) -> dict[str, Any]:
    from handlers.api import handler

    agent = path.split("/")[2] if path.startswith("/a2a/") else None
    event = apigw_event(method, path, resource, body, {"agent": agent} if agent else None, **kw)
    answer: dict[str, Any] = handler(event, FakeContext())
    return answer


def rpc(agent: str, method: str, params: Any, request_id: int = 1) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    answer = proxy("POST", f"/a2a/{agent}", "/a2a/{agent}", body, headers={"A2A-Version": "1.0"})
    assert answer["statusCode"] == 200, answer
    found: dict[str, Any] = json.loads(answer["body"])
    assert found["jsonrpc"] == "2.0" and found["id"] == request_id
    return found


def send(agent: str, text: str | None = None, configuration: Any = None, **message: Any) -> pb.Task:
    """A SendMessage as the SDK's client sends it: each message with an id of its own."""
    parts = [{"text": text}] if text is not None else message.pop("parts")
    message.setdefault("messageId", str(uuid.uuid4()))
    params: dict[str, Any] = {"message": {"role": "ROLE_USER", "parts": parts, **message}}
    if configuration is not None:
        params["configuration"] = configuration
    answer = rpc(agent, "SendMessage", params)
    assert "result" in answer, answer
    return json_format.ParseDict(answer["result"], pb.SendMessageResponse()).task


def test_the_routes_are_the_templates() -> None:
    assert [(r.method, r.path) for r in PROTOCOL_ROUTES] == [
        ("GET", CARD),
        ("POST", "/a2a/{agent}"),
        ("POST", "/mcp"),
    ]


def test_the_card_names_the_agent_its_endpoint_on_the_stage_and_the_apis_auth(
    stack: EmbeddedStack,
) -> None:
    path = CARD.replace("{agent}", "billing")
    answer = proxy("GET", path, CARD)
    assert answer["statusCode"] == 200
    card = json_format.ParseDict(
        json.loads(answer["body"]), pb.AgentCard(), ignore_unknown_fields=True
    )
    assert card.name == "billing" and "refunds" in card.description
    (interface,) = card.supported_interfaces
    assert interface.url == "https://abc.execute-api.us-east-1.amazonaws.com/v1/a2a/billing"
    assert (interface.protocol_binding, interface.protocol_version) == ("JSONRPC", "1.0")
    assert not card.capabilities.streaming  # API Gateway REST answers whole
    assert card.security_schemes["aws_sigv4"].http_auth_security_scheme.scheme == "AWS4-HMAC-SHA256"
    assert set(card.skills[0].tags) == {"lookup_order", "issue_refund"}

    missing = proxy("GET", CARD.replace("{agent}", "nobody"), CARD)
    assert missing["statusCode"] == 404 and json.loads(missing["body"])["field"] == "agent"


def test_send_message_answers_a_completed_task_with_the_structured_result(
    stack: EmbeddedStack,
) -> None:
    task = send("orders", "status of ORD-1001", contextId="a2a-session-1")
    assert task.status.state == pb.TASK_STATE_COMPLETED
    assert task.context_id == "a2a-session-1"
    (artifact,) = task.artifacts
    data = json_format.MessageToDict(artifact.parts[1].data)
    assert data["order_id"] == "ORD-1001" and data["status"] == "delivered"
    again = rpc("orders", "GetTask", {"id": task.id})
    fetched = json_format.ParseDict(again["result"], pb.Task())
    assert fetched.status.state == pb.TASK_STATE_COMPLETED and fetched.id == task.id


def test_an_approval_is_input_required_and_a_data_part_decides_it(stack: EmbeddedStack) -> None:
    task = send("billing", "Refund ORD-1001, it arrived broken")
    assert task.status.state == pb.TASK_STATE_INPUT_REQUIRED, task
    question = task.status.message
    data = json_format.MessageToDict(question.parts[1].data)
    (pending,) = data["pending_approval"]
    assert pending["tool_name"] == "issue_refund" and "edit" in pending["decisions"]
    assert "issue_refund" in question.parts[0].text

    refused = rpc(
        "billing",
        "SendMessage",
        {
            "message": {
                "messageId": "m-2",
                "role": "ROLE_USER",
                "taskId": task.id,
                "parts": [{"text": "yes"}],
            }
        },
    )
    assert refused["error"]["code"] == -32602 and "approved" in refused["error"]["message"]

    decision = {
        "approved": True,
        "reason": "broken on arrival",
        "tool_call_id": pending["tool_call_id"],
    }
    done = send("billing", parts=[{"data": decision}], taskId=task.id, contextId=task.context_id)
    assert done.status.state == pb.TASK_STATE_COMPLETED, done
    assert done.artifacts[0].parts[0].text == "Refund RF-1001 of 189.00 EUR issued."
    from handlers.api import the_service

    refund = [
        c for c in the_service().get(task.id)["tool_calls"] if c["tool_name"] == "issue_refund"
    ]
    assert refund[0]["decided_by"] == "arn:aws:iam::123456789012:user/tester"  # the signer

    finished = rpc(
        "billing",
        "SendMessage",
        {
            "message": {
                "messageId": "m-3",
                "role": "ROLE_USER",
                "taskId": task.id,
                "parts": [{"data": decision}],
            }
        },
    )
    assert finished["error"]["code"] == -32602 and "succeeded" in finished["error"]["message"]


def test_a_clarification_is_input_required_and_text_answers_it(stack: EmbeddedStack) -> None:
    task = send("triage", "My order is broken")
    assert task.status.state == pb.TASK_STATE_INPUT_REQUIRED, task
    data = json_format.MessageToDict(task.status.message.parts[1].data)
    assert data["kind"] == "clarification" and data["question"]
    done = send("triage", "ORD-1001", taskId=task.id)
    assert done.status.state in (pb.TASK_STATE_COMPLETED, pb.TASK_STATE_INPUT_REQUIRED)
    assert done.id == task.id


def test_cancel_task_cancels_the_run(stack: EmbeddedStack) -> None:
    task = send("billing", "Refund ORD-1001", configuration={"returnImmediately": True})
    assert task.status.state in (pb.TASK_STATE_WORKING, pb.TASK_STATE_INPUT_REQUIRED)
    cancelled = rpc("billing", "CancelTask", {"id": task.id})
    assert (
        json_format.ParseDict(cancelled["result"], pb.Task()).status.state == pb.TASK_STATE_CANCELED
    )
    again = rpc("billing", "CancelTask", {"id": task.id})
    assert again["error"]["code"] == -32002  # TaskNotCancelableError


def test_protocol_mistakes_are_json_rpc_errors_naming_what(stack: EmbeddedStack) -> None:
    bad_json = proxy("POST", "/a2a/orders", "/a2a/{agent}", raw_body="{not json")
    assert json.loads(bad_json["body"])["error"]["code"] == -32700
    assert rpc("orders", "message/send", {})["error"]["code"] == -32601  # A2A 0.3's name
    assert rpc("orders", "NoSuchMethod", {})["error"]["code"] == -32601
    unknown_field = rpc("orders", "SendMessage", {"message": {"bogus": 1}})
    assert unknown_field["error"]["code"] == -32602 and "bogus" in unknown_field["error"]["message"]
    no_parts = rpc("orders", "SendMessage", {"message": {"messageId": "x", "role": "ROLE_USER"}})
    assert "message.parts" in no_parts["error"]["message"]
    bad_context = rpc(
        "orders",
        "SendMessage",
        {
            "message": {
                "messageId": "x",
                "role": "ROLE_USER",
                "contextId": "../x",
                "parts": [{"text": "hi"}],
            }
        },
    )
    assert "contextId" in bad_context["error"]["message"]
    other = send("billing", "Refund ORD-1001", configuration={"returnImmediately": True})
    assert rpc("orders", "GetTask", {"id": other.id})["error"]["code"] == -32001  # not orders'
    rpc("billing", "CancelTask", {"id": other.id})
    old = proxy(
        "POST",
        "/a2a/orders",
        "/a2a/{agent}",
        {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}},
        headers={"A2A-Version": "0.3"},
    )
    assert json.loads(old["body"])["error"]["code"] == -32009  # VersionNotSupportedError


def mcp(body: dict[str, Any]) -> dict[str, Any]:
    headers = {
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-06-18",
    }
    answer = proxy("POST", "/mcp", "/mcp", body, headers=headers)
    assert answer["statusCode"] == 200, answer
    found: dict[str, Any] = json.loads(answer["body"])
    return found


def test_mcp_lists_the_agents_and_a_call_runs_one(stack: EmbeddedStack) -> None:
    import mcp_types

    listed = mcp({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})
    tools = mcp_types.ListToolsResult.model_validate(listed["result"]).tools
    workflows = {f"workflow_{name}" for name in stack.spec.workflows}
    assert {t.name for t in tools} == set(stack.spec.agents) | workflows
    assert all(t.input_schema["required"] == ["input"] for t in tools if t.name not in workflows)

    called = mcp(
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "orders", "arguments": {"input": "status of ORD-1001"}},
        }
    )
    result = mcp_types.CallToolResult.model_validate(called["result"])
    assert not result.is_error
    assert result.structured_content is not None
    assert result.structured_content["order_id"] == "ORD-1001"


def test_an_mcp_call_that_waits_for_a_person_names_the_run_and_how_to_decide(
    stack: EmbeddedStack,
) -> None:
    import mcp_types

    called = mcp(
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "billing", "arguments": {"input": "Refund ORD-1001"}},
        }
    )
    result = mcp_types.CallToolResult.model_validate(called["result"])
    assert not result.is_error and result.structured_content is not None
    run_id = result.structured_content["run_id"]
    text = result.content[0].text  # type: ignore[union-attr]
    assert f"/runs/{run_id}/approval" in text and "issue_refund" in text
    assert (
        result.structured_content["waiting"]["pending_approval"][0]["tool_name"] == "issue_refund"
    )
    from handlers.api import the_service

    the_service().cancel(run_id)

    bad = mcp(
        {
            "jsonrpc": "2.0",
            "id": 4,
            "method": "tools/call",
            "params": {"name": "orders", "arguments": {"input": "x", "extra": 1}},
        }
    )
    refused = mcp_types.CallToolResult.model_validate(bad["result"])
    assert refused.is_error and "arguments.extra" in refused.content[0].text  # type: ignore[union-attr]


def test_a_workflow_is_a_tool_whose_call_names_the_step_run_that_waits(
    stack: EmbeddedStack,
) -> None:
    import mcp_types

    called = mcp(
        {
            "jsonrpc": "2.0",
            "id": 5,
            "method": "tools/call",
            "params": {"name": "workflow_damaged_order", "arguments": {"order_id": "ORD-1001"}},
        }
    )
    result = mcp_types.CallToolResult.model_validate(called["result"])
    assert not result.is_error and result.structured_content is not None, result
    (waiting,) = result.structured_content["waiting"]
    assert waiting["agent"] == "billing" and waiting["status"] == "awaiting_approval"
    assert f"/runs/{waiting['run_id']}/approval" in result.content[0].text  # type: ignore[union-attr]
    from handlers.api_workflows import workflows

    workflows().cancel(result.structured_content["workflow_run_id"])

    bad = mcp(
        {
            "jsonrpc": "2.0",
            "id": 6,
            "method": "tools/call",
            "params": {"name": "workflow_damaged_order", "arguments": {"order_id": "nope"}},
        }
    )
    refused = mcp_types.CallToolResult.model_validate(bad["result"])
    assert refused.is_error and "order_id" in refused.content[0].text  # type: ignore[union-attr]


def test_a_retried_message_gets_the_first_messages_task_not_a_second_run(
    stack: EmbeddedStack,
) -> None:
    """A client that lost the answer sends the same message again (same messageId): a second
    run would ask for a second refund. It gets the first task, as it now is."""
    before = _runs_of("billing", stack)
    first = send("billing", "Refund ORD-1001, it arrived broken", messageId="refund-msg-1")
    assert first.status.state == pb.TASK_STATE_INPUT_REQUIRED
    again = send("billing", "Refund ORD-1001, it arrived broken", messageId="refund-msg-1")
    assert again.id == first.id and again.status.state == pb.TASK_STATE_INPUT_REQUIRED
    other = send("billing", "Refund ORD-1001, it arrived broken", messageId="refund-msg-2")
    assert other.id != first.id  # a new message is a new task

    assert _runs_of("billing", stack) - before == {first.id, other.id}

    reused = rpc(
        "billing",
        "SendMessage",
        {"message": {"messageId": "refund-msg-1", "role": "ROLE_USER",
                     "parts": [{"text": "Refund ORD-1002 instead"}]}},
    )  # fmt: skip
    assert reused["error"]["code"] == -32602, reused
    assert "refund-msg-1" in reused["error"]["message"]
    assert "different message" in reused["error"]["message"]


def test_the_same_message_id_from_another_caller_is_its_own_task(stack: EmbeddedStack) -> None:
    before = _runs_of("orders", stack)
    mine = send("orders", "status of ORD-1001", messageId="shared-id")
    message = {"messageId": "shared-id", "role": "ROLE_USER",
               "parts": [{"text": "status of ORD-1001"}]}  # fmt: skip
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}
    event = apigw_event("POST", "/a2a/orders", "/a2a/{agent}", body, {"agent": "orders"},
                        headers={"A2A-Version": "1.0"})  # fmt: skip
    event["requestContext"]["identity"]["userArn"] = "arn:aws:iam::123456789012:user/someone"
    from handlers.api import handler

    answer = handler(event, FakeContext())
    theirs = json_format.ParseDict(json.loads(answer["body"])["result"], pb.SendMessageResponse())
    assert theirs.task.id != mine.id
    assert _runs_of("orders", stack) - before == {mine.id, theirs.task.id}


def _runs_of(agent: str, stack: EmbeddedStack) -> set[str]:
    """The run ids of `agent` in the runs table (one HEAD item per run; the stack is the
    module's, so earlier tests' runs are there too)."""
    from runtime.naming import run_belongs_to

    items = stack.clients.dynamodb.scan(TableName=stack.clients.table)["Items"]
    runs = {i["pk"]["S"].removeprefix("RUN#") for i in items if i["sk"]["S"] == "HEAD"}
    return {run for run in runs if run_belongs_to(run, agent)}


def test_list_tasks_pages_a_contexts_tasks_newest_first(stack: EmbeddedStack) -> None:
    asked = [send("orders", f"status of ORD-100{i}", contextId="a2a-list-1") for i in (1, 2, 3)]
    send("orders", "status of ORD-1001", contextId="a2a-list-other")

    def listing(**params: Any) -> pb.ListTasksResponse:
        answer = rpc("orders", "ListTasks", {"contextId": "a2a-list-1", **params})
        assert "result" in answer, answer
        return json_format.ParseDict(answer["result"], pb.ListTasksResponse())

    whole = listing()
    assert [t.id for t in whole.tasks] == [t.id for t in reversed(asked)]
    assert whole.total_size == 3 and not whole.next_page_token
    assert all(not t.artifacts and t.status.state == pb.TASK_STATE_COMPLETED for t in whole.tasks)
    assert all(t.artifacts for t in listing(includeArtifacts=True).tasks)

    first = listing(pageSize=2)
    assert [t.id for t in first.tasks] == [asked[2].id, asked[1].id] and first.next_page_token
    rest = listing(pageSize=2, pageToken=first.next_page_token)
    assert [t.id for t in rest.tasks] == [asked[0].id] and not rest.next_page_token
    assert not listing(status="TASK_STATE_INPUT_REQUIRED").tasks
    assert listing(status="TASK_STATE_COMPLETED").total_size == 3


def test_list_tasks_refuses_what_it_cannot_answer_naming_the_field(stack: EmbeddedStack) -> None:
    for params, field in [
        ({}, "contextId"),
        ({"contextId": "c", "pageSize": 0}, "page size"),
        ({"contextId": "c", "pageSize": 101}, "page size"),
        ({"contextId": "c", "statusTimestampAfter": "2026-01-01T00:00:00Z"}, "statusTimestamp"),
        ({"contextId": "c", "pageToken": "bm90LWEtdGFzaw"}, "pageToken"),
    ]:
        answer = rpc("orders", "ListTasks", params)
        assert answer["error"]["code"] == -32602, (params, answer)
        assert field in answer["error"]["message"], (params, answer)
