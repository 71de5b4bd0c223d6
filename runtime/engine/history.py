"""What a run sees of its session: the messages of the session's earlier successful runs.

Earlier tool outputs are shortened to a preview (the full output stays in S3), except
`agent_clarify` answers, which are kept whole so a later run sees the question answered.
The most recent `history_limit` messages are kept, cut at a user input so a tool call is
never separated from its result.
"""

from __future__ import annotations

from runtime.messages import Message, ToolResultMessage, UserMessage
from runtime.store.base import SessionRun
from runtime.tools.builtins import CLARIFY

EARLIER_OUTPUT_CHARS = 2000


def session_history(runs: list[SessionRun], limit: int) -> list[Message]:
    history: list[Message] = []
    for run in runs:
        if run.status != "succeeded":
            continue
        for message in run.messages:
            if (
                isinstance(message, ToolResultMessage)
                and message.tool_name != CLARIFY
                and len(message.content) > EARLIER_OUTPUT_CHARS
            ):
                shortened = message.content[:EARLIER_OUTPUT_CHARS]
                note = f"\n[earlier output shortened from {len(message.content)} characters]"
                message = message.model_copy(update={"content": shortened + note})
            history.append(message)
    if len(history) <= limit:
        return history
    tail = history[-limit:] if limit else []
    for index, message in enumerate(tail):
        if isinstance(message, UserMessage) and message.purpose is None:
            return tail[index:]
    return []
