"""Models that cannot call tools: plain chat for the agents that can do without.

Some models take no tool definitions at all, and their provider says so (Ollama "… does
not support tools", Bedrock "This model doesn't support tool use.", OpenRouter "No
endpoints found that support tool use", compatible servers "tools is not supported"); the
provider raises `ToolsUnsupported` for those answers.

What an agent needs: an agent *needs tools* when it is offered any tool beyond the
automatic ones (today only `agent_clarify`, offered to every agent): its own `tools`
(built-ins listed there included), its MCP servers' tools, its team's transfer/ask/help
tools. Such an agent fails with a MODEL_ERROR that says the model cannot call tools (a
fallback model, if the spec names one, is tried next). Any other agent is answered as
plain chat: no tool definitions, and earlier tool calls and results of the conversation
as text, so the model still sees what happened.

The verdict is remembered per model (its spec name and id) for the life of the process —
a warm Lambda container — so the rejected request is not sent again every turn.
"""

from __future__ import annotations

from dataclasses import replace

from runtime import structs
from runtime.errors import ModelError
from runtime.messages import CLARIFY_TOOL, AssistantMessage, Message, ToolResultMessage, UserMessage
from runtime.models.base import Model, ModelRequest, ModelResponse, result_text
from runtime.models.failures import ToolsUnsupported

#: Tools every agent is offered without asking for them: `agent_clarify`, and the default
#: tools (runtime.tools.toolset.DEFAULT_TOOLS, unless `default_tools: false`). An agent that
#: has only these still answers on a model without tool support, as plain chat.
AUTOMATIC_TOOLS = frozenset({CLARIFY_TOOL, "get_time_date", "list_tools_available"})

_without_tools: set[tuple[str, str]] = set()


def needs_tools(request: ModelRequest) -> bool:
    return any(tool.name not in AUTOMATIC_TOOLS for tool in request.tools)


def as_plain_chat(messages: list[Message]) -> list[Message]:
    """The conversation with tool calls and results told as text, for a request without
    tool definitions (providers reject tool blocks or messages without them)."""
    plain: list[Message] = []
    for message in messages:
        if isinstance(message, AssistantMessage) and message.tool_calls:
            calls = message.tool_calls
            said = [message.text] if message.text else []
            said += [f"[called tool {c.name} with {c.arguments_json()}]" for c in calls]
            plain.append(structs.replace(message, text="\n".join(said), tool_calls=[]))
        elif isinstance(message, ToolResultMessage):
            text = f"[result of tool {message.tool_name}: {result_text(message)}]"
            plain.append(UserMessage(content=text))
        else:
            plain.append(message)
    return plain


def _cannot(model: Model, cause: ModelError | None) -> ModelError:
    detail = f": {cause}" if cause else " (found earlier in this process)"
    return ModelError(
        f"model {model.name} ({model.model_id}) cannot call tools, and this agent has tools "
        f"of its own; use a model that supports tool calling{detail}",
        provider=cause.provider if cause else "",
    )


async def request_with_tool_support(model: Model, request: ModelRequest) -> ModelResponse:
    """`model.request(request)`, falling back to plain chat when the model cannot call
    tools and the agent does not need them (see the module)."""
    key = (model.name, model.model_id)
    if request.tools and key in _without_tools:
        if needs_tools(request):
            raise _cannot(model, None)
        return await model.request(_plain(request))
    try:
        return await model.request(request)
    except ToolsUnsupported as exc:
        if not request.tools:
            raise ModelError(str(exc), status=exc.status, provider=exc.provider) from exc
        _without_tools.add(key)
        if needs_tools(request):
            raise _cannot(model, exc) from exc
    return await model.request(_plain(request))


def _plain(request: ModelRequest) -> ModelRequest:
    return replace(request, tools=[], messages=as_plain_chat(request.messages), allow_tools=True)


def forget() -> None:
    """Forget every verdict (tests; a process never needs to)."""
    _without_tools.clear()
