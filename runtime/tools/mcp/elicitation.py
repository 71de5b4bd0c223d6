"""A server's request for input (`elicitation/create`) in the middle of a tool call.

No person is present while a tool runs: the run is a Lambda invocation, and the user is
reached only between model turns. So agentfn never fills a form in on anyone's behalf. It
answers with a clean `decline` (a valid answer the server is built to handle, unlike a
JSON-RPC error, which servers tend to turn into "Elicitation error: …" text that looks like
a successful result), and it tells the model what the server asked for. The note points to
`agent_clarify`: when only the user can answer, the model asks them (the run pauses,
`awaiting_input`) and calls the tool again with the answer in its arguments.

The client declares `elicitation: {form: {}}` and nothing more: form requests are handled
(as above); URL-mode requests (open a browser) are not declared and are declined too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp.client.session import ClientRequestContext
    from mcp_types import ElicitRequestParams, ElicitResult


@dataclass(frozen=True)
class Elicited:
    """What a server asked for: its message and, for a form, the fields it wanted."""

    message: str
    fields: tuple[str, ...] = ()
    url: str | None = None


class ElicitationLog:
    """The elicitation requests one connection received, in order. The answer is always
    `decline`; a call reads the requests that arrived while it ran (with concurrent calls
    on one server each of them hears about them, which errs on the side of telling)."""

    def __init__(self) -> None:
        self.requests: list[Elicited] = []

    async def __call__(self, context: ClientRequestContext, params: ElicitRequestParams) -> Any:
        import mcp_types as mt

        if isinstance(params, mt.ElicitRequestURLParams):
            self.requests.append(Elicited(params.message[:500], url=params.url[:300]))
        else:
            properties = params.requested_schema.get("properties")
            fields = tuple(str(k) for k in properties) if isinstance(properties, dict) else ()
            self.requests.append(Elicited(params.message[:500], fields[:20]))
        result: ElicitResult = mt.ElicitResult(action="decline")
        return result


def declined_note(server: str, requests: list[Elicited]) -> str:
    """What the model reads after the tool's own output when the server asked for input."""
    asked = []
    for request in requests:
        detail = f"fields: {', '.join(request.fields)}" if request.fields else ""
        if request.url:
            detail = f"it wanted the user to open {request.url}"
        asked.append(f'"{request.message}"' + (f" ({detail})" if detail else ""))
    return (
        f"\n[During this call MCP server {server!r} asked for input: {'; '.join(asked)}. "
        "agentfn declined: nobody can answer while a tool runs. If only the user can give "
        "this, ask them with agent_clarify, then call the tool again with their answer in "
        "its arguments.]"
    )
