"""The OpenTelemetry GenAI semantic conventions as agentfn fills them: attribute names,
provider names, the message format of captured content, and which event fields are content.

Pure Python, no OpenTelemetry import: the names are written out here rather than imported
from `opentelemetry-semantic-conventions`, whose GenAI attributes are incubating (and
moving to their own repository), so a pinned copy keeps the spans stable across SDK updates.

Content (prompts, completions, tool arguments and results, people's replies) reaches a span
only with `telemetry.capture_content: true`, always through the process's secret redactor
(runtime.secrets) and cut at MAX_CONTENT_CHARS: a tracing backend keeps what it receives,
often longer and more widely readable than the run's own store.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from runtime.messages import AssistantMessage, Message, ToolResultMessage

OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
SYSTEM = "gen_ai.system"  # the name before gen_ai.provider.name; many backends still read it
AGENT_NAME = "gen_ai.agent.name"
AGENT_ID = "gen_ai.agent.id"
AGENT_DESCRIPTION = "gen_ai.agent.description"
CONVERSATION_ID = "gen_ai.conversation.id"
REQUEST_MODEL = "gen_ai.request.model"
RESPONSE_MODEL = "gen_ai.response.model"
FINISH_REASONS = "gen_ai.response.finish_reasons"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_TYPE = "gen_ai.tool.type"
TOOL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_RESULT = "gen_ai.tool.call.result"
SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
ERROR_TYPE = "error.type"

#: The spec's providers as the conventions name them (gen_ai.provider.name).
PROVIDER_NAMES = {
    "bedrock": "aws.bedrock",
    "openai": "openai",
    "azure_openai": "azure.ai.openai",
    "anthropic": "anthropic",
    "gemini": "gcp.gemini",
    "ollama": "ollama",
    "openai_compatible": "openai",
    "ai_gateway": "vercel.ai_gateway",
    "scripted": "agentfn.scripted",
}
#: agentfn's stop reasons as the conventions name them (gen_ai.response.finish_reasons).
FINISH_REASON_NAMES = {"end_turn": "stop", "tool_use": "tool_call", "max_tokens": "length"}

MAX_CONTENT_CHARS = 16_000
MAX_ERROR_CHARS = 500
#: Event fields that name or count things, never what someone wrote: kept without capture.
_NAMES = frozenset(
    {
        "agent", "active_agent", "session_id", "run_id", "parent_run_id", "tool_call_id",
        "tool_name", "model", "summary_model", "decision", "type", "hook", "event",
        "error_code", "status", "by", "to", "from", "intent", "then", "stop_reason",
    }
)  # fmt: skip
#: Event fields that say what went wrong: kept without capture, redacted and cut short.
_ERRORS = frozenset({"error", "error_message"})
#: Event fields renamed to their convention names.
_RENAMED = {"tool_name": TOOL_NAME, "tool_call_id": TOOL_CALL_ID, "agent": AGENT_NAME}

AttributeValue = str | bool | int | float | list[str] | list[int] | list[float] | list[bool]


def redacted(text: str, limit: int = MAX_CONTENT_CHARS) -> str:
    """`text` with every secret this process resolved redacted, cut at `limit`."""
    from runtime.secrets import redactor

    clean = redactor().redact_text(text)
    return clean if len(clean) <= limit else clean[:limit] + f"… [{len(clean)} chars]"


def as_json(value: Any, limit: int = MAX_CONTENT_CHARS) -> str:
    return redacted(json.dumps(value, ensure_ascii=False, default=str), limit)


def _parts(message: Message) -> tuple[str, list[dict[str, Any]]]:
    if isinstance(message, AssistantMessage):
        parts: list[dict[str, Any]] = (
            [{"type": "text", "content": message.text}] if message.text else []
        )
        for c in message.tool_calls:  # an answer not yet committed has no call ids yet
            call = {"type": "tool_call", "id": c.id, "name": c.name, "arguments": c.arguments}
            parts.append(call if c.id else {k: v for k, v in call.items() if k != "id"})
        return "assistant", parts
    if isinstance(message, ToolResultMessage):
        response = {"type": "tool_call_response", "id": message.tool_call_id}
        return "tool", [{**response, "response": message.content}]
    return "user", [{"type": "text", "content": message.content}]  # input, reply, summary


def input_messages(messages: Iterable[Message]) -> str:
    """The prompt's messages as `gen_ai.input.messages` (role and parts), redacted."""
    return as_json([{"role": role, "parts": parts} for role, parts in map(_parts, messages)])


def output_messages(answer: AssistantMessage) -> str:
    role, parts = _parts(answer)
    finish = FINISH_REASON_NAMES.get(answer.stop_reason, answer.stop_reason)
    return as_json([{"role": role, "parts": parts, "finish_reason": finish}])


def system_instructions(system: str) -> str:
    return as_json([{"type": "text", "content": system}])


def event_attributes(data: dict[str, Any], capture: bool) -> dict[str, AttributeValue]:
    """A run event's data as span event attributes: scalars and lists of scalars, nested
    records flattened by key (`calls.tool_name`). Without `capture`, only numbers, flags,
    names, ids and error messages: what anyone wrote or a tool returned stays out."""
    found: dict[str, list[Any]] = {}
    flat: dict[str, AttributeValue] = {}
    for key, value in data.items():
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            for record in value:  # e.g. approval_requested's calls
                for inner, item in record.items():
                    kept = _kept(inner, item, capture)
                    if kept is not None:
                        found.setdefault(f"{key}.{_RENAMED.get(inner, inner)}", []).append(kept)
            continue
        kept = _kept(key, value, capture)
        if kept is not None:
            flat[_RENAMED.get(key, key)] = kept
    for key, items in found.items():
        if len({type(i) for i in items}) == 1 and not isinstance(items[0], list):
            flat[key] = items
        else:
            flat[key] = as_json(items)
    return flat


def _kept(key: str, value: Any, capture: bool) -> Any:
    """The attribute value of one event field, or None when it stays out of the span."""
    if value is None:
        return None
    if isinstance(value, bool | int | float):
        return value
    if key in _ERRORS and isinstance(value, str):
        return redacted(value, MAX_ERROR_CHARS)
    if isinstance(value, str):
        if key in _NAMES:
            return value[:MAX_ERROR_CHARS]
        return redacted(value) if capture else None
    if not capture:
        if isinstance(value, list) and all(isinstance(v, str) for v in value) and key in _NAMES:
            return value
        if key == "tool_calls" and isinstance(value, list):  # model_response's names
            return [str(v) for v in value]
        return None
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return [redacted(v) for v in value]
    return as_json(value)
