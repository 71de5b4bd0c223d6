"""The API's routes about a run's or a session's life beyond its start (registered by
handlers.api's resolver): watch tokens — the right to watch one run live on the WebSocket API
(runtime.live.watch_token), given to whoever may call `GET …/runs/{run_id}/watch-token`, per agent
under the agent's path — and deleting a session on demand (agent-scoped, for per-agent IAM).

No `from __future__ import annotations`: Powertools reads these annotations at run time.
"""

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel


def _secrets() -> Any:
    from handlers.live import client

    return client("secretsmanager")


def watch_routes(route: Callable[..., Any], name: Any, owned: Callable[[str, str], str]) -> None:
    from aws_lambda_powertools.event_handler import Response

    class WatchToken(BaseModel):
        run_id: str
        token: str
        expires_at: int

    def token_for(run_id: str) -> Response[Any]:
        from handlers.api_service import the_service
        from runtime.live.watch_token import issue, stack_key

        the_service().engine.store.load_head(run_id)  # 404 for a run that does not exist
        token, expires = issue(stack_key(_secrets), run_id)
        body = {"run_id": run_id, "token": token, "expires_at": expires}
        headers = {"Cache-Control": "no-store"}  # a credential: never kept by a cache
        return Response(200, "application/json", body, headers)

    @route("GetWatchToken", {200: WatchToken}, 400, 404)
    def get_watch_token(run_id: name) -> Any:
        return token_for(run_id)

    @route("GetAgentRunWatchToken", {200: WatchToken}, 400, 404)
    def get_agent_run_watch_token(agent: name, run_id: name) -> Any:
        return token_for(owned(agent, run_id))


def session_routes(route: Callable[..., Any], ok: Callable[..., Any], name: Any) -> None:
    from typing import Annotated

    from aws_lambda_powertools.event_handler import Response
    from aws_lambda_powertools.event_handler.openapi.params import Path

    Session = Annotated[str, Path(pattern=r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")]

    @route("DeleteAgentSession", {200: dict[str, Any]}, 400, 404, 409)
    def delete_agent_session(agent: name, session_id: Session) -> Response[Any]:
        from handlers.api_service import the_service

        return ok(the_service().delete_session(agent, session_id))
