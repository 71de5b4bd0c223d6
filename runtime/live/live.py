"""Live delivery of a run: its committed events, and the answer's text as it is written.

Committed events reach listeners after each commit (runtime.events.EventListener). Text
chunks never touch the store: while a model streams, the engine hands each delta to a
`ChunkListener` as a small dict, and whoever watches (`agentfn run`'s terminal, the dev
server's SSE hub, the WebSocket publisher when deployed) passes it on. A chunk says which
model and attempt wrote it, so a watcher that sees the attempt or the model change knows
the text so far was discarded (a retry, a fallback) and starts the answer over.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

log = logging.getLogger(__name__)

#: Receives `{"type": "chunk", "run_id", "agent", "turn", "model", "attempt", "text", "at"}`.
ChunkListener = Callable[[dict[str, Any]], None]


@dataclass(frozen=True)
class ChunkSink:
    """The `on_text` of one model request: turns each delta into a chunk for `listener`.
    A failing listener is logged and dropped: watching never breaks a run."""

    listener: ChunkListener
    run_id: str
    agent: str
    turn: int
    model: str = ""
    attempt: int = 0

    def __call__(self, text: str) -> None:
        chunk = {"type": "chunk", "run_id": self.run_id, "agent": self.agent,
                 "turn": self.turn, "model": self.model, "attempt": self.attempt,
                 "text": text, "at": time.time()}  # fmt: skip
        try:
            self.listener(chunk)
        except Exception:  # a watcher's failure is not the run's
            log.warning("a chunk listener failed", exc_info=True)

    def for_attempt(self, model: str, attempt: int) -> ChunkSink:
        """The sink of one attempt of one model (runtime.models.retry tags each)."""
        return replace(self, model=model, attempt=attempt)
