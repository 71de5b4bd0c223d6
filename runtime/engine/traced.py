"""Where the loop meets tracing (runtime.observability.tracing).

`_tracer` is None when the spec has no `deployment.telemetry`: every traced point is then
one `None` check, and nothing of OpenTelemetry is imported. The points: each advance
(loop.advance), each model call (`_request`), each tool result's commit
(tool_phase._record_result), a run's start and a child run's (its trace ids on the head).
"""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from runtime.engine.commits import RunCursor
from runtime.models.base import Model, ModelRequest, ModelResponse
from runtime.models.retry import request_with_fallbacks

if TYPE_CHECKING:
    from runtime.clock import Clock
    from runtime.observability.tracing import RunTracer


class Traced:
    _tracer: RunTracer | None
    clock: Clock
    chunks: Any  # runtime.live.live.ChunkListener | None

    def _models_for(self, run: RunCursor) -> list[tuple[Model, Any]]:
        raise NotImplementedError  # runtime.engine.loop

    def _request(
        self, run: RunCursor, request: ModelRequest
    ) -> Awaitable[tuple[Model, ModelResponse]]:
        """Ask the agent's model, with its retries and fallbacks (inside a `chat` span when
        traced), streaming its text to the chunk listener when there is one."""
        if self.chunks is not None and request.purpose == "answer":
            from runtime.live.live import ChunkSink

            sink = ChunkSink(self.chunks, run.head.run_id, run.agent, request.turn)
            request = replace(request, on_text=sink)
        if self._tracer is None:
            return request_with_fallbacks(self._models_for(run), request, self.clock)
        return self._tracer.chat(run, self._models_for(run), request)
