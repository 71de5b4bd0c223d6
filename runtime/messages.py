"""The conversation as persisted: a discriminated union on `kind`, one item per message.

These are provider-neutral. Each model provider converts them to its own wire format; the
store writes each one as its own DynamoDB item (never a growing list).
"""

from __future__ import annotations

import json
from typing import Any, ClassVar, Literal

import msgspec

from runtime.errors import ModelError
from runtime.jsontext import writer
from runtime.structs import Record, load, replace


class Usage(Record, kw_only=True):
    input_tokens: int = 0
    output_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
        )


class ToolCall(Record, kw_only=True):
    """A tool call as the model asked for it.

    `arguments` is the parsed object, or None when the model's JSON did not parse; then
    `arguments_error` says why and `raw_arguments` keeps what the model sent, so the loop
    can answer the model with the problem instead of crashing.
    """

    id: str
    name: str
    arguments: dict[str, Any] | None = None
    raw_arguments: str | None = None
    arguments_error: str | None = None
    #: Opaque data a provider needs back on later turns (e.g. Gemini's thoughtSignature).
    provider_data: dict[str, Any] | None = None

    @classmethod
    def from_json(cls, id: str, name: str, raw: str | dict[str, Any] | None) -> ToolCall:
        """The call from a provider's wire values: the id and name are checked (a model
        that sends others gets a ModelError that says so), the arguments parsed (what does
        not parse is kept, for the loop to tell the model)."""
        if not isinstance(id, str) or not isinstance(name, str):
            raise ModelError(
                f"the model sent a tool call whose id and name are not strings: "
                f"{str(id)[:100]!r}, {str(name)[:100]!r}"
            )
        if raw is None or raw == "":
            return cls(id=id, name=name, arguments={})
        if isinstance(raw, dict):
            return cls(id=id, name=name, arguments=raw)
        try:
            parsed = json.loads(raw)
        except json.JSONDecodeError as exc:
            return cls(id=id, name=name, raw_arguments=raw, arguments_error=f"invalid JSON: {exc}")
        if not isinstance(parsed, dict):
            return cls(
                id=id,
                name=name,
                raw_arguments=raw,
                arguments_error=f"arguments must be a JSON object, got {type(parsed).__name__}",
            )
        return cls(id=id, name=name, arguments=parsed)

    def arguments_json(self) -> str:
        """The arguments as JSON text (the raw text when they did not parse)."""
        if self.arguments is None:
            return self.raw_arguments or ""
        return _arguments_json(self.arguments)


#: json.dumps(…, sort_keys=True, separators=(",", ":")), its encoder made once: every turn
#: encodes its calls' arguments (runtime.jsontext).
_arguments_json = writer(json.JSONEncoder(sort_keys=True, separators=(",", ":")))


class UserMessage(Record, kw_only=True, tag_field="kind", tag="user"):
    kind: ClassVar[str] = "user"
    content: str
    #: Why the loop (not the caller) said this: continuation after a token-limit cut, or a
    #: correction after an answer failed the output schema. None for the caller's input.
    purpose: Literal["continue", "correct"] | None = None


class AssistantMessage(Record, kw_only=True, tag_field="kind", tag="assistant"):
    kind: ClassVar[str] = "assistant"
    text: str | None = None
    tool_calls: list[ToolCall] = msgspec.field(default_factory=list)
    usage: Usage = msgspec.field(default_factory=Usage)
    model: str = ""  # the spec's model name that answered
    agent: str = ""  # the agent that asked (in a team; "" in runs from before teams)
    model_id: str = ""
    stop_reason: Literal["end_turn", "tool_use", "max_tokens"] = "end_turn"
    turn: int = 0
    #: Opaque data a provider needs back on later turns (e.g. reasoning signatures).
    provider_data: dict[str, Any] | None = None


class ImagePart(Record, kw_only=True):
    mime_type: str
    data: str  # base64


class ToolResultMessage(Record, kw_only=True, tag_field="kind", tag="tool_result"):
    kind: ClassVar[str] = "tool_result"
    tool_call_id: str
    tool_name: str  # the model-facing name
    #: The tool's identity, as the spec names it (`refund`, `builtin:http_request`,
    #: `mcp:orders/delete.item`): what approval rules, effects and cache reuse match on.
    tool_ref: str | None = None
    content: str  # what the model reads (capped)
    success: bool = True
    inputs: dict[str, Any] | None = None
    output: Any = None  # the tool's own return value when small enough; else a preview
    output_truncated: bool = False  # `output` is a preview (the whole is at full_output_ref)
    duration_ms: int = 0
    turn: int = 0
    full_output_ref: str | None = None  # where the uncapped output lives (S3 key)
    full_size: int | None = None  # characters of the uncapped output
    at: float = 0.0  # when the call finished (epoch seconds)
    reused_from: str | None = None  # the earlier call whose cached output answered this one
    outcome_unknown: bool = False
    decided_by: str | None = None  # who approved, edited or answered this call (the caller)
    child_run_id: str | None = None  # the run that answered an ask_<agent> call
    #: Images the tool returned, for providers that accept images in tool results; the
    #: `content` text always describes them for the others.
    images: list[ImagePart] = msgspec.field(default_factory=list)


class SummaryMessage(Record, kw_only=True, tag_field="kind", tag="summary"):
    """A compaction's summary of the conversation before message `covers_before` of its run
    (and of the session history the run was shown). Persisted like any message, so a
    resumed run never asks for it again; the model reads it as a user message in place of
    what it replaces (runtime.engine.context)."""

    kind: ClassVar[str] = "summary"
    content: str
    covers_before: int
    replaced: int = 0  # messages it stands for (history included)
    model: str = ""
    usage: Usage = msgspec.field(default_factory=Usage)


CLARIFY_TOOL = "agent_clarify"
#: Characters of an earlier run's tool output that a later run of the session sees.
EARLIER_OUTPUT_CHARS = 2000


def as_earlier(message: Message) -> Message:
    """The message as later runs of its session see it: tool outputs cut to a preview (the
    full output stays in the tool-output cache) and without their images (the text still
    describes them), clarification answers kept whole."""
    if not isinstance(message, ToolResultMessage) or message.tool_name == CLARIFY_TOOL:
        return message
    update: dict[str, Any] = {"images": []} if message.images else {}
    if len(message.content) > EARLIER_OUTPUT_CHARS:
        note = f"\n[earlier output shortened from {len(message.content)} characters]"
        update["content"] = message.content[:EARLIER_OUTPUT_CHARS] + note
    return replace(message, **update) if update else message


#: A tagged union: `kind` says which (msgspec dispatches on it when it validates).
Message = UserMessage | AssistantMessage | ToolResultMessage | SummaryMessage


def message_from_dict(data: dict[str, Any]) -> Message:
    """A message from JSON-able data (a stored one, or a request's), validated; coerced as
    pydantic's lax mode did ("3" for an int)."""
    return load(Message, data, strict=False)  # type: ignore[arg-type]
