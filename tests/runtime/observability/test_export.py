"""Export: OTLP/HTTP (protobuf) to a real server on loopback, with a header from a secret;
SigV4-signed requests for X-Ray; and nothing of OpenTelemetry loaded when telemetry is off."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from runtime import secrets
from runtime.observability import otel
from runtime.spec import AgentfnSpec
from tests.helpers import ROOT
from tests.runtime.engine.kit import call, make_spec, new_engine

TOKEN = "otlp-t0ken-for-tests"


class Collector(ThreadingHTTPServer):
    """Answers every POST 200 and keeps (path, headers, body)."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.received: list[tuple[str, dict[str, str], bytes]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: Collector

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.server.received.append((self.path, dict(self.headers.items()), body))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[Collector]:
    server = Collector()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_a_run_is_exported_over_otlp_http_with_its_secret_header(
    collector: Collector, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTFN_SECRET_OTEL_TOKEN", TOKEN)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    otel.export_to(None)
    data = make_spec(
        [{"tool_calls": [call("echo", {"text": "hi"})]}, {"text": "done"}], tools=["echo"]
    ).to_compiled()
    data["secrets"] = {"otel-token": {}}
    data["deployment"]["telemetry"] = {
        "otlp_endpoint": collector.url,  # no path: /v1/traces is added
        "headers": {"Authorization": "Bearer ${secret:otel-token}", "x-team": "agents"},
    }
    spec = AgentfnSpec.model_validate(data)
    try:
        head = asyncio.run(new_engine(spec).run("a", "hello"))
    finally:
        secrets.forget_all()
    assert head.status == "succeeded" and head.trace is not None
    # The advance flushed before returning: everything is at the collector already.
    assert collector.received, "nothing was exported"
    names: list[str] = []
    for path, headers, body in collector.received:
        assert path == "/v1/traces"
        lowered = {k.lower(): v for k, v in headers.items()}
        assert lowered["content-type"] == "application/x-protobuf"
        assert lowered["authorization"] == f"Bearer {TOKEN}"
        assert lowered["x-team"] == "agents"
        request = ExportTraceServiceRequest.FromString(body)
        for resource_spans in request.resource_spans:
            service = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
            assert service["service.name"] == "agentfn"
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    assert span.trace_id.hex() == head.trace.trace_id
                    names.append(span.name)
    assert sorted(names) == sorted(
        ["invoke_agent a", "invoke_agent a", "chat scripted", "chat scripted", "execute_tool echo"]
    )


def test_xray_requests_are_signed_with_sigv4(collector: Collector) -> None:
    from botocore.credentials import Credentials

    session = otel.sigv4_session("eu-west-1", Credentials("AKIDEXAMPLE", "not-a-real-key"))
    answer = session.post(
        collector.url + "/v1/traces",
        data=b"\x0a\x00",
        headers={"Content-Type": "application/x-protobuf"},
        timeout=5,
    )
    assert answer.status_code == 200
    headers = {k.lower(): v for k, v in collector.received[0][1].items()}
    assert headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
    assert "/eu-west-1/xray/aws4_request" in headers["authorization"]
    assert "x-amz-date" in headers and "not-a-real-key" not in json.dumps(headers)


def test_a_deployed_function_also_exports_to_xray(monkeypatch: pytest.MonkeyPatch) -> None:
    from runtime.spec.telemetry import TelemetrySettings

    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "agentfn-support")
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-a-real-key")
    otel.export_to(None)
    settings = TelemetrySettings(xray=True)
    processors = otel._processors(settings, lambda text: text, "agentfn-support")
    endpoints = [p.span_exporter.inner._endpoint for p in processors]  # type: ignore[attr-defined]
    assert endpoints == ["https://xray.eu-west-1.amazonaws.com/v1/traces"]
    for processor in processors:
        processor.shutdown()
    monkeypatch.delenv("AWS_LAMBDA_FUNCTION_NAME")
    assert otel._processors(settings, lambda text: text, None) == []  # local: nowhere


def test_a_collector_that_is_down_costs_one_timeout_per_cool_down() -> None:
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

    class Down(SpanExporter):
        calls = 0

        def export(self, spans: Any) -> SpanExportResult:
            Down.calls += 1
            return SpanExportResult.FAILURE

    breaker = otel.Breaker(Down())
    results = [breaker.export([]) for _ in range(5)]
    assert results == [SpanExportResult.FAILURE] * 5 and Down.calls == 1  # tried once
    breaker.down_until = 0.0  # the cool-down is over: it tries again
    breaker.export([])
    assert Down.calls == 2


def test_an_advance_links_to_the_lambda_invocations_xray_segment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(
        "_X_AMZN_TRACE_ID",
        "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1",
    )
    links = otel.lambda_links()
    assert len(links) == 1
    assert f"{links[0].context.trace_id:032x}" == "5759e988bd862e3fe1be46a994272793"
    assert f"{links[0].context.span_id:016x}" == "53995c3f42cd8ad8"
    monkeypatch.setenv("_X_AMZN_TRACE_ID", "garbage")
    assert otel.lambda_links() == []


def test_telemetry_off_imports_nothing_of_opentelemetry() -> None:
    """A scripted run with tools, its result and events: no OpenTelemetry module loaded,
    nor agentfn's SDK side of tracing."""
    code = textwrap.dedent(
        """
        import asyncio, sys
        from tests.runtime.engine.kit import call, make_spec, new_engine
        spec = make_spec([{"tool_calls": [call("echo", {"text": "hi"})]}, {"text": "ok"}], tools=["echo"])
        engine = new_engine(spec)
        head = asyncio.run(engine.run("a", "hello"))
        assert head.status == "succeeded", head.status
        engine.result(head.run_id)
        engine.store.list_events(head.run_id)
        loaded = sorted(m for m in sys.modules if m.startswith("opentelemetry")
                        or m in ("runtime.observability.spans", "runtime.observability.otel"))
        print(loaded)
        """
    )
    answer = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert answer.returncode == 0, answer.stderr
    assert answer.stdout.strip() == "[]"
