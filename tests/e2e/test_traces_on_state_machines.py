"""Traces of a run the generated state machine drives on the embedded AWS: its API start,
the advance that pauses for approval and the one that resumes after it (each a Lambda task
of its own) make one trace, whose root the resuming advance writes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from infra.local.aws import embedded_aws
from infra.local.embedded_stack import EmbeddedStack
from runtime.observability import otel
from runtime.spec import AgentfnSpec
from tests.e2e.test_state_machines import DEMO, RecordingEvents, _finished, _paused
from tests.helpers import ROOT


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    otel.export_to(exporter)
    yield exporter
    otel.export_to(None)


def test_an_approval_on_the_state_machine_is_one_trace(spans: InMemorySpanExporter) -> None:
    data = DEMO.to_compiled()
    data["deployment"]["telemetry"] = {"otlp_endpoint": "http://127.0.0.1:4318"}
    spec = AgentfnSpec.model_validate(data)
    with embedded_aws() as clients:
        stack = EmbeddedStack(spec, clients, template_path=ROOT / "template.yaml")
        stack.set_events(RecordingEvents())
        run_id = _paused(stack, "billing", "Refund ORD-1001, it broke", "awaiting_approval")
        stack.service.approve(run_id, True)
        done = _finished(stack, run_id)
    assert done["execution"]["status"] == "SUCCEEDED"
    trace_id = done["result"]["trace_id"]
    found = spans.get_finished_spans()
    assert {f"{s.context.trace_id:032x}" for s in found} == {trace_id}
    (root,) = [s for s in found if s.parent is None]
    advances = [s for s in found if (s.attributes or {}).get("agentfn.scope") == "advance"]
    assert [(s.attributes or {})["agentfn.status"] for s in advances] == [
        "awaiting_approval",
        "succeeded",
    ]
    assert all(s.parent is not None and s.parent.span_id == root.context.span_id for s in advances)
    refund = next(s for s in found if s.name == "execute_tool issue_refund")
    assert refund.parent is not None and refund.parent.span_id == advances[1].context.span_id
    assert [e.name for e in refund.events] == ["approval_decided"]
