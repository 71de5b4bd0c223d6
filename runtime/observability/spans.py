"""The spans of a run, recorded with the OpenTelemetry SDK (see runtime.observability.tracing
for their shape). Imported only when a run is traced.

Times come from the engine's clock, like every time the run stores, so a span and the
run's events agree (and a test's fake clock drives both). A span never fails a run: the SDK
swallows export errors, and the engine's code runs the same whether a span records or not.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from runtime.engine.commits import BudgetSpent, RunCursor
from runtime.engine.cost import call_cost
from runtime.errors import RunError, StateConflict
from runtime.events import Event
from runtime.messages import AssistantMessage, ToolResultMessage, Usage
from runtime.models.base import Model, ModelRequest, ModelResponse
from runtime.models.retry import request_with_fallbacks
from runtime.observability import genai as g
from runtime.observability import otel
from runtime.spec.plain import AgentfnSpec, RetrySettings, TelemetrySettings
from runtime.store.base import TERMINAL, RunHead, TraceRef

#: Events that are spans of their own (or the span's attributes), not span events.
SPANNED = frozenset(
    {"run_started", "step_started", "model_response", "tool_call", "tool_result",
     "step_completed", "run_completed"}
)  # fmt: skip
_ERROR_CODE = re.compile(r"^(?:Error: )?([A-Z][A-Z0-9_]{2,})\b")
#: The span of agentfn's that committed events belong to (never a caller's own span).
_ours: ContextVar[Span | None] = ContextVar("agentfn_span", default=None)


class SpanRecorder:
    """Records spans for one engine's runs (made by RunTracer on the first advance)."""

    def __init__(
        self,
        spec: AgentfnSpec,
        settings: TelemetrySettings,
        clock: Any,
        resolve: Callable[[str], str],
    ):
        self.spec = spec
        self.clock = clock
        self.capture = settings.capture_content
        self._tracer = otel.provider_for(settings, resolve)

    def _ns(self, at: float | None = None) -> int:
        return int((self.clock.now() if at is None else at) * 1e9)

    def _model_attributes(self, name: str) -> dict[str, Any]:
        config = self.spec.models[name]
        provider = g.PROVIDER_NAMES.get(config.provider, config.provider)
        return {g.PROVIDER: provider, g.SYSTEM: provider, g.REQUEST_MODEL: config.model_id}

    def _agent_attributes(self, head: RunHead, agent: str) -> dict[str, Any]:
        return {
            g.OPERATION: "invoke_agent",
            g.AGENT_NAME: agent,
            g.AGENT_DESCRIPTION: self.spec.agents[agent].description,
            g.CONVERSATION_ID: head.session_id,
            "agentfn.run_id": head.run_id,
            **self._model_attributes(self.spec.model_for(agent)),
        }

    # ---- invoke_agent ---------------------------------------------------------------------

    @contextmanager
    def advance(self, run: RunCursor, ref: TraceRef) -> Iterator[None]:
        head = run.head
        attributes = {
            **self._agent_attributes(head, run.agent),
            "agentfn.scope": "advance",
            "agentfn.status.before": head.status,
            "agentfn.turn.before": head.turn,
        }
        span = self._tracer.start_span(
            f"invoke_agent {run.agent}",
            context=otel.remote_parent(ref.trace_id, ref.span_id),
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            links=otel.lambda_links(),
            start_time=self._ns(),
        )
        usage, cost = head.usage, head.cost_usd
        failure: RunError | None = None
        try:
            with _current(span):
                yield
        except RunError as exc:  # the engine commits the failure right after
            failure = exc
            _error(span, exc.error_code, str(exc))
            raise
        except (BudgetSpent, StateConflict) as exc:  # released, handed off, or taken over
            span.add_event("released", {"agentfn.reason": type(exc).__name__})
            raise
        except BaseException as exc:  # a bug, an interrupt: the message only, redacted
            message = g.redacted(str(exc), g.MAX_ERROR_CHARS)
            span.add_event("exception", {"exception.type": type(exc).__name__,
                                         "exception.message": message})  # fmt: skip
            _error(span, type(exc).__name__, message)
            raise
        finally:
            now = run.head
            span.set_attributes(
                {
                    "agentfn.status": "failed" if failure else now.status,
                    "agentfn.turn": now.turn,
                    g.INPUT_TOKENS: now.usage.input_tokens - usage.input_tokens,
                    g.OUTPUT_TOKENS: now.usage.output_tokens - usage.output_tokens,
                    "agentfn.cost_usd": round(now.cost_usd - cost, 6),
                }
            )
            span.end(end_time=self._ns())
            if failure is not None or (now.status in TERMINAL and head.status not in TERMINAL):
                self._root(now, ref, failure)
            otel.flush()

    def _root(self, head: RunHead, ref: TraceRef, failure: RunError | None) -> None:
        """The span of the whole run, from its start to now, with the ids its head holds."""
        attributes = {
            **self._agent_attributes(head, head.agent),
            "agentfn.scope": "run",
            "agentfn.status": "failed" if failure else head.status,
            "agentfn.turns": head.turn,
            g.INPUT_TOKENS: head.usage.input_tokens,
            g.OUTPUT_TOKENS: head.usage.output_tokens,
            "agentfn.cost_usd": round(head.cost_usd, 6),
        }
        if head.model_used:
            attributes[g.RESPONSE_MODEL] = head.model_used
        if head.agent_path:
            attributes["agentfn.agent_path"] = list(head.agent_path)
        parent = (
            otel.remote_parent(ref.trace_id, ref.parent_span_id)
            if ref.parent_span_id
            else Context()  # a root: never under whatever span is current here
        )
        with otel.forced_ids(ref.trace_id, ref.span_id):
            span = self._tracer.start_span(
                f"invoke_agent {head.agent}",
                context=parent,
                kind=SpanKind.INTERNAL,
                attributes=attributes,
                start_time=self._ns(head.created_at),
            )
        code = failure.error_code if failure else head.error_code
        if code or head.status in ("failed", "cancelled"):
            _error(span, code or head.status, str(failure or head.error_message or ""))
        span.end(end_time=self._ns())

    # ---- chat -------------------------------------------------------------------------------

    async def chat(
        self,
        run: RunCursor,
        chain: Sequence[tuple[Model, RetrySettings]],
        request: ModelRequest,
    ) -> tuple[Model, ModelResponse]:
        first = chain[0][0]
        attributes: dict[str, Any] = {
            g.OPERATION: "chat",
            **self._model_attributes(first.name),
            g.AGENT_NAME: run.agent,
            g.CONVERSATION_ID: run.head.session_id,
            "agentfn.model": first.name,
            "agentfn.purpose": request.purpose,
            "agentfn.prompt.estimated_tokens": request.estimated_tokens,
            "agentfn.tools_offered": len(request.tools),
        }
        if self.capture:
            attributes[g.SYSTEM_INSTRUCTIONS] = g.system_instructions(request.system)
            attributes[g.INPUT_MESSAGES] = g.input_messages(request.messages)
        span = self._tracer.start_span(
            f"chat {attributes[g.REQUEST_MODEL]}",
            kind=SpanKind.CLIENT,
            attributes=attributes,
            start_time=self._ns(),
        )
        names = [m.name for m, _ in chain]

        def on_retry(name: str, attempt: int, error: RunError, delay: float | None) -> None:
            detail = {"agentfn.model": name, g.ERROR_TYPE: type(error).__name__}
            detail["agentfn.error"] = g.redacted(str(error), g.MAX_ERROR_CHARS)
            if delay is not None:
                span.add_event("retry", {**detail, "agentfn.attempt": attempt + 1,
                                         "agentfn.delay_s": delay}, self._ns())  # fmt: skip
            elif name != names[-1]:
                following = names[names.index(name) + 1]
                span.add_event("fallback", {**detail, "agentfn.next_model": following}, self._ns())

        try:
            with trace.use_span(span, record_exception=False, set_status_on_exception=False):
                model, response = await request_with_fallbacks(
                    chain, request, self.clock, on_retry=on_retry
                )
        except asyncio.CancelledError:  # the advance's budget ran out: asked again later
            span.add_event("cancelled", {"agentfn.reason": "the advance's time budget ran out"})
            span.end(end_time=self._ns())
            raise
        except BaseException as exc:
            _error(span, type(exc).__name__, str(exc))
            span.end(end_time=self._ns())
            raise
        usage = response.usage
        finish = g.FINISH_REASON_NAMES.get(response.stop_reason, response.stop_reason)
        span.set_attributes(
            {
                g.RESPONSE_MODEL: response.model_id or model.model_id,
                g.FINISH_REASONS: [finish],
                g.INPUT_TOKENS: usage.input_tokens,
                g.OUTPUT_TOKENS: usage.output_tokens,
                "agentfn.cost_usd": round(call_cost(self.spec.models[model.name].price, usage), 6),
                "agentfn.tool_calls": [c.name for c in response.tool_calls],
            }
        )
        if model is not first:
            span.set_attribute("agentfn.answered_by", model.name)
        if self.capture:
            answer = AssistantMessage(
                text=response.text,
                tool_calls=response.tool_calls,
                stop_reason=response.stop_reason,
                usage=Usage(),
            )
            span.set_attribute(g.OUTPUT_MESSAGES, g.output_messages(answer))
        span.end(end_time=self._ns())
        return model, response

    # ---- execute_tool -------------------------------------------------------------------

    @contextmanager
    def tool(self, run: RunCursor, result: ToolResultMessage) -> Iterator[None]:
        end = result.at or self.clock.now()
        attributes: dict[str, Any] = {
            g.OPERATION: "execute_tool",
            g.TOOL_NAME: result.tool_name,
            g.TOOL_CALL_ID: result.tool_call_id,
            g.TOOL_TYPE: "function",  # run by agentfn (the client), not by the model's side
            g.AGENT_NAME: run.agent,
            "agentfn.turn": result.turn,
        }
        if result.tool_ref:
            attributes["agentfn.tool.ref"] = result.tool_ref
            attributes["agentfn.tool.source"] = self._source(result.tool_ref)
        if result.reused_from:
            attributes["agentfn.tool.reused_from"] = result.reused_from
        if result.decided_by:
            attributes["agentfn.decided_by"] = result.decided_by
        if self.capture:
            attributes[g.TOOL_ARGUMENTS] = g.as_json(result.inputs)
            attributes[g.TOOL_RESULT] = g.redacted(result.content)
        start = self._ns(end - result.duration_ms / 1000)
        span = self._tracer.start_span(
            f"execute_tool {result.tool_name}",
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            start_time=start,
        )
        decision = run.head.decisions.get(result.tool_call_id)
        if decision is not None:
            detail: dict[str, Any] = {
                "approved": decision.approved,
                "timed_out": decision.timed_out,
            }
            if decision.by:
                detail["by"] = decision.by
            if decision.edited_inputs is not None:
                detail["edited"] = True
            if self.capture and decision.reason:
                detail["reason"] = g.redacted(decision.reason)
            span.add_event("approval_decided", detail, start)
        if not result.success:
            _error(span, _tool_error(result), "")
        try:
            with _current(span):
                yield
        finally:
            span.end(end_time=max(self._ns(end), start))

    def _source(self, ref: str) -> str:
        if ref.startswith(("mcp:", "builtin:")):
            return ref.split(":", 1)[0]
        tool = self.spec.tools.get(ref)
        return tool.type if tool is not None else "team"

    # ---- committed events ---------------------------------------------------------------

    def on_event(self, event: Event) -> None:
        """A committed event, as an event of agentfn's span current where it was committed
        (an event committed outside one, by a person's decision, is not a span's)."""
        if event.type in SPANNED:
            return
        span = _ours.get()
        if span is not None and span.is_recording():
            attributes = g.event_attributes(event.data, self.capture)
            span.add_event(event.type, attributes, self._ns(event.at))


@contextmanager
def _current(span: Span) -> Iterator[None]:
    """`span` is the current span (children nest under it) and agentfn's (events go to it)."""
    token = _ours.set(span)
    try:
        with trace.use_span(span, record_exception=False, set_status_on_exception=False):
            yield
    finally:
        _ours.reset(token)


def _error(span: Span, kind: str, message: str) -> None:
    span.set_attribute(g.ERROR_TYPE, kind)
    span.set_status(Status(StatusCode.ERROR, g.redacted(message, g.MAX_ERROR_CHARS) or kind))


def _tool_error(result: ToolResultMessage) -> str:
    if result.outcome_unknown:
        return "OUTCOME_UNKNOWN"
    output = result.output
    text = output.get("error") if isinstance(output, dict) else None
    match = _ERROR_CODE.match(str(text)) if text else _ERROR_CODE.match(result.content)
    return match.group(1) if match else "tool_error"
