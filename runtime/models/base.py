"""The one interface every model provider implements, and the helpers they share.

A provider turns a provider-neutral `ModelRequest` (system prompt, persisted messages, tool
specs) into one call of its API and returns a `ModelResponse`. It raises
`TransientModelError` for what is worth retrying (HTTP 429/503/529, throttling,
"overloaded", "rate"), `ModelError` for everything else. Retries, backoff and fallbacks
live in `runtime.models.retry`, not in providers.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any, Literal, Protocol

from runtime.errors import ModelError, TransientModelError
from runtime.messages import ImagePart, Message, ToolCall, ToolResultMessage, Usage
from runtime.structs import load

StopReason = Literal["end_turn", "tool_use", "max_tokens"]


@dataclass(frozen=True)
class ToolSpec:
    """A tool as offered to the model."""

    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass
class ModelRequest:
    system: str
    messages: list[Message]
    tools: list[ToolSpec] = field(default_factory=list)
    #: How many model answers this run has persisted so far (the scripted provider's index).
    call_number: int = 0
    #: Retry attempt of this call with this model, 0 first.
    attempt: int = 0
    #: False on an agent's final turn: the model must answer, not call tools. `tools` are
    #: still listed because some APIs reject a history with tool calls but no tool
    #: definitions; each provider withholds them its own way (tool_choice "none", …).
    allow_tools: bool = True
    #: What the call is for: the agent's next answer, or a compaction's summary.
    purpose: Literal["answer", "summary"] = "answer"
    #: The engine's estimate of the prompt's tokens (runtime.engine.context); the scripted
    #: provider reports it as its input usage, like a real provider counting the prompt.
    estimated_tokens: int = 0
    #: Set: stream the answer (when the model's `stream` setting allows), handing each text
    #: delta to it as it arrives (runtime.models.streaming). None: one call, one answer.
    on_text: Callable[[str], None] | None = None
    #: The run's turn this answer is for (live chunks say it).
    turn: int = 0


@dataclass
class ModelResponse:
    text: str | None
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    stop_reason: StopReason = "end_turn"
    model_id: str = ""


class Model(Protocol):
    """What the loop needs from a model."""

    name: str  # the spec's key, e.g. "claude"
    model_id: str

    async def request(self, request: ModelRequest) -> ModelResponse: ...


#: Resolves `${secret:NAME}` references inside a string to their values.
SecretResolver = Callable[[str], str]

_TRANSIENT_WORDS = re.compile(
    r"rate.?limit|overloaded|throttl|too many requests|temporarily|unavailable", re.I
)
TRANSIENT_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504, 529})


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or HTTP date), or None."""
    value = headers.get("retry-after") or headers.get("Retry-After")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        from datetime import UTC, datetime

        return max(0.0, (parsedate_to_datetime(value) - datetime.now(UTC)).total_seconds())
    except (TypeError, ValueError):
        return None


def error_for_status(
    provider: str,
    status: int,
    message: str,
    headers: Mapping[str, str] | None = None,
) -> ModelError:
    """The right error for an HTTP error answer: transient (retry) or not."""
    text = f"{provider} answered HTTP {status}: {message}"
    if status in TRANSIENT_STATUS or (status >= 500) or _TRANSIENT_WORDS.search(message or ""):
        if status in {400, 401, 403, 404, 422}:
            return ModelError(text, status=status, provider=provider)
        return TransientModelError(
            text, status=status, provider=provider, retry_after=retry_after_seconds(headers or {})
        )
    return ModelError(text, status=status, provider=provider)


def is_transient_message(message: str) -> bool:
    return bool(_TRANSIENT_WORDS.search(message))


def result_text(message: ToolResultMessage) -> str:
    """A tool result's text for providers with no error flag of their own (OpenAI's tool
    messages, Bedrock models without `toolResult.status`): a failed call says so in front,
    whatever the tool put in it (an MCP `isError` result holds only the server's text)."""
    if message.success or message.content.startswith("Error"):
        return message.content
    return f"Error: {message.content}"


def images_of(message: ToolResultMessage, accepted: frozenset[str]) -> list[ImagePart]:
    """The result's images a provider accepts (by MIME type); the text describes every
    image, so the others are simply not sent."""
    return [image for image in message.images if image.mime_type.lower() in accepted]


def assemble_response(
    texts: list[str],
    calls: list[ToolCall],
    stop: StopReason,
    input_tokens: int,
    output_tokens: int,
    model_id: str,
) -> ModelResponse:
    """The common tail of every provider's parsing. A model that asked for tools but said it
    stopped on its own (some servers do) is reported as tool_use."""
    if calls and stop == "end_turn":
        stop = "tool_use"
    return ModelResponse(
        text="".join(texts) or None,
        tool_calls=calls,
        usage=wire_usage(model_id, input_tokens, output_tokens),
        stop_reason=stop,
        model_id=model_id,
    )


def wire_usage(model_id: str, input_tokens: Any, output_tokens: Any) -> Usage:
    """A provider's token counts, validated (coerced as pydantic's lax mode did: "12" or
    12.0 is 12): a count that is not a number is the provider's error, said as such, not a
    crash of the step nor a bad value stored in the run."""
    try:
        return load(
            Usage, {"input_tokens": input_tokens, "output_tokens": output_tokens}, strict=False
        )
    except ValueError as exc:
        raise ModelError(f"{model_id} answered with invalid token counts: {exc}") from None
