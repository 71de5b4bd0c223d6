"""A2A on the API function: GET /a2a/{agent}/.well-known/agent-card.json (the card) and
POST /a2a/{agent} (JSON-RPC 2.0, A2A 1.0), both answered by runtime.protocols.a2a_rpc over
the API's RunService. The SDK is imported on the first A2A request only."""

from __future__ import annotations

from typing import Any

from handlers.protocol_http import header, json_answer, public_base


def handle(event: dict[str, Any], context: Any) -> dict[str, Any]:
    from handlers.api_requests import caller_of, time_left
    from handlers.api_service import approve, the_service
    from runtime.protocols.a2a_rpc import A2aServer, agent_card, card_url

    agent = str((event.get("pathParameters") or {}).get("agent") or "")
    server = A2aServer(
        the_service(), approve, caller=caller_of(event), time_left=time_left(context)
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
