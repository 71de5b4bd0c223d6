"""Facts derived from a run's persisted messages: nothing here is stored twice."""

from __future__ import annotations

import secrets
from typing import Any

from runtime.errors import DoomLoop, InvalidRequest
from runtime.messages import (
    AssistantMessage,
    Message,
    SummaryMessage,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from runtime.structs import replace


def last_assistant(messages: list[Message]) -> tuple[int, AssistantMessage] | None:
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, AssistantMessage):
            return index, message
    return None


def pending_calls(messages: list[Message]) -> list[ToolCall]:
    """Tool calls of the latest answer that have no result yet, in the model's order."""
    found = last_assistant(messages)
    if found is None:
        return []
    index, answer = found
    answered = {m.tool_call_id for m in messages[index + 1 :] if isinstance(m, ToolResultMessage)}
    return [call for call in answer.tool_calls if call.id not in answered]


def answer_text(messages: list[Message]) -> str:
    """The final answer: the latest answer plus the continuations that completed it."""
    parts: list[str] = []
    for message in reversed(messages):
        if isinstance(message, AssistantMessage):
            parts.append(message.text or "")
        elif isinstance(message, UserMessage) and message.purpose == "continue":
            continue
        elif isinstance(message, SummaryMessage):
            continue  # a compaction between two parts of the answer
        else:
            break
    return "".join(reversed(parts))


def recent_calls(messages: list[Message], count: int) -> list[ToolCall]:
    """The last `count` requested tool calls, oldest first.

    Walks backwards and stops early: the cost does not grow with the conversation.
    """
    found: list[ToolCall] = []
    for message in reversed(messages):
        if isinstance(message, AssistantMessage):
            for call in reversed(message.tool_calls):
                found.append(call)
                if len(found) >= count:
                    return found[::-1]
    return found[::-1]


def same_call(a: ToolCall, b: ToolCall) -> bool:
    """Same tool, same arguments (dict equality ignores key order; raw text when unparsed)."""
    return a.name == b.name and a.arguments == b.arguments and a.raw_arguments == b.raw_arguments


def own_call_ids(calls: list[ToolCall]) -> list[ToolCall]:
    """Calls with ids unique across runs: a provider that sent none (Gemini, some
    OpenAI-compatible servers, a script without ids) or repeated one gets a random id. Ids
    key the tool-output cache and are what a person approves, so they must never repeat."""
    seen: set[str] = set()
    owned: list[ToolCall] = []
    for call in calls:
        if not call.id or call.id in seen:
            call = replace(call, id=f"call_{secrets.token_hex(12)}")
        seen.add(call.id)
        owned.append(call)
    return owned


#: The same call (tool and arguments) this many times in a row ends the run DOOM_LOOP.
DOOM_REPEATS = 3


def doom_loop(messages: list[Message], calls: list[ToolCall]) -> DoomLoop | None:
    """The doom loop the new calls would complete, if any (looks back only as far as needed)."""
    sequence = recent_calls(messages, DOOM_REPEATS - 1) + calls
    for end in range(len(sequence) - len(calls), len(sequence)):
        if end + 1 < DOOM_REPEATS:
            continue
        window = sequence[end - DOOM_REPEATS + 1 : end + 1]
        if all(same_call(window[0], other) for other in window[1:]):
            return DoomLoop(
                f"the model called {window[0].name} with the same arguments "
                f"{DOOM_REPEATS} times in a row"
            )
    return None


def check_max_turns(spec: Any, agent: str, max_turns: int | None) -> None:
    """A per-run `max_turns` is a positive number no larger than the agent's own limit."""
    if max_turns is None:
        return
    ceiling = spec.agents[agent].max_turns or spec.defaults.max_turns
    if isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1:
        raise InvalidRequest("max_turns: must be a whole number of at least 1", field="max_turns")
    if max_turns > ceiling:
        raise InvalidRequest(
            f"max_turns: {max_turns} is over the max_turns of agent {agent!r} ({ceiling}), "
            "which is the ceiling for a run",
            field="max_turns",
        )
