"""Token estimates without a tokenizer or a network call: four characters a token.

Shared by the engine (runtime.engine.context sizes every prompt with it) and the `scripted`
provider (which refuses a prompt over its window the way real providers do), so a test
double and the engine count one prompt the same way.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence

from runtime.messages import AssistantMessage, Message, ToolResultMessage
from runtime.models.base import ToolSpec

CHARS_PER_TOKEN = 4
MESSAGE_TOKENS = 4  # framing every provider adds per message
IMAGE_TOKENS = 1_000

_tool_tokens: dict[int, tuple[Sequence[ToolSpec], int]] = {}
#: Answers' counts by object (their calls' JSON is the costly part); each entry keeps its
#: message alive, so an id is never reused while it is here.
_answer_tokens: dict[int, tuple[AssistantMessage, int]] = {}
_ANSWERS_KEPT = 8_192


def tokens(text: str) -> int:
    return len(text) // CHARS_PER_TOKEN + 1


def message_tokens(message: Message) -> int:
    if isinstance(message, ToolResultMessage):
        return MESSAGE_TOKENS + tokens(message.content) + IMAGE_TOKENS * len(message.images)
    if isinstance(message, AssistantMessage):
        known = _answer_tokens.get(id(message))
        if known is not None and known[0] is message:
            return known[1]
        calls = sum(tokens(c.name) + tokens(c.arguments_json()) for c in message.tool_calls)
        total = MESSAGE_TOKENS + tokens(message.text or "") + calls
        if len(_answer_tokens) >= _ANSWERS_KEPT:
            _answer_tokens.clear()
        _answer_tokens[id(message)] = (message, total)
        return total
    return MESSAGE_TOKENS + tokens(message.content)


def tools_tokens(specs: Sequence[ToolSpec]) -> int:
    """The tool definitions' share of the prompt (cached: an engine reuses its lists)."""
    cached = _tool_tokens.get(id(specs))
    if cached is not None and cached[0] is specs:
        return cached[1]
    total = sum(
        MESSAGE_TOKENS + tokens(s.name + s.description + json.dumps(s.input_schema)) for s in specs
    )
    if len(_tool_tokens) > 64:
        _tool_tokens.clear()
    _tool_tokens[id(specs)] = (specs, total)
    return total


class _Counted(threading.local):
    """The messages a thread counted last, and their running totals: `sums[i]` is the
    tokens of `messages[:i]`."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.sums: list[int] = [0]


_counted = _Counted()


def messages_tokens(view: Sequence[Message]) -> int:
    """The tokens of a prompt's messages, counting only those the previous count did not
    have. Each turn's prompt is the last one plus the turn's new messages, so a run counts
    each message once instead of its whole history every turn (turn 200 would count ~400
    messages, twice: the engine's estimate and the scripted provider's). The previous
    count's messages are compared by identity (a C-level pass, no counting); from the
    first that differs (a compaction's placeholder or summary) it counts again."""
    counted = _counted
    known, sums = counted.messages, counted.sums
    same = min(len(known), len(view))
    if same and not (known[same - 1] is view[same - 1] and _same_prefix(known, view, same)):
        same = next(i for i, (a, b) in enumerate(zip(known, view, strict=False)) if a is not b)
    del sums[same + 1 :]
    total = sums[same]
    for message in view[same:]:
        total += message_tokens(message)
        sums.append(total)
    counted.messages = list(view)
    return total


def _same_prefix(known: list[Message], view: Sequence[Message], same: int) -> bool:
    """Whether the first `same` messages of both are the same. A list comparison: it takes
    identical items as equal without comparing them (a C loop, ~10 times faster than
    `all(map(is_, …))`); an item equal but not identical counts the same tokens anyway."""
    mine = known if len(known) == same else known[:same]
    if isinstance(view, list):
        theirs = view if len(view) == same else view[:same]
    else:
        theirs = list(view[:same])
    return mine == theirs


def prompt_tokens(system: str, specs: Sequence[ToolSpec], view: Sequence[Message]) -> int:
    """The whole prompt, estimated."""
    return tokens(system) + tools_tokens(specs) + messages_tokens(view)
