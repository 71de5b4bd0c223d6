"""API Gateway (REST, proxy integration) entry point: the routes of runtime.routes.

A Powertools `APIGatewayRestResolver(enable_validation=True)`: pydantic models validate each
request and make the OpenAPI document (GET /openapi.json). Errors answer `{error_code,
error_message, field?, status?}`: a caller's mistake is a 4xx naming the field, anything else
a 500 with a generic message (the exception is logged, never returned). An Idempotency-Key on
POST /agents/{agent}/runs makes a retry get the first answer instead of a second run
(Powertools idempotency, records in the runs' table; 422 for a key reused with another
request, 409 while the first one still runs). Importing this module loads the standard
library only: Powertools and pydantic load when the resolver is built (first request, or at
init when Lambda initialises ahead of traffic), boto3 and the engine when the RunService is.
"""

import logging
import os
import re
import threading
from collections.abc import Callable
from typing import Any

from handlers import api_service, api_starts, observe
from handlers.api_requests import (
    IDEMPOTENCY_HEADER,
    MAX_BODY_BYTES,
    caller_of,
    error_answer,
    json_body,
    openapi_document,
    time_left,
    too_large,
    too_large_answer,
    unsupported_media,
)
from handlers.api_service import approve, the_service
from handlers.api_starts import start_run
from handlers.protocols import protocol_answer
from runtime.routes import ROUTES

MAX_WAIT_SECONDS = 25.0  # API Gateway gives up at 29 s
PREWARMED = {"provisioned-concurrency", "snap-start"}  # AWS_LAMBDA_INITIALIZATION_TYPE

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]
Answer = tuple[int, dict[str, Any]]

_UNSET: Any = object()
_built: dict[str, Any] = {}  # "resolve", "app", then "openapi" once asked for
_build_lock = threading.Lock()


def configure(service: Any = None, *, idempotency: Any = _UNSET) -> None:
    """Use this RunService, not one built from the environment (None: back to it), and this
    Powertools persistence layer for Idempotency-Key records (None: the header is ignored;
    left out: the layer stays as it is, by default the table AGENTFN_IDEMPOTENCY_TABLE
    names, if set)."""
    api_service.use(service)
    if idempotency is not _UNSET:
        api_starts.use_idempotency(idempotency)


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    if too_large(event):  # before parsing anything: a request's size is bounded
        return too_large_answer()
    refused = unsupported_media(event)
    if refused is not None:
        return refused
    with observe.invocation(context):  # the run's keys on its lines; metrics at the end
        try:
            return protocol_answer(event, context) or _resolver()(event, context)
        finally:
            from handlers.step import flush_live

            flush_live()  # an inline advance's events reach the run's live watchers


def app_context() -> Any:
    """The Lambda context of the request being served (None outside Lambda)."""
    return _built["app"].lambda_context if "app" in _built else None


def _resolver() -> Handler:
    if "resolve" not in _built:
        with _build_lock:
            if "resolve" not in _built:
                _built.update(_build())
    resolve: Handler = _built["resolve"]
    return resolve


def container() -> Handler:
    """A handler with a resolver of its own, like another warm container of the function:
    a resolver holds the request it serves, so it serves one at a time (`agentfn dev` serves
    requests at once, each in a container of its own: infra.local.dev_concurrency)."""
    with _build_lock:
        resolve: Handler = _build()["resolve"]

    def serve(event: dict[str, Any], ctx: Any) -> dict[str, Any]:
        if too_large(event):
            return too_large_answer()
        return unsupported_media(event) or protocol_answer(event, ctx) or resolve(event, ctx)

    return serve


def _openapi_json() -> str:
    if "openapi" not in _built:
        _resolver()
        _built["openapi"] = openapi_document(_built["app"])
    return str(_built["openapi"])


def _build() -> dict[str, Any]:
    """The resolver, models and routes. Powertools reads the annotations to validate requests
    and write the document: no `from __future__ import annotations` in this module."""
    from typing import Annotated

    from aws_lambda_powertools import Logger
    from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
    from aws_lambda_powertools.event_handler.openapi.params import Body, Header, Path, Query
    from pydantic import BaseModel, ConfigDict, Field

    from runtime.secrets import protect_logs

    logger = Logger(service="agentfn")
    protect_logs(logging.getLogger(), logging.getLogger(logger.name))  # no secret in the log
    app = APIGatewayRestResolver(enable_validation=True, json_body_deserializer=json_body)

    class Strict(BaseModel):
        model_config = ConfigDict(extra="forbid", strict=True)

    class StartRunRequest(Strict):
        input: str = Field(min_length=1, description="What the agent should do")
        session_id: str | None = Field(
            None, pattern=r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$", description="Continue it"
        )
        wait_seconds: float = Field(10.0, ge=0, le=MAX_WAIT_SECONDS, allow_inf_nan=False)
        max_turns: int | None = Field(
            None, ge=1, le=1000, description="This run's turn limit, at most the agent's own"
        )

    class ApprovalRequest(Strict):
        approved: bool
        tool_call_id: str | None = Field(None, min_length=1, max_length=256)
        reason: str | None = Field(None, max_length=2000)
        edited_inputs: dict[str, Any] | None = None

    class ReplyRequest(Strict):
        input: str = Field(min_length=1, description="The answer to the agent's question")

    # Answers, for the document only (the RunService builds them).
    class ErrorAnswer(BaseModel):
        error_code: str
        error_message: str
        field: str | None = Field(None, description="The request field at fault")
        status: str | None = Field(None, description="The run's current status (409)")

    class RunSummary(BaseModel):
        run_id: str
        agent: str
        session_id: str
        status: str

    class RunResult(RunSummary):
        model_config = ConfigDict(extra="allow")  # the result contract: fields vary by status

    class RunEvents(BaseModel):
        run_id: str
        events: list[dict[str, Any]]
        next_after: int

    JSON = "application/json"
    described = {400: "Not valid (field)", 404: "No such run or agent", 409: "Wrong state"}
    described[422] = f"{IDEMPOTENCY_HEADER} used for another request"
    described[413] = f"Body over {MAX_BODY_BYTES} bytes"
    by_name = {route.name: route for route in ROUTES}
    registered: set[str] = set()

    def route(name: str, answers: dict[int, Any], *errors: int) -> Callable[[Any], Any]:
        """Register under the method and path runtime.routes gives `name`."""
        spec = by_name[name]
        registered.add(name)
        models = {**answers, **dict.fromkeys(errors, ErrorAnswer)}
        docs = [(c, described.get(c, spec.summary), m) for c, m in models.items()]
        shown: Any = {c: {"description": d, "content": {JSON: {"model": m}}} for c, d, m in docs}
        path = re.sub(r"\{(\w+)\}", r"<\1>", spec.path)
        return app.route(
            path, spec.method, summary=spec.summary, operation_id=name, responses=shown
        )

    Name = Annotated[str, Path(min_length=1, max_length=128)]  # an agent's, or a run's id
    Key = Annotated[str | None, Header(alias=IDEMPOTENCY_HEADER, min_length=1, max_length=255)]

    def ok(body: Any, status: int = 200) -> Response[Any]:
        return Response(status_code=status, content_type=JSON, body=body)

    @route("StartRun", {200: RunResult, 202: RunSummary}, 400, 404, 409, 413, 422)
    def start(agent: Name, request: Annotated[StartRunRequest, Body()], key: Key = None) -> Any:
        caller, ctx = caller_of(app.current_event.raw_event), app.lambda_context
        status, body = start_run(agent, request.model_dump(), key, caller, ctx)
        return ok(body, status)

    @route("ListAgents", {200: dict[str, list[dict[str, Any]]]})
    def list_agents() -> Response[Any]:
        return ok({"agents": the_service().agents()})

    @route("GetRun", {200: RunResult}, 400, 404)
    def get_run(run_id: Name) -> Response[Any]:
        return ok(the_service().get(run_id))

    @route("GetRunEvents", {200: RunEvents}, 400, 404)
    def get_run_events(
        run_id: Name,
        after: Annotated[int, Query(ge=-1, le=10**12)] = -1,
        limit: Annotated[int, Query(ge=1, le=500)] = 100,
        wait: Annotated[int, Query(ge=0, le=20)] = 0,  # long-poll: seconds to wait for one
    ) -> Response[Any]:
        wait_for = min(wait, max(0.0, (time_left(app.lambda_context) or 30.0) - 4))
        return ok(the_service().events_after(run_id, after=after, limit=limit, wait=wait_for))

    def caller() -> str:
        return caller_of(app.current_event.raw_event)

    @route("Approve", {200: RunResult}, 400, 404, 409, 413)
    def approve_run(run_id: Name, request: Annotated[ApprovalRequest, Body()]) -> Response[Any]:
        return ok(approve(run_id, request.model_dump(exclude_unset=True), caller()))

    @route("Reply", {200: RunResult}, 400, 404, 409, 413)
    def reply(run_id: Name, request: Annotated[ReplyRequest, Body()]) -> Response[Any]:
        return ok(the_service().reply(run_id, request.input, by=caller()))

    @route("Cancel", {200: RunResult}, 400, 404, 409)
    def cancel(run_id: Name) -> Response[Any]:
        return ok(the_service().cancel(run_id, by=caller()))

    def owned(agent: str, run_id: str) -> str:
        """The run id when the run belongs to `agent` (its id carries the agent's tag)."""
        from runtime.errors import InvalidRequest
        from runtime.naming import run_belongs_to

        if agent not in the_service().engine.spec.agents or not run_belongs_to(run_id, agent):
            raise InvalidRequest(
                f"agent {agent!r} has no run {run_id!r}", field="run_id", not_found=True
            )
        return run_id

    @route("GetAgentRun", {200: RunResult}, 400, 404)
    def get_agent_run(agent: Name, run_id: Name) -> Response[Any]:
        return get_run(owned(agent, run_id))

    @route("GetAgentRunEvents", {200: RunEvents}, 400, 404)
    def get_agent_run_events(
        agent: Name,
        run_id: Name,
        after: Annotated[int, Query(ge=-1, le=10**12)] = -1,
        limit: Annotated[int, Query(ge=1, le=500)] = 100,
        wait: Annotated[int, Query(ge=0, le=20)] = 0,
    ) -> Response[Any]:
        return get_run_events(owned(agent, run_id), after, limit, wait)

    @route("ApproveAgentRun", {200: RunResult}, 400, 404, 409, 413)
    def approve_agent_run(
        agent: Name, run_id: Name, request: Annotated[ApprovalRequest, Body()]
    ) -> Response[Any]:
        return approve_run(owned(agent, run_id), request)

    @route("ReplyAgentRun", {200: RunResult}, 400, 404, 409, 413)
    def reply_agent_run(
        agent: Name, run_id: Name, request: Annotated[ReplyRequest, Body()]
    ) -> Response[Any]:
        return reply(owned(agent, run_id), request)

    @route("CancelAgentRun", {200: RunResult}, 400, 404, 409)
    def cancel_agent_run(agent: Name, run_id: Name) -> Response[Any]:
        return cancel(owned(agent, run_id))

    from handlers.api_live import session_routes, watch_routes
    from handlers.api_workflows import workflow_routes

    workflow_routes(
        route,
        ok,
        Strict,
        Name,
        caller,
        Key,
        idempotency_layer=api_starts.idempotency_layer,
        app_context=app_context,
    )
    watch_routes(route, Name, owned)
    session_routes(route, ok, Name)

    @route("OpenApi", {})
    def openapi() -> Response[Any]:
        return ok(_openapi_json())

    if set(by_name) - registered:  # runtime.routes grew a route this handler does not serve
        raise RuntimeError(f"routes without a handler: {sorted(set(by_name) - registered)}")

    @app.exception_handler(Exception)  # Powertools' own 422/404/... too: one shape for all
    def error(exc: Exception) -> Response[Any]:
        binary = bool(app.current_event.is_base64_encoded)
        status, body = error_answer(exc, getattr(app.lambda_context, "aws_request_id", ""), binary)
        if status >= 500:
            logger.exception("unexpected error")
        retry = {"Retry-After": "1"} if status == 409 and "status" not in body else None
        return Response(status_code=status, content_type=JSON, body=body, headers=retry)

    return {"app": app, "resolve": logger.inject_lambda_context(clear_state=True)(app.resolve)}


if os.environ.get("AWS_LAMBDA_INITIALIZATION_TYPE") in PREWARMED:
    _resolver()
    from handlers import snapshot
    from handlers.step import build_service_from_environment

    if snapshot.at_init(__name__):  # deployment.snapstart: the service in the snapshot too
        _service = snapshot.prepare(build_service_from_environment)
