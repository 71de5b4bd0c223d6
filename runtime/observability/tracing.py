"""Traces of runs: what the engine calls, and nothing loaded until a span is recorded.

The engine holds `tracer_for(...)`: None when the spec has no `deployment.telemetry` (each
traced point of the loop is then one `None` check, and no OpenTelemetry module is ever
imported), else a RunTracer. A RunTracer is cheap to make: the API function, which only
starts runs, uses it to store the run's trace on its head and never loads the SDK; the
first span an advance records loads it (runtime.observability.spans, .otel).

The spans of a run, in the OpenTelemetry GenAI conventions (runtime.observability.genai):

    invoke_agent {agent}          the whole run, written when it ends (ids from the head)
    ├─ invoke_agent {agent}       one per advance (a Lambda invocation, an inline start…)
    │  ├─ chat {model}            each model call; retries and fallbacks are its events
    │  ├─ execute_tool {tool}     each tool result; hook decisions, approval as its events
    │  └─ (events)                approvals asked, questions, handoffs, compactions, …
    └─ invoke_agent {agent}       the advance that resumed it, a day later, elsewhere

One trace per run across pauses and processes: its trace id and root span id are on the run
head (`RunHead.trace`, committed with the run's start), and every advance parents its span
on that root, which the advance that ends the run emits with exactly those ids.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any

from runtime.observability import ids
from runtime.store.base import RunHead, TraceRef

if TYPE_CHECKING:
    from runtime.clock import Clock
    from runtime.engine.commits import RunCursor
    from runtime.events import Event, EventListener
    from runtime.messages import ToolResultMessage
    from runtime.models.base import Model, ModelRequest, ModelResponse
    from runtime.observability.spans import SpanRecorder
    from runtime.spec.plain import AgentfnSpec, RetrySettings, TelemetrySettings

log = logging.getLogger("agentfn.tracing")

#: What a traced point enters when it records nothing: shared, stateless, costs no object.
NOT_TRACED: AbstractContextManager[None] = nullcontext()


def tracer_for(spec: AgentfnSpec, clock: Clock, secrets: Any = None) -> RunTracer | None:
    """The engine's tracer, or None when the spec turns telemetry off (absent)."""
    settings = spec.deployment.telemetry
    return None if settings is None else RunTracer(spec, settings, clock, secrets)


class RunTracer:
    """Records the spans of the runs one engine advances (see the module)."""

    def __init__(
        self,
        spec: AgentfnSpec,
        settings: TelemetrySettings,
        clock: Clock,
        secrets: Callable[[str], str] | None = None,
    ):
        self.spec = spec
        self.settings = settings
        self.clock = clock
        self._secrets = secrets
        self._recorder: SpanRecorder | None = None
        self._broken = False

    # ---- ids (no SDK) -------------------------------------------------------------------

    def new_ref(self, now: float) -> TraceRef:
        return ids.new_ref(now)

    def child_ref(self, parent: RunHead) -> TraceRef:
        return ids.child_ref(parent)

    # ---- spans ----------------------------------------------------------------------------

    def recorder(self) -> SpanRecorder | None:
        """The SDK side, built on first use. A failure to build it (a header secret that
        cannot be read) is logged and leaves this advance untraced; it is tried again on
        the next one. Tracing never fails a run."""
        if self._recorder is None:
            try:
                from runtime.observability.spans import SpanRecorder

                self._recorder = SpanRecorder(self.spec, self.settings, self.clock, self._resolve)
            except Exception as exc:
                if not self._broken:
                    log.warning("tracing is off for now: %s: %s", type(exc).__name__, exc)
                self._broken = True
                return None
        return self._recorder

    def _resolve(self, text: str) -> str:
        if self._secrets is not None:
            return str(self._secrets(text))
        from runtime.secrets import SecretResolver

        return SecretResolver(self.spec)(text)

    def advance(self, run: RunCursor) -> AbstractContextManager[None]:
        """Around one advance: its span, the run's root span when it ends, the flush."""
        recorder = self.recorder()
        return NOT_TRACED if recorder is None else recorder.advance(run, ids.ref_of(run.head))

    def chat(
        self,
        run: RunCursor,
        chain: Sequence[tuple[Model, RetrySettings]],
        request: ModelRequest,
    ) -> Awaitable[tuple[Model, ModelResponse]]:
        """The model call (with its retries and fallbacks) inside a `chat` span."""
        recorder = self._recorder  # built by the advance around it
        if recorder is None:
            from runtime.models.retry import request_with_fallbacks

            return request_with_fallbacks(chain, request, self.clock)
        return recorder.chat(run, chain, request)

    def tool(self, run: RunCursor, result: ToolResultMessage) -> AbstractContextManager[None]:
        """Around the commit of a tool's result: its `execute_tool` span, current while the
        commit's events (hook decisions) are told."""
        recorder = self._recorder
        return NOT_TRACED if recorder is None else recorder.tool(run, result)

    def listening(self, listener: EventListener | None) -> EventListener:
        """`listener`, after each committed event becomes an event of the current span
        (approvals asked, questions, handoffs, compactions, hook decisions…)."""

        def told(event: Event) -> None:
            if self._recorder is not None:
                self._recorder.on_event(event)
            if listener is not None:
                listener(event)

        return told
