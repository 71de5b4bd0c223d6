"""A2A on the API function: GET /a2a/{agent}/.well-known/agent-card.json (the card) and
POST /a2a/{agent} (JSON-RPC 2.0, A2A 1.0), both answered by runtime.protocols.a2a_rpc over
the API's RunService. The SDK is imported on the first A2A request only.

A SendMessage that starts a task is idempotent on its `messageId`, per caller, like a REST
start with an Idempotency-Key (the same records, 24 h): a client retrying after a lost
answer gets the first message's task, never a second run (a second refund)."""

from __future__ import annotations

from typing import Any

from handlers.protocol_http import header, json_answer, public_base


def handle(event: dict[str, Any], context: Any) -> dict[str, Any]:
    from handlers.api_requests import caller_of, time_left
    from handlers.api_service import approve, the_service
    from runtime.protocols.a2a_rpc import A2aServer, agent_card, card_url

    agent = str((event.get("pathParameters") or {}).get("agent") or "")
    caller = caller_of(event)
    server = A2aServer(
        the_service(),
        approve,
        caller=caller,
        time_left=time_left(context),
        start=lambda agent, body, message_id: _start_once(agent, body, message_id, caller, context),
    )
    if event.get("httpMethod") == "GET":
        if not server.serves(agent):
            message = f"no agent {agent!r} is served over A2A here (protocols: {{a2a: true}})"
            body = {"error_code": "NOT_FOUND", "error_message": message, "field": "agent"}
            return json_answer(404, body)
        base, local = public_base(event)
        spec = server.service.engine.spec
        return json_answer(200, agent_card(spec, agent, card_url(base, agent), streaming=local))
    return json_answer(200, server.rpc(agent, event.get("body"), header(event, "A2A-Version")))


def _start_once(
    agent: str, body: dict[str, Any], message_id: str, caller: str, context: Any
) -> tuple[int, dict[str, Any]]:
    """handlers.api_starts.start_run keyed by `a2a:<messageId>`; Powertools' refusals as A2A errors
    naming message.messageId (a reused id with another message; the first still running)."""
    from a2a.utils import errors as a2a_errors
    from aws_lambda_powertools.utilities.idempotency import exceptions

    from handlers.api_starts import start_run

    try:
        return start_run(agent, body, f"a2a:{message_id}" if message_id else None, caller, context)
    except exceptions.IdempotencyValidationError as exc:
        raise a2a_errors.InvalidParamsError(
            f"message.messageId {message_id!r} was sent before with a different message",
            data={"field": "message.messageId"},
        ) from exc
    except exceptions.IdempotencyAlreadyInProgressError as exc:
        raise a2a_errors.InvalidRequestError(
            f"message.messageId {message_id!r}: the first request with it is still being "
            "answered; send it again in a moment to get its task",
            data={"field": "message.messageId"},
        ) from exc
