"""The A2A server of one agent: its agent card, and JSON-RPC 2.0 (A2A 1.0 methods
SendMessage, GetTask, ListTasks (per context), CancelTask; SendStreamingMessage and
SubscribeToTask where the host can stream, see infra/local/dev_protocols.py) over the
RunService.

Only the SDK's types, JSON mapping and error details are imported (about 0.4 s at a cold
start): its server package (request handlers, task store, the A2A 0.3 compatibility types)
would add about 1.5 s more to the first A2A request of a container.

Why not the SDK's DefaultRequestHandler: it runs an AgentExecutor inside the request and
keeps tasks in a TaskStore of its own, while an agentfn run outlives the request (its state
machine advances it, waits for people for days) and already has a durable record, the run.
A second store of tasks would drift from it. So the task is computed from the run each time
(runtime.protocols.a2a_tasks), and what goes over the wire is the SDK's own: its protobuf
types, parsed and printed with its JSON mapping, its error codes and response builders.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from typing import Any

from a2a.types import a2a_pb2 as pb
from a2a.utils import errors as a2a_errors
from a2a.utils.error_handlers import build_error_details
from google.protobuf import json_format

from runtime.errors import InvalidRequest, RunNotFound, WrongState
from runtime.naming import run_belongs_to
from runtime.protocols.a2a_tasks import (
    DECISION_KEYS,
    list_tasks,
    message_data,
    message_text,
    task_of,
)
from runtime.protocols.a2a_tasks import waiting_view as waiting_in
from runtime.routes import A2A_CARD_PATH

PROTOCOL_VERSION = "1.0"
SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")  # the REST API's session_id
MAX_WAIT_SECONDS = 25.0  # API Gateway gives up at 29 s
SETTLE_INTERVAL = 0.3
MOVING = ("running", "awaiting_children")

Approve = Callable[[str, dict[str, Any], str], dict[str, Any]]
#: Starts a run: (agent, {input, session_id, wait_seconds}, message id) -> (status, result).
#: The host may make it idempotent on the message id (handlers.a2a: a retried SendMessage
#: gets the first message's task, not a second run).
Start = Callable[[str, dict[str, Any], str], tuple[int, dict[str, Any]]]


def agent_card(spec: Any, agent: str, url: str, *, streaming: bool) -> dict[str, Any]:
    """The agent's card: who it is (name, description), one skill made of its description
    and tools, where and how to call it (JSON-RPC at `url`, A2A 1.0), what it can do
    (streaming only where the host streams; no push notifications), and the API's auth."""
    config = spec.agents[agent]
    tags = [*config.tools, *(f"agent:{sub.agent}" for sub in config.sub_agents)]
    card = pb.AgentCard(
        name=agent,
        description=config.description,
        version=spec.spec_hash(),
        default_input_modes=["text/plain", "application/json"],
        default_output_modes=["text/plain", "application/json"],
        supported_interfaces=[
            pb.AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=pb.AgentCapabilities(streaming=streaming, push_notifications=False),
        skills=[
            pb.AgentSkill(
                id=agent,
                name=agent,
                description=config.description,
                tags=tags or [agent],
                examples=[p for intent in config.intents for p in intent.phrases][:10],
            )
        ],
    )
    if spec.deployment.api_auth == "iam":
        scheme = pb.HTTPAuthSecurityScheme(
            scheme="AWS4-HMAC-SHA256",
            description="AWS Signature Version 4 (service execute-api), as the REST API: "
            "the caller's IAM policy must allow execute-api:Invoke on this agent's path.",
        )
        card.security_schemes["aws_sigv4"].CopyFrom(
            pb.SecurityScheme(http_auth_security_scheme=scheme)
        )
        requirement = pb.SecurityRequirement()
        requirement.schemes["aws_sigv4"].CopyFrom(pb.StringList())
        card.security_requirements.append(requirement)
    found: dict[str, Any] = json_format.MessageToDict(card)
    return found


def build_error_response(request_id: Any, error: a2a_errors.A2AError) -> dict[str, Any]:
    """A JSON-RPC error as the SDK's server writes it (code, message, ErrorInfo details)."""
    code = a2a_errors.JSON_RPC_ERROR_CODE_MAP.get(type(error), -32603)
    details = build_error_details(error)
    body = {"code": code, "message": str(error), "data": details}
    return {"jsonrpc": "2.0", "id": request_id, "error": body}


def prepare_response_object(request_id: Any, result: Any, _types: Any = None) -> dict[str, Any]:
    """A JSON-RPC result: the protobuf message in the SDK's JSON mapping (camelCase)."""
    return {"jsonrpc": "2.0", "id": request_id, "result": json_format.MessageToDict(result)}


def card_url(base: str, agent: str) -> str:
    return f"{base.rstrip('/')}/a2a/{agent}"


class A2aServer:
    """One request's A2A operations for `agent` (who calls, how long the request may take)."""

    def __init__(
        self,
        service: Any,
        approve: Approve,
        *,
        caller: str,
        time_left: float | None = None,
        sleep: Callable[[float], None] = time.sleep,
        start: Start | None = None,
    ):
        self.service = service
        self.approve = approve
        self._start = start or self._start_run
        self.caller = caller
        self.deadline = time.monotonic() + (time_left if time_left is not None else 30.0)
        self._sleep = sleep

    def serves(self, agent: str) -> bool:
        spec = self.service.engine.spec
        return agent in spec.agents and bool(spec.serves(agent, "a2a"))

    # ---- JSON-RPC ------------------------------------------------------------------------

    def rpc(self, agent: str, body: str | bytes | None, version: str | None) -> dict[str, Any]:
        """The JSON-RPC answer to one request (errors included: JSON-RPC answers 200)."""
        try:
            request = json.loads(body or "")
        except (ValueError, UnicodeDecodeError) as exc:
            return build_error_response(None, a2a_errors.JSONParseError(f"not JSON: {exc}"))
        request_id = request.get("id") if isinstance(request, dict) else None
        try:
            method, params = self._envelope(request, version)
            return self.call(agent, request_id, method, params)
        except a2a_errors.A2AError as exc:
            return build_error_response(request_id, exc)

    def _envelope(self, request: Any, version: str | None) -> tuple[str, dict[str, Any]]:
        if not isinstance(request, dict) or request.get("jsonrpc") != "2.0":
            raise a2a_errors.InvalidRequestError('a JSON-RPC 2.0 request: {"jsonrpc": "2.0", …}')
        method, params = request.get("method"), request.get("params", {})
        if not isinstance(method, str):
            raise a2a_errors.InvalidRequestError("method: a string is required")
        if not isinstance(params, dict):
            raise a2a_errors.InvalidParamsError("params: an object is required")
        if version and version.strip().split(".")[:2] != PROTOCOL_VERSION.split("."):
            raise a2a_errors.VersionNotSupportedError(
                f"A2A-Version {version}: this server speaks A2A {PROTOCOL_VERSION}"
            )
        return method, params

    def call(
        self, agent: str, request_id: Any, method: str, params: dict[str, Any]
    ) -> dict[str, Any]:
        if not self.serves(agent):
            raise a2a_errors.InvalidParamsError(f"no agent {agent!r} is served over A2A here")
        try:
            if method == "SendMessage":
                request = _parse(params, pb.SendMessageRequest())
                task = self.send(agent, request)
                return prepare_response_object(
                    request_id, pb.SendMessageResponse(task=task), (pb.SendMessageResponse,)
                )
            if method == "GetTask":
                request = _parse(params, pb.GetTaskRequest())
                task = task_of(self.service.get(self.owned(agent, request.id)))
                return prepare_response_object(request_id, task, (pb.Task,))
            if method == "ListTasks":
                listing = list_tasks(self.service, agent, _parse(params, pb.ListTasksRequest()))
                return prepare_response_object(request_id, listing, (pb.ListTasksResponse,))
            if method == "CancelTask":
                request = _parse(params, pb.CancelTaskRequest())
                run_id = self.owned(agent, request.id)
                try:
                    task = task_of(self.service.cancel(run_id, by=self.caller))
                except WrongState as exc:
                    raise a2a_errors.TaskNotCancelableError(str(exc)) from exc
                return prepare_response_object(request_id, task, (pb.Task,))
        except InvalidRequest as exc:
            field = getattr(exc, "field", None)
            if getattr(exc, "not_found", False) and field in ("run_id", "id"):
                raise a2a_errors.TaskNotFoundError(str(exc)) from exc
            raise a2a_errors.InvalidParamsError(str(exc), data={"field": field}) from exc
        except RunNotFound as exc:
            raise a2a_errors.TaskNotFoundError(str(exc)) from exc
        if method in ("SendStreamingMessage", "SubscribeToTask"):
            raise a2a_errors.UnsupportedOperationError(
                f"{method}: API Gateway's REST API answers each request whole (no SSE); use "
                "SendMessage (with returnImmediately) and GetTask (capabilities.streaming is "
                "false on this card)"
            )
        if "/" in method:  # A2A 0.3's names: message/send, tasks/get…
            raise a2a_errors.MethodNotFoundError(
                f"{method} is an A2A 0.3 method; this server speaks A2A {PROTOCOL_VERSION}"
            )
        raise a2a_errors.MethodNotFoundError(f"unknown method {method!r}")

    def owned(self, agent: str, run_id: str) -> str:
        """The run id when it names a run of `agent` (a task of another agent is not found)."""
        if not run_id or not run_belongs_to(run_id, agent):
            raise a2a_errors.TaskNotFoundError(f"agent {agent!r} has no task {run_id!r}")
        return run_id

    # ---- SendMessage ---------------------------------------------------------------------

    def send(self, agent: str, request: pb.SendMessageRequest) -> pb.Task:
        """Start a run (or answer the task's pending question/approval), wait for it up to
        the request's time unless `returnImmediately`, and answer the task as it then is."""
        message = request.message
        if not message.parts:
            raise a2a_errors.InvalidParamsError("message.parts: at least one part is required")
        wait = 0.0 if request.configuration.return_immediately else self.budget()
        if message.task_id:
            run_id = self.owned(agent, message.task_id)
            self.answer(run_id, message)
            return task_of(self.settle(run_id, wait))
        text = message_text(message) or "\n".join(
            json.dumps(d, sort_keys=True) for d in message_data(message)
        )
        if not text.strip():
            raise a2a_errors.InvalidParamsError("message.parts: a text (or data) part is needed")
        session = message.context_id or None
        if session is not None and not SESSION_ID.match(session):
            raise a2a_errors.InvalidParamsError(
                f"message.contextId: {SESSION_ID.pattern} (a session id)",
                data={"field": "message.contextId"},
            )
        # What a retry of this message must repeat: no figure that depends on when it came
        # (the request's own time left bounds the wait: RunService.start's time_left).
        inline = 0.0 if request.configuration.return_immediately else MAX_WAIT_SECONDS
        body = {"input": text, "session_id": session, "wait_seconds": inline}
        status, result = self._start(agent, body, message.message_id)
        return task_of(result if status == 200 else self.service.get(result["run_id"]))

    def _start_run(self, agent: str, body: dict[str, Any], _message_id: str) -> Any:
        return self.service.start(
            agent, body["input"], body["session_id"], body["wait_seconds"],
            time_left=self.time_left(),
        )  # fmt: skip

    def answer(self, run_id: str, message: pb.Message) -> None:
        """A message to an existing task answers what it waits for, and nothing else."""
        result = self.service.get(run_id)
        waiting = waiting_in(result) if result["status"] not in ("succeeded",) else None
        if waiting is None:
            state = result["status"]
            hint = (
                "wait for it (GetTask)"
                if state in MOVING
                else "it has ended: send a message without taskId, with its contextId, to "
                "go on with the conversation"
            )
            raise a2a_errors.InvalidParamsError(
                f"task {run_id} is {state}, not waiting for input; {hint}",
                data={"field": "message.taskId"},
            )
        if waiting.get("pending_approval"):
            decision = _decision(message_data(message))
            self.approve(run_id, decision, self.caller)
            return
        text = message_text(message)
        if not text.strip():
            raise a2a_errors.InvalidParamsError(
                "message.parts: the task asks a question; answer with a text part",
                data={"field": "message.parts"},
            )
        self.service.reply(run_id, text, by=self.caller)

    def settle(self, run_id: str, wait: float) -> dict[str, Any]:
        """The run's result once it ended or waits for a person, or when `wait` is spent."""
        store = self.service.engine.store
        deadline = min(time.monotonic() + wait, self.deadline - 4)
        while time.monotonic() + SETTLE_INTERVAL < deadline:
            head = store.load_head(run_id)
            if head.status not in MOVING:
                break
            if head.status == "awaiting_children" and waiting_in(self.service.get(run_id)):
                break
            self._sleep(SETTLE_INTERVAL)
        result: dict[str, Any] = self.service.get(run_id)
        return result

    def budget(self) -> float:
        return max(0.0, min(MAX_WAIT_SECONDS, self.deadline - time.monotonic() - 4))

    def time_left(self) -> float:
        return max(0.0, self.deadline - time.monotonic())


def _parse(params: dict[str, Any], message: Any) -> Any:
    try:
        return json_format.ParseDict(params, message)
    except json_format.ParseError as exc:
        raise a2a_errors.InvalidParamsError(f"params: {exc}") from exc


def _decision(parts: list[Any]) -> dict[str, Any]:
    """The approval decision a data part carries: {approved, reason?, edited_inputs?,
    tool_call_id?}; anything else is refused naming the key."""
    found = [p for p in parts if isinstance(p, dict) and "approved" in p]
    if len(found) != 1:
        raise a2a_errors.InvalidParamsError(
            'message.parts: the task waits for an approval; send one data part {"approved": '
            'true|false, "reason"?, "edited_inputs"?, "tool_call_id"?}',
            data={"field": "message.parts"},
        )
    decision = found[0]
    checks: dict[str, tuple[type, ...]] = {
        "approved": (bool,),
        "reason": (str,),
        "edited_inputs": (dict,),
        "tool_call_id": (str,),
    }
    for key, kinds in checks.items():
        if key in decision and not isinstance(decision[key], kinds):
            raise a2a_errors.InvalidParamsError(
                f"message.parts.data.{key}: must be a {kinds[0].__name__}",
                data={"field": f"message.parts.data.{key}"},
            )
    extra = sorted(set(decision) - DECISION_KEYS)
    if extra:
        raise a2a_errors.InvalidParamsError(
            f"message.parts.data.{extra[0]}: not a decision key (known: "
            f"{', '.join(sorted(DECISION_KEYS))})",
            data={"field": f"message.parts.data.{extra[0]}"},
        )
    if len(decision.get("reason") or "") > 2000:
        raise a2a_errors.InvalidParamsError("message.parts.data.reason: at most 2000 characters")
    return decision


__all__ = ["A2A_CARD_PATH", "A2aServer", "agent_card", "card_url"]
