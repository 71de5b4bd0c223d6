"""API Gateway (REST, proxy integration) entry point: the routes of runtime.routes.

The routes exist and answer now; the run operations answer 501 NOT_IMPLEMENTED until the
engine and orchestration land, so a deployed stack already behaves predictably.
"""

from __future__ import annotations

import re
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types

from runtime.routes import ROUTES

logger = Logger(service="agentfn")
app = APIGatewayRestResolver(enable_validation=True)


def _powertools_path(path: str) -> str:
    return re.sub(r"\{(\w+)\}", r"<\1>", path)


def _not_implemented(route_name: str) -> Response[Any]:
    return Response(
        status_code=501,
        content_type=content_types.APPLICATION_JSON,
        body={
            "error_code": "NOT_IMPLEMENTED",
            "error_message": f"{route_name} is not implemented yet in this agentfn version.",
        },
    )


_BY_NAME = {route.name: route for route in ROUTES}


def _route(name: str) -> Any:
    """Register an endpoint under the method and path that runtime.routes gives `name`."""
    route = _BY_NAME[name]
    return app.route(rule=_powertools_path(route.path), method=route.method, summary=route.summary)


@_route("StartRun")
def start_run(agent: str) -> Response[Any]:
    return _not_implemented("StartRun")


@_route("ListAgents")
def list_agents() -> Response[Any]:
    return _not_implemented("ListAgents")


@_route("GetRun")
def get_run(run_id: str) -> Response[Any]:
    return _not_implemented("GetRun")


@_route("GetRunEvents")
def get_run_events(run_id: str) -> Response[Any]:
    return _not_implemented("GetRunEvents")


@_route("Approve")
def approve(run_id: str) -> Response[Any]:
    return _not_implemented("Approve")


@_route("Reply")
def reply(run_id: str) -> Response[Any]:
    return _not_implemented("Reply")


@_route("Cancel")
def cancel(run_id: str) -> Response[Any]:
    return _not_implemented("Cancel")


@_route("OpenApi")
def openapi() -> Response[str]:
    return Response(
        status_code=200,
        content_type=content_types.APPLICATION_JSON,
        body=app.get_openapi_json_schema(title="agentfn", version="1"),
    )


@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return app.resolve(event, context)
