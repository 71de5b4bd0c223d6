"""The prompt a run sends, derived from what is persisted and kept inside the model's window.

Nothing persisted is ever rewritten. The run head's `ContextState` says what compaction did:
tool results before `pruned_before` (and, once `history_pruned`, the session history's) are
sent as placeholders naming their cache id; the messages before `base` are replaced by the
summary at `summary_seq`. Every prompt is a pure function of the messages and that state,
so a resumed run sends exactly what it would have sent, and a run is loaded from `base`.

Estimates need no tokenizer and no network: the latest answer's reported usage covers the
prompt it answered (plus its own output), so only what came after it is estimated, at four
characters a token. After a compaction (the view changed under that answer) the whole
prompt is estimated once, until the next answer reports again.
"""

from __future__ import annotations

from collections.abc import Sequence

from runtime.messages import (
    CLARIFY_TOOL,
    AssistantMessage,
    Message,
    SummaryMessage,
    ToolResultMessage,
    UserMessage,
)
from runtime.models.base import ToolSpec
from runtime.models.tokens import (
    CHARS_PER_TOKEN,
    IMAGE_TOKENS,
    MESSAGE_TOKENS,
    message_tokens,
    prompt_tokens,
    tokens,
    tools_tokens,
)
from runtime.store.base import ContextState
from runtime.structs import replace

#: Results this short are kept whole: a placeholder would save nothing.
PRUNE_MIN_CHARS = 400
#: A compaction is given up on after this many failed attempts (seed 004's figure).
MAX_FAILURES = 3

SUMMARY_INTRO = (
    "[The earlier conversation was summarised to fit the context window. Tool outputs it "
    "mentions keep their ids.]\n"
)

#: The counting lives in runtime.models.tokens (the scripted provider counts the same way).
__all__ = [
    "CHARS_PER_TOKEN",
    "IMAGE_TOKENS",
    "MESSAGE_TOKENS",
    "message_tokens",
    "prompt_tokens",
    "tokens",
    "tools_tokens",
]


def estimate(
    system: str,
    specs: Sequence[ToolSpec],
    view: Sequence[Message],
    messages: Sequence[Message],
    base: int,
    state: ContextState,
) -> int:
    """The prompt's tokens: the latest answer's reported usage (when it answered the view
    as it is now) plus an estimate of what came after it; else the whole prompt estimated."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, AssistantMessage):
            seen = message.usage.input_tokens
            if seen and base + index >= state.changed_at:
                later = sum(message_tokens(m) for m in messages[index + 1 :])
                return seen + message.usage.output_tokens + later
            break
    return prompt_tokens(system, specs, view)


def prunable(message: Message) -> bool:
    """A tool result worth a placeholder: long, and not a person's answer."""
    return (
        isinstance(message, ToolResultMessage)
        and message.tool_name != CLARIFY_TOOL
        and len(message.content) > PRUNE_MIN_CHARS
    )


_placeholders: dict[tuple[int, bool], tuple[ToolResultMessage, ToolResultMessage]] = {}


def placeholder(message: ToolResultMessage, readable: bool) -> ToolResultMessage:
    """What the model reads instead of a pruned result: its size and, when the agent can
    read the cache, the id that brings it back with session_cache_get. (Made once per
    message: every later prompt sends the same one.)"""
    known = _placeholders.get((id(message), readable))
    if known is not None and known[0] is message:
        return known[1]
    text = (
        f"[output of {message.tool_name} removed from the context to save space "
        f"({len(message.content)} characters)"
    )
    text += f"; read it with session_cache_get(id={message.tool_call_id!r})]" if readable else "]"
    made = replace(message, content=text, images=[], output=None)
    if len(_placeholders) >= 8_192:
        _placeholders.clear()
    _placeholders[(id(message), readable)] = (message, made)
    return made


def view(
    history: Sequence[Message],
    messages: Sequence[Message],
    base: int,
    state: ContextState,
    readable: bool,
) -> list[Message]:
    """The messages sent to the model (see the module docstring)."""
    if state.summary_seq is None and not state.pruned_before and not state.history_pruned:
        # Never compacted (the common case): the messages as they are, at list speed.
        earlier = [m for m in history if not isinstance(m, SummaryMessage)]
        return [*earlier, *messages]
    out: list[Message] = []
    summary = None
    if state.summary_seq is not None and 0 <= state.summary_seq - base < len(messages):
        summary = messages[state.summary_seq - base]
    if isinstance(summary, SummaryMessage):
        out.append(UserMessage(content=SUMMARY_INTRO + summary.content))
    else:
        for message in history:
            if isinstance(message, SummaryMessage):
                continue  # an earlier run's own compaction: its messages follow anyway
            if state.history_pruned and prunable(message):
                out.append(placeholder(message, readable))  # type: ignore[arg-type]
            else:
                out.append(message)
    for index, message in enumerate(messages):
        if isinstance(message, SummaryMessage):
            continue
        if base + index < state.pruned_before and prunable(message):
            out.append(placeholder(message, readable))  # type: ignore[arg-type]
        else:
            out.append(message)
    return out


def keep_from(messages: Sequence[Message], base: int, turns: int) -> int:
    """The number of the answer that starts the last `turns` turns (everything from it on is
    kept whole); `base` when the run has no more turns than that since its base."""
    seen: list[int] = []
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, AssistantMessage) and message.turn not in seen:
            if len(seen) == turns:
                return base + index + 1 + _to_answer(messages[index + 1 :])
            seen.append(message.turn)
    return base


def _to_answer(messages: Sequence[Message]) -> int:
    """How far into `messages` the first answer is (a cut never separates a call from its
    result, and the kept part starts with an answer)."""
    for index, message in enumerate(messages):
        if isinstance(message, AssistantMessage):
            return index
    return len(messages)


def transcript(older: Sequence[Message], limit: int) -> str:
    """The older conversation as plain text for the summariser (calls and results as lines,
    not as provider structures), cut in the middle when longer than `limit` characters."""
    lines: list[str] = []
    for message in older:
        if isinstance(message, UserMessage):
            lines.append(f"User: {message.content}")
        elif isinstance(message, AssistantMessage):
            if message.text:
                lines.append(f"Assistant: {message.text}")
            for call in message.tool_calls:
                lines.append(f"Assistant called {call.name} {call.arguments_json()[:500]}")
        elif isinstance(message, ToolResultMessage):
            status = "" if message.success else " (failed)"
            lines.append(
                f"Result of {message.tool_name} [id {message.tool_call_id}]{status}: "
                f"{message.content[:2000]}"
            )
    text = "\n".join(lines)
    if len(text) > limit:
        head = limit * 3 // 10
        omitted = len(text) - limit
        text = f"{text[:head]}\n[… {omitted} characters omitted …]\n{text[-(limit - head) :]}"
    return text


SUMMARY_SYSTEM = (
    "You compact an AI agent's working memory. Summarise the conversation you are given so "
    "the agent can continue the task without it. Keep, precisely: the user's requests and "
    "constraints, decisions made, facts and figures found, identifiers (order numbers, "
    "names, URLs, and the ids of tool results that hold data still needed), what is done "
    "and what is still open. Drop pleasantries and repetition. Write plain prose or short "
    "lists, in the user's language, at most {words} words. Do not continue the task."
)


#: The summary's share of what the window leaves after the system prompt and tools.
SUMMARY_SHARE = 0.25
#: The latest turn's tool results share this part of what the window leaves after the
#: system prompt and tools; each result over its share is sent as a preview (runtime.engine.
#: fitting) with the rest in the cache.
RESULTS_SHARE = 0.5


def summary_allowance(room: int, configured: int) -> int:
    """The most tokens a summary may take: `summary_max_tokens`, at most a quarter of the
    room the window leaves (so a summary always fits beside what is kept)."""
    return max(16, min(configured, int(room * SUMMARY_SHARE)))


def trailing_user(messages: Sequence[Message]) -> int:
    """How many messages at the end are the user's (the run's input, a continuation or a
    correction prompt): what a prompt must carry whatever is summarised."""
    count = 0
    for message in reversed(messages):
        if not isinstance(message, UserMessage) or isinstance(message, SummaryMessage):
            break
        count += 1
    return count


def kept_tokens(
    messages: Sequence[Message], base: int, cut: int, prune_to: int, readable: bool
) -> int:
    """Tokens of the messages from `cut` on, results before `prune_to` as placeholders."""
    total = 0
    for index in range(max(0, cut - base), len(messages)):
        message = messages[index]
        if isinstance(message, SummaryMessage):
            continue
        if base + index < prune_to and prunable(message):
            message = placeholder(message, readable)  # type: ignore[arg-type]
        total += message_tokens(message)
    return total


def plans(messages: Sequence[Message], base: int, keep_turns: int) -> list[tuple[int, int, bool]]:
    """The ways to compact, least lossy first, as (cut, prune_to, summarise): placeholders
    before the kept turns; a summary before them; the same keeping fewer turns (down to
    one); the latest turn's results as placeholders too; everything but the user's trailing
    message summarised. Each later one is smaller."""
    end = base + len(messages)
    out: list[tuple[int, int, bool]] = []
    keep = keep_from(messages, base, keep_turns)
    out.append((keep, keep, False))
    for turns in range(keep_turns, 0, -1):
        cut = keep_from(messages, base, turns)
        out.append((cut, cut, True))
    last = keep_from(messages, base, 1)
    out.append((last, end, True))
    out.append((end - trailing_user(messages), end, True))
    return out
