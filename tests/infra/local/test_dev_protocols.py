"""`agentfn dev` (a real subprocess on loopback) spoken to by the official clients: the
a2a-sdk client resolves an agent's card, sends messages (plain and streamed over SSE), gets
`input-required` for an approval and continues the task with the decision; the mcp client
lists the agents as tools over streamable HTTP and calls one."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.types import a2a_pb2 as pb
from google.protobuf import json_format

from tests.infra.local.test_dev_server import Dev, serve_dev


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dev]:
    yield from serve_dev(tmp_path_factory, "--no-reload")


def message(text: str | None = None, data: Any = None, **ids: str) -> pb.SendMessageRequest:
    part = pb.Part(text=text) if text is not None else pb.Part()
    if data is not None:
        json_format.ParseDict(data, part.data)
    # an id of its own per message, as a client sends it: a repeated id is a retry, and is
    # answered with the first message's task (handlers.a2a)
    msg = pb.Message(message_id=str(uuid.uuid4()), role=pb.ROLE_USER, parts=[part], **ids)
    return pb.SendMessageRequest(message=msg)


async def exchange(
    dev: Dev, agent: str, request: pb.SendMessageRequest, streaming: bool
) -> list[pb.StreamResponse]:
    async with httpx.AsyncClient(timeout=60) as http:
        config = ClientConfig(streaming=streaming, httpx_client=http)
        client = await create_client(f"{dev.api}/a2a/{agent}", config)
        return [event async for event in client.send_message(request)]


def last_task(events: list[pb.StreamResponse]) -> pb.Task:
    tasks = [e.task for e in events if e.HasField("task")]
    assert tasks, events
    return tasks[-1]


def test_the_sdk_client_reads_the_card_and_gets_a_completed_task(dev: Dev) -> None:
    from a2a.client import A2ACardResolver

    async def card() -> pb.AgentCard:
        async with httpx.AsyncClient(timeout=30) as http:
            return await A2ACardResolver(http, f"{dev.api}/a2a/orders").get_agent_card()

    resolved = asyncio.run(card())
    assert resolved.name == "orders"
    assert resolved.supported_interfaces[0].url == f"{dev.api}/a2a/orders"
    assert resolved.capabilities.streaming  # loopback: `agentfn dev` streams

    events = asyncio.run(exchange(dev, "orders", message("status of ORD-1001"), streaming=False))
    task = last_task(events)
    assert task.status.state == pb.TASK_STATE_COMPLETED
    data = json_format.MessageToDict(task.artifacts[0].parts[1].data)
    assert data["order_id"] == "ORD-1001" and data["status"] == "delivered"


@pytest.mark.parametrize("streaming", [False, True], ids=["polling", "sse"])
def test_an_approval_is_input_required_then_the_decision_completes_the_task(
    dev: Dev, streaming: bool
) -> None:
    events = asyncio.run(
        exchange(dev, "billing", message("Refund ORD-1001, it arrived broken"), streaming)
    )
    task = last_task(events)
    assert task.status.state == pb.TASK_STATE_INPUT_REQUIRED, task
    pending = json_format.MessageToDict(task.status.message.parts[1].data)["pending_approval"]
    assert [p["tool_name"] for p in pending] == ["issue_refund"]
    assert pending[0]["inputs"]["order_id"] == "ORD-1001"

    decision = message(
        data={"approved": True, "reason": "broken"}, task_id=task.id, context_id=task.context_id
    )
    events = asyncio.run(exchange(dev, "billing", decision, streaming))
    done = last_task(events)
    assert done.id == task.id
    assert done.status.state == pb.TASK_STATE_COMPLETED, done
    assert done.artifacts[0].parts[0].text == "Refund RF-1001 of 189.00 EUR issued."
    run = httpx.get(f"{dev.api}/runs/{task.id}", timeout=10).json()  # the task is the run
    refund = [c for c in run["tool_calls"] if c["tool_name"] == "issue_refund"]
    assert run["status"] == "succeeded" and [c["success"] for c in refund] == [True]


def test_the_mcp_client_lists_the_agents_and_calls_one(dev: Dev) -> None:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async def session() -> tuple[list[str], Any]:
        async with Client(streamable_http_client(f"{dev.api}/mcp")) as client:
            tools = await client.list_tools()
            result = await client.call_tool("orders", {"input": "status of ORD-1002"})
            return [t.name for t in tools.tools], result

    names, result = asyncio.run(session())
    assert {"orders", "billing", "triage", "support"} <= set(names)
    assert not result.is_error
    assert result.structured_content["order_id"] == "ORD-1002"
    assert "ORD-1002" in result.content[0].text


def test_the_sdk_client_lists_a_contexts_tasks(dev: Dev) -> None:
    context = f"sdk-list-{uuid.uuid4().hex[:8]}"
    for order in ("ORD-1001", "ORD-1002"):
        asyncio.run(
            exchange(dev, "orders", message(f"status of {order}", context_id=context), False)
        )

    async def listing() -> pb.ListTasksResponse:
        async with httpx.AsyncClient(timeout=60) as http:
            config = ClientConfig(streaming=False, httpx_client=http)
            client = await create_client(f"{dev.api}/a2a/orders", config)
            request = pb.ListTasksRequest(context_id=context, include_artifacts=True)
            return await client.list_tasks(request)

    found = asyncio.run(listing())
    assert found.total_size == 2 and len(found.tasks) == 2
    assert {t.context_id for t in found.tasks} == {context}
    orders = [
        json_format.MessageToDict(t.artifacts[0].parts[1].data)["order_id"] for t in found.tasks
    ]
    assert orders == ["ORD-1002", "ORD-1001"]  # newest first
