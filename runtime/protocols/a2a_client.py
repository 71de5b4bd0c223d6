"""Asking a remote A2A agent (`remote_agents`), with the official a2a-sdk client.

One call is one request, never a wait in a loop: `check` sends the ask's message the first
time (blocking on the remote side up to `timeout`), then reads the task (`GetTask`) each
time the asking run is advanced again (the state machine's WaitForChildren times out after
`poll_interval`: Step Functions waits, not a Lambda). `answer` forwards a person's decision
or reply to a remote task that asked for input.

The request goes to the URL the spec names (a card built from it, not one fetched from the
remote: a card could point the credentials elsewhere), through the SSRF guard of HTTP tools
(runtime.tools.ssrf: loopback, private networks and metadata refused unless
`allow_private` lists them, every connection checked), with the spec's auth headers, whose
secrets are never sent on to another origin.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from runtime.spec.protocols import RemoteAgent
from runtime.store.base import ChildRun, RemoteTask
from runtime.structs import replace

MAX_ANSWER_CHARS = 50_000  # the answer is kept in the asking run's head until it is recorded
MAX_FAILURES = 3

Secrets = Callable[[str], str]


def _card(config: RemoteAgent) -> Any:
    from a2a.types import a2a_pb2 as pb

    interface = pb.AgentInterface(
        url=config.a2a, protocol_binding="JSONRPC", protocol_version="1.0"
    )
    return pb.AgentCard(
        name="remote",
        supported_interfaces=[interface],
        capabilities=pb.AgentCapabilities(streaming=False),
    )


async def _client(config: RemoteAgent, secrets: Secrets, http: Any) -> Any:
    from a2a.client import ClientConfig, create_client

    return await create_client(_card(config), ClientConfig(streaming=False, httpx_client=http))


def _guarded(config: RemoteAgent, secrets: Secrets) -> Any:
    from runtime.tools.http_tool import resolve_headers
    from runtime.tools.ssrf import Allowlist, guarded_client, precheck

    allow = Allowlist(config.allow_private)
    precheck(config.a2a, allow)
    http = guarded_client(allow, config.timeout)
    http.headers.update(resolve_headers(config.auth.headers, secrets).headers)
    return http


async def check(
    config: RemoteAgent, task: RemoteTask, text: str, message_id: str, secrets: Secrets
) -> RemoteTask:
    """The remote task as it is now: sent (the first time) or read again."""
    from a2a.types import a2a_pb2 as pb

    try:
        async with _guarded(config, secrets) as http:
            client = await _client(config, secrets, http)
            if not task.task_id:
                message = pb.Message(
                    message_id=message_id, role=pb.ROLE_USER, parts=[pb.Part(text=text)]
                )
                events = [
                    e async for e in client.send_message(pb.SendMessageRequest(message=message))
                ]
                last = events[-1] if events else None
                if last is not None and last.HasField("message"):  # answered without a task
                    return RemoteTask(state="TASK_STATE_COMPLETED", answer=_text(last.message))
                if last is None or not last.HasField("task"):
                    return RemoteTask(
                        error="the remote agent answered neither a task nor a message"
                    )
                return seen(last.task, task)
            found = await client.get_task(pb.GetTaskRequest(id=task.task_id))
            return seen(found, task)
    except Exception as exc:  # network, SSRF refusal, JSON-RPC error: said, never raised
        why = f"{type(exc).__name__}: {str(exc)[:300]}"
        if not task.task_id:  # the message was never taken: the ask fails now
            return RemoteTask(error=f"could not ask {config.a2a}: {why}")
        failures = task.failures + 1
        if failures >= MAX_FAILURES:
            return replace(task, error=f"lost the remote task: {why}")
        return replace(task, failures=failures, checked_at=time.time())


async def answer(
    config: RemoteAgent, task: RemoteTask, secrets: Secrets, *, data: Any = None, text: str = ""
) -> RemoteTask:
    """Continue a remote task that waits for input with a decision (data) or a reply (text)."""
    from a2a.types import a2a_pb2 as pb
    from google.protobuf import json_format

    part = pb.Part(text=text) if data is None else pb.Part()
    if data is not None:
        json_format.ParseDict(data, part.data)
    message = pb.Message(
        message_id=f"{task.task_id}-answer-{int(time.time() * 1000)}",
        role=pb.ROLE_USER,
        task_id=task.task_id,
        context_id=task.context_id,
        parts=[part],
    )
    request = pb.SendMessageRequest(message=message)
    request.configuration.return_immediately = True
    async with _guarded(config, secrets) as http:
        client = await _client(config, secrets, http)
        events = [e async for e in client.send_message(request)]
    last = events[-1] if events else None
    if last is not None and last.HasField("task"):
        return seen(last.task, task)
    return replace(task, question=None, state="TASK_STATE_WORKING")


def _text(message: Any) -> str:
    return "\n".join(p.text for p in message.parts if p.WhichOneof("content") == "text")


def _data(parts: Any) -> Any:
    from google.protobuf import json_format

    for part in parts:
        if part.WhichOneof("content") == "data":
            return json_format.MessageToDict(part.data)
    return None


def seen(found: Any, before: RemoteTask) -> RemoteTask:
    """What a remote task says, as the asking run keeps it."""
    from a2a.types import a2a_pb2 as pb

    state = pb.TaskState.Name(found.status.state)
    update: dict[str, Any] = {
        "task_id": found.id,
        "context_id": found.context_id,
        "state": state,
        "failures": 0,
        "checked_at": time.time(),
        "question": None,
    }
    message = found.status.message
    if found.status.state == pb.TASK_STATE_COMPLETED:
        parts = [p for a in found.artifacts for p in a.parts] or list(message.parts)
        data = _data(parts)
        text = "\n".join(p.text for p in parts if p.WhichOneof("content") == "text")
        answer = data if data is not None else text
        if len(str(answer)) > MAX_ANSWER_CHARS:
            answer = str(answer)[:MAX_ANSWER_CHARS] + " …[cut: over 50,000 characters]"
        update["answer"] = answer
    elif found.status.state in (
        pb.TASK_STATE_FAILED,
        pb.TASK_STATE_CANCELED,
        pb.TASK_STATE_REJECTED,
    ):
        update["error"] = f"the remote task is {state}: {_text(message)[:1000]}"
    elif found.status.state in (pb.TASK_STATE_INPUT_REQUIRED, pb.TASK_STATE_AUTH_REQUIRED):
        update["question"] = {"text": _text(message)[:4000], "data": _data(message.parts)}
    return replace(before, **update)


async def cancel(config: RemoteAgent, task: RemoteTask, secrets: Secrets) -> None:
    """Cancel a remote task (the asking run was cancelled); a task that already ended, or a
    remote that cannot be reached, is left as it is (said in the log, not raised)."""
    from a2a.types import a2a_pb2 as pb

    async with _guarded(config, secrets) as http:
        client = await _client(config, secrets, http)
        await client.cancel_task(pb.CancelTaskRequest(id=task.task_id))


def remote_view(ref: ChildRun) -> dict[str, Any]:
    """A remote ask as the asking run's result shows a child: what it waits for, in the
    shape of a local child's (pending_approval / clarification), so A2A, MCP and the REST
    API surface it as the run's own question."""
    task = ref.remote or RemoteTask()
    out: dict[str, Any] = {
        "run_id": ref.run_id,
        "agent": ref.agent,
        "remote_task_id": task.task_id,
        "status": "running",
    }
    if task.ended:
        out["status"] = "succeeded" if task.error is None else "failed"
    elif task.question is not None:
        data = task.question.get("data") or {}
        pending = data.get("pending_approval") if isinstance(data, dict) else None
        if pending:
            out["status"] = "awaiting_approval"
            out["pending_approval"] = pending
        else:
            out["status"] = "awaiting_input"
            question = task.question.get("text") or ""
            out["clarification"] = {"question": question, "tool_call_id": ref.tool_call_id}
    return out
