"""What tracing costs (deployment.telemetry): per turn, and at a cold start.

Run:  .venv/bin/python bench/telemetry_overhead.py

- per turn: the loop benchmark's run (scripted model, in-memory store, one async tool call
  per turn, 200 turns) with telemetry off and on; on, the spans go through the SDK's
  BatchSpanProcessor to an exporter that drops them (what the SDK costs, not the network);
- cold start: in a fresh interpreter that has imported boto3 and `handlers.step` (what an
  agent function has loaded before its first step), the time its first traced advance adds:
  importing the SDK and the OTLP exporter, building the provider, recording a run's spans
  and flushing them over HTTP to a collector on loopback. Off, that is 0 by construction (no
  SDK module is imported: tests/runtime/observability/test_export.py checks it).

Nothing here is a test; it prints figures (best of several runs: shared machines vary).
"""

from __future__ import annotations

import asyncio
import gc
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from loop_overhead import TurnTimer, spec_for  # noqa: E402

from runtime.engine.loop import Engine  # noqa: E402
from runtime.spec import AgentfnSpec  # noqa: E402
from runtime.store.memory import MemoryStore  # noqa: E402

TURNS = 200
REPEATS = 9
COLD_REPEATS = 5


def traced(spec: AgentfnSpec) -> AgentfnSpec:
    data = spec.to_compiled()
    data["deployment"]["telemetry"] = {"otlp_endpoint": "http://127.0.0.1:9/v1/traces"}
    return AgentfnSpec.model_validate(data)


def per_turn_ms(spec: AgentfnSpec) -> float:
    best = float("inf")
    for _ in range(REPEATS + 1):
        timer = TurnTimer()
        engine = Engine(spec, MemoryStore(), listener=timer)
        gc.collect()
        started = time.perf_counter()
        head = asyncio.run(engine.run("a", "go"))
        assert head.status == "succeeded", head.error_message
        best = min(best, (time.perf_counter() - started) / TURNS)
    return best * 1000


def per_turn_figures() -> tuple[float, float]:
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

    from runtime.observability import otel

    class Dropping(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    spec = spec_for(TURNS)
    off = per_turn_ms(spec)
    otel.export_to(Dropping())
    otel._providers.clear()
    original = otel._processors

    def batched(settings: Any, resolve: Any, function: Any) -> list[Any]:
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        return [BatchSpanProcessor(Dropping())]

    otel._processors = batched  # type: ignore[assignment]
    try:
        on = per_turn_ms(traced(spec))
    finally:
        otel._processors = original  # type: ignore[assignment]
        otel.export_to(None)
    return off, on


COLD = textwrap.dedent(
    """
    import sys, time, threading, asyncio
    sys.path.insert(0, {root!r}); sys.path.insert(0, {bench!r})
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    class H(BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            self.send_response(200); self.send_header("Content-Length", "0"); self.end_headers()
        def log_message(self, *a): pass
    server = ThreadingHTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    import boto3, handlers.step
    from loop_overhead import spec_for
    from runtime.engine.loop import Engine
    from runtime.spec import AgentfnSpec
    from runtime.store.memory import MemoryStore
    data = spec_for(3).to_compiled()
    if {on}:
        url = "http://127.0.0.1:%d/v1/traces" % server.server_address[1]
        data["deployment"]["telemetry"] = {{"otlp_endpoint": url}}
    spec = AgentfnSpec.model_validate(data)
    engine = Engine(spec, MemoryStore())
    started = time.perf_counter()
    head = asyncio.run(engine.run("a", "go"))
    took = time.perf_counter() - started
    assert head.status == "succeeded"
    print(took * 1000)
    """
)


def cold_ms(on: bool) -> float:
    code = COLD.format(root=str(ROOT), bench=str(ROOT / "bench"), on=on)
    runs = []
    for _ in range(COLD_REPEATS):
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
        )
        runs.append(float(out.stdout.strip().splitlines()[-1]))
    return min(runs)


def import_ms() -> float:
    code = (
        "import boto3, handlers.step, runtime.engine.loop, time; t = time.perf_counter(); "
        "import runtime.observability.spans; "
        "from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter; "
        "print((time.perf_counter() - t) * 1000)"
    )
    runs = []
    for _ in range(COLD_REPEATS):
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
        )
        runs.append(float(out.stdout.strip()))
    return min(runs)


def main() -> None:
    print("agentfn telemetry benchmark\n")
    off, on = per_turn_figures()
    print(f"per turn ({TURNS} turns, scripted model, async tool, memory store; best of {REPEATS})")
    print(f"  telemetry off: {off:.3f} ms/turn")
    print(f"  telemetry on:  {on:.3f} ms/turn (+{on - off:.3f} ms: chat + execute_tool spans)")
    print(f"\ncold start (fresh interpreter after boto3 + handlers.step; best of {COLD_REPEATS})")
    print(f"  importing the SDK + OTLP exporter: {import_ms():.0f} ms")
    cold_off, cold_on = cold_ms(False), cold_ms(True)
    print(f"  first 3-turn run, telemetry off: {cold_off:.0f} ms")
    print(f"  first 3-turn run, telemetry on:  {cold_on:.0f} ms (+{cold_on - cold_off:.0f} ms,")
    print("    SDK import, provider, spans, and the flush over HTTP to a loopback collector)")


if __name__ == "__main__":
    main()
