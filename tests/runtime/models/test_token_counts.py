"""A prompt's messages are counted incrementally (runtime.models.tokens.messages_tokens), and
the count is always the one a whole recount gives: when the prompt grows, when a message in
the middle is replaced (a compaction's placeholder), when it shrinks (a summary), and when
two different conversations alternate in one thread."""

from __future__ import annotations

import threading

from runtime.messages import AssistantMessage, Message, ToolCall, ToolResultMessage, UserMessage
from runtime.models import tokens


def _whole(view: list[Message]) -> int:
    return sum(tokens.message_tokens(m) for m in view)


def _turn(i: int) -> list[Message]:
    call = ToolCall(id=f"c{i}", name="lookup", arguments={"i": i, "pad": "x" * i})
    return [
        AssistantMessage(text=f"step {i}", tool_calls=[call], turn=i),
        ToolResultMessage(tool_call_id=f"c{i}", tool_name="lookup", content="r" * (7 * i), turn=i),
    ]


def test_the_incremental_count_is_the_whole_count_whatever_changes() -> None:
    view: list[Message] = [UserMessage(content="go")]
    other: list[Message] = [UserMessage(content="another conversation, longer")]
    for i in range(1, 40):
        view = [*view, *_turn(i)]
        assert tokens.messages_tokens(view) == _whole(view)
        other = [*other, *_turn(100 + i)]
        assert tokens.messages_tokens(other) == _whole(other)  # alternating conversations
    pruned = list(view)
    pruned[5] = ToolResultMessage(tool_call_id="c2", tool_name="lookup", content="[removed]")
    assert tokens.messages_tokens(pruned) == _whole(pruned)  # replaced in the middle
    summarised = [UserMessage(content="summary of it all"), *view[-4:]]
    assert tokens.messages_tokens(summarised) == _whole(summarised)  # shorter, new start
    assert tokens.messages_tokens(view[:3]) == _whole(view[:3])  # a prefix of an earlier one
    assert tokens.messages_tokens([]) == 0


def test_each_thread_counts_its_own_conversation() -> None:
    results: dict[int, bool] = {}

    def count(n: int) -> None:
        view: list[Message] = [UserMessage(content=f"thread {n}")]
        ok = True
        for i in range(1, 60):
            view = [*view, *_turn(i + n)]
            ok = ok and tokens.messages_tokens(view) == _whole(view)
        results[n] = ok

    threads = [threading.Thread(target=count, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == {n: True for n in range(4)}
