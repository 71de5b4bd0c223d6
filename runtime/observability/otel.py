"""The OpenTelemetry SDK side of tracing: providers, ids, exporters, X-Ray.

Imported only when a run is traced (runtime.observability.tracing builds it on the first
span), so a spec without `deployment.telemetry` never loads the SDK.

- One TracerProvider per process and telemetry setting, kept while the container is warm;
  it is never made the global provider (a tool's own instrumentation keeps its own).
- Ids (`RunIds`): trace ids in X-Ray's form (the first 32 bits are the epoch seconds, the
  rest random), which W3C tracing accepts too; and, for the span that covers a whole run,
  exactly the ids its run head stored (`forced_ids`).
- Exporters: OTLP/HTTP (protobuf) to `otlp_endpoint`; with `xray: true` in a Lambda
  function, also to `https://xray.{region}.amazonaws.com/v1/traces`, each request signed
  with SigV4 by the function's role (`xray:PutSpans`). Both through a BatchSpanProcessor
  that the tracer flushes at the end of every advance: Lambda freezes the process when the
  invocation returns, and a span left in the queue would wait for the next one.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import msgspec
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.sdk.trace.sampling import ALWAYS_ON
from opentelemetry.trace import Link, NonRecordingSpan, SpanContext, TraceFlags

from runtime.observability.ids import new_span_id, new_trace_id
from runtime.spec.plain import TelemetrySettings

#: How long the end of an advance waits for its spans to be sent (they are dropped after).
FLUSH_MILLIS = 3000
EXPORT_TIMEOUT_SECONDS = 2.0
#: After a failed export, spans are dropped this long without trying (see Breaker).
COOL_DOWN_SECONDS = 60.0
SCOPE = "agentfn"

_forced: ContextVar[tuple[int, int] | None] = ContextVar("agentfn_forced_ids", default=None)


class RunIds(IdGenerator):
    """X-Ray-compatible random ids, or the ids `forced_ids` asks for (a run's root span)."""

    def generate_span_id(self) -> int:
        forced = _forced.get()
        return forced[1] if forced is not None else int(new_span_id(), 16)

    def generate_trace_id(self) -> int:
        forced = _forced.get()
        return forced[0] if forced is not None else int(new_trace_id(time.time()), 16)


@contextmanager
def forced_ids(trace_id: str, span_id: str) -> Iterator[None]:
    """Spans started inside get these ids (start exactly one)."""
    token = _forced.set((int(trace_id, 16), int(span_id, 16)))
    try:
        yield
    finally:
        _forced.reset(token)


def remote_parent(trace_id: str, span_id: str) -> Context:
    """A context whose parent is the span `span_id` of `trace_id`, started elsewhere (the
    run's root, written when the run ends, possibly by another process)."""
    parent = SpanContext(
        trace_id=int(trace_id, 16),
        span_id=int(span_id, 16),
        is_remote=True,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
    )
    return trace.set_span_in_context(NonRecordingSpan(parent))


def lambda_links() -> list[Link]:
    """A link to the Lambda invocation's own X-Ray segment (Active tracing), so X-Ray can
    go from the function's trace to the run's and back."""
    header = os.environ.get("_X_AMZN_TRACE_ID", "")
    fields = dict(part.split("=", 1) for part in header.split(";") if "=" in part)
    root, parent = fields.get("Root", ""), fields.get("Parent", "")
    pieces = root.split("-")
    if len(pieces) != 3 or len(parent) != 16:
        return []
    try:
        context = SpanContext(
            trace_id=int(pieces[1] + pieces[2], 16),
            span_id=int(parent, 16),
            is_remote=True,
            trace_flags=TraceFlags(TraceFlags.SAMPLED if fields.get("Sampled") == "1" else 0),
        )
    except ValueError:
        return []
    return [Link(context, {"agentfn.link": "lambda_invocation"})]


_providers: dict[bytes, TracerProvider] = {}
_lock = threading.Lock()
_override: SpanExporter | None = None


def export_to(exporter: SpanExporter | None) -> None:
    """Send every traced run's spans to `exporter` instead, synchronously (tests and local
    tools that read spans back); None restores the spec's exporters."""
    global _override
    with _lock:
        _override = exporter
        _providers.clear()


def provider_for(settings: TelemetrySettings, resolve: Callable[[str], str]) -> trace.Tracer:
    """The tracer of this process for these settings (built once; header secrets resolved
    by `resolve` when it is built)."""
    key = msgspec.json.encode(settings)
    with _lock:
        provider = _providers.get(key)
        if provider is None:
            provider = _build(settings, resolve)
            _providers[key] = provider
    return provider.get_tracer(SCOPE)


def flush() -> None:
    """Send what is queued, within FLUSH_MILLIS (end of an advance: Lambda freezes next)."""
    with _lock:
        providers = list(_providers.values())
    for provider in providers:
        provider.force_flush(FLUSH_MILLIS)


def _build(settings: TelemetrySettings, resolve: Callable[[str], str]) -> TracerProvider:
    function = os.environ.get("AWS_LAMBDA_FUNCTION_NAME")
    attributes: dict[str, Any] = {
        "service.name": os.environ.get("OTEL_SERVICE_NAME") or function or "agentfn",
        "telemetry.sdk.name": "opentelemetry",
        "telemetry.sdk.language": "python",
    }
    if function:
        region = os.environ.get("AWS_REGION", "")
        attributes.update({"cloud.provider": "aws", "cloud.region": region, "faas.name": function})
    # Resource() rather than Resource.create(): no detector plugins scanned at cold start.
    provider = TracerProvider(
        resource=Resource(attributes), id_generator=RunIds(), sampler=ALWAYS_ON
    )
    for processor in _processors(settings, resolve, function):
        provider.add_span_processor(processor)
    return provider


def _processors(
    settings: TelemetrySettings, resolve: Callable[[str], str], function: str | None
) -> list[SpanProcessor]:
    if _override is not None:
        return [SimpleSpanProcessor(_override)]
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    found: list[SpanProcessor] = []
    url = settings.traces_url()
    if url is not None:
        headers = {name: resolve(value) for name, value in settings.headers.items()}
        exporter = OTLPSpanExporter(endpoint=url, headers=headers, timeout=EXPORT_TIMEOUT_SECONDS)
        found.append(BatchSpanProcessor(Breaker(exporter)))
    region = os.environ.get("AWS_REGION")
    if settings.xray and function and region:  # deployed: the role signs for X-Ray
        exporter = OTLPSpanExporter(
            endpoint=f"https://xray.{region}.amazonaws.com/v1/traces",
            timeout=EXPORT_TIMEOUT_SECONDS,
            session=sigv4_session(region),
        )
        found.append(BatchSpanProcessor(Breaker(exporter)))
    return found


def sigv4_session(region: str, credentials: Any = None) -> Any:
    """A requests Session whose every request is signed with SigV4 for X-Ray (`xray`), with
    the function's credentials (read again on each request: a role's are refreshed)."""
    import requests
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest

    if credentials is None:
        import botocore.session

        credentials = botocore.session.get_session().get_credentials()

    class _SigV4(requests.auth.AuthBase):
        def __call__(self, request: Any) -> Any:
            frozen = credentials.get_frozen_credentials()
            signed = AWSRequest(
                method=request.method,
                url=request.url,
                data=request.body,
                headers={k: v for k, v in request.headers.items() if k.lower() == "content-type"},
            )
            SigV4Auth(frozen, "xray", region).add_auth(signed)
            request.headers.update(dict(signed.headers.items()))
            return request

    session = requests.Session()
    session.auth = _SigV4()
    return session


class Breaker(SpanExporter):
    """An exporter that, after a failed export, drops spans for COOL_DOWN_SECONDS without
    trying: a collector that is down then costs one export's timeout (its retries within
    EXPORT_TIMEOUT_SECONDS) per cool-down, not at the end of every advance."""

    def __init__(self, inner: SpanExporter):
        self.inner = inner
        self.down_until = 0.0

    def export(self, spans: Any) -> SpanExportResult:
        if time.monotonic() < self.down_until:
            return SpanExportResult.FAILURE
        result = self.inner.export(spans)
        if result is not SpanExportResult.SUCCESS:
            self.down_until = time.monotonic() + COOL_DOWN_SECONDS
        return result

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)

    def shutdown(self) -> None:
        self.inner.shutdown()
