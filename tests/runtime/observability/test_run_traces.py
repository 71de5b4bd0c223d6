"""Spans of traced runs, read back from an in-memory exporter: the GenAI span tree and its
attributes, one trace across a pause and another engine, retries and fallbacks as events,
and content only when `capture_content` is on (secrets redacted)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from runtime import secrets
from runtime.clock import FakeClock
from runtime.observability import otel
from runtime.spec import AgentfnSpec
from runtime.store.memory import MemoryStore
from tests.runtime.engine.kit import call, make_spec, new_engine

ENDPOINT = "http://127.0.0.1:4318"
# Call 0: a 503, retried; then echo (ungated) and charge (gated). Call 1: a 400 on `m`, so
# the fallback `backup` answers (its script is indexed by the call number too).
SCRIPT = [
    {"error": {"status": 503, "message": "overloaded"}},
    {
        "tool_calls": [
            call("echo", {"text": "hi"}, id="c-echo"),
            call("charge", {"amount": 5}, id="c-charge"),
        ]
    },
    {"error": {"status": 400, "message": "bad request"}},
    {"text": "unused"},
]
BACKUP = {
    "backup": {
        "provider": "scripted",
        "model_id": "backup-v2",
        "script": [{"text": "unused"}, {"text": "charged 5"}],
    }
}
RULE = [{"tools": ["charge"], "decisions": ["approve", "reject"]}]


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    otel.export_to(exporter)
    yield exporter
    otel.export_to(None)


def traced(spec: AgentfnSpec, **telemetry: Any) -> AgentfnSpec:
    data = spec.to_compiled()
    data["deployment"]["telemetry"] = {"otlp_endpoint": ENDPOINT, **telemetry}
    return AgentfnSpec.model_validate(data)


def by_name(found: list[ReadableSpan], prefix: str) -> list[ReadableSpan]:
    return [s for s in found if s.name.startswith(prefix)]


def hexid(value: int, digits: int = 16) -> str:
    return f"{value:0{digits}x}"


def test_a_run_paused_for_approval_and_resumed_elsewhere_is_one_trace(
    spans: InMemorySpanExporter,
) -> None:
    spec = traced(
        make_spec(
            SCRIPT, tools=["echo", "charge"], approval=RULE, fallbacks=["backup"], models=BACKUP
        )
    )
    store = MemoryStore()
    first = new_engine(spec, store)
    head = asyncio.run(first.run("a", "charge me"))
    assert head.status == "awaiting_approval" and head.trace is not None
    assert spans.get_finished_spans()  # the paused advance's spans are out already

    otel.export_to(spans)  # another process: its own provider, the same collector
    second = new_engine(spec, store, clock=FakeClock(start=1_790_003_600.0))
    second.decide(head.run_id, approved=True, by="alice")
    head = asyncio.run(second.advance(head.run_id))
    assert head.status == "succeeded"

    found = list(spans.get_finished_spans())
    ref = head.trace
    assert ref is not None
    assert {hexid(s.context.trace_id, 32) for s in found} == {ref.trace_id}
    assert ref.trace_id[:8] == f"{int(head.created_at):08x}"  # X-Ray's form
    assert second.result(head.run_id)["trace_id"] == ref.trace_id

    roots = [s for s in found if s.parent is None]
    assert [r.name for r in roots] == ["invoke_agent a"]
    root = roots[0]
    assert hexid(root.context.span_id) == ref.span_id
    assert root.attributes is not None
    assert root.attributes["agentfn.scope"] == "run"
    assert root.attributes["agentfn.status"] == "succeeded"
    assert root.attributes["gen_ai.usage.input_tokens"] == head.usage.input_tokens
    assert root.attributes["gen_ai.response.model"] == "backup-v2"

    advances = [s for s in by_name(found, "invoke_agent") if s is not root]
    assert len(advances) == 2
    assert all(s.parent is not None and hexid(s.parent.span_id) == ref.span_id for s in advances)
    paused, resumed = sorted(advances, key=lambda s: s.start_time or 0)
    assert paused.attributes is not None and resumed.attributes is not None
    assert paused.attributes["agentfn.status"] == "awaiting_approval"
    assert resumed.attributes["agentfn.status"] == "succeeded"
    for span in advances:
        assert span.attributes is not None
        assert span.attributes["gen_ai.operation.name"] == "invoke_agent"
        assert span.attributes["gen_ai.agent.name"] == "a"
        assert span.attributes["gen_ai.conversation.id"] == head.session_id
        assert span.attributes["agentfn.run_id"] == head.run_id
    asked = [e for e in paused.events if e.name == "approval_requested"]
    assert asked and asked[0].attributes is not None
    assert list(asked[0].attributes["calls.gen_ai.tool.name"]) == ["charge"]

    def under(span: ReadableSpan) -> str:
        assert span.parent is not None
        return hexid(span.parent.span_id)

    chats = sorted(by_name(found, "chat "), key=lambda s: s.start_time or 0)
    assert [under(c) for c in chats] == [
        hexid(paused.context.span_id),
        hexid(resumed.context.span_id),
    ]
    retried, fell_back = chats
    assert [e.name for e in retried.events] == ["retry"]
    assert fell_back.events[0].name == "fallback"
    assert fell_back.events[0].attributes is not None
    assert dict(fell_back.events[0].attributes)["agentfn.next_model"] == "backup"
    assert fell_back.attributes is not None
    assert fell_back.attributes["gen_ai.request.model"] == "scripted"
    assert fell_back.attributes["gen_ai.response.model"] == "backup-v2"
    assert fell_back.attributes["agentfn.answered_by"] == "backup"
    assert fell_back.attributes["gen_ai.provider.name"] == "agentfn.scripted"
    assert list(fell_back.attributes["gen_ai.response.finish_reasons"]) == ["stop"]
    assert retried.attributes is not None
    assert list(retried.attributes["gen_ai.response.finish_reasons"]) == ["tool_call"]
    assert retried.attributes["gen_ai.usage.output_tokens"] >= 1

    tools = {s.name: s for s in by_name(found, "execute_tool")}
    assert set(tools) == {"execute_tool echo", "execute_tool charge"}
    echo, charge = tools["execute_tool echo"], tools["execute_tool charge"]
    assert under(echo) == hexid(paused.context.span_id)
    assert under(charge) == hexid(resumed.context.span_id)
    assert charge.attributes is not None
    assert charge.attributes["gen_ai.tool.call.id"] == "c-charge"
    assert charge.attributes["gen_ai.tool.type"] == "function"
    assert charge.attributes["agentfn.tool.source"] == "python"
    decided = [e for e in charge.events if e.name == "approval_decided"]
    assert decided and decided[0].attributes is not None
    assert decided[0].attributes["approved"] is True and decided[0].attributes["by"] == "alice"

    # capture_content is off: no prompt, completion, argument or result on any span.
    content = {"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions"}
    content |= {"gen_ai.tool.call.arguments", "gen_ai.tool.call.result"}
    for span in found:
        assert not content & set(span.attributes or {}), span.name
        for event in span.events:
            assert "input" not in (event.attributes or {}), event.name


def test_a_failed_tool_and_a_failed_run_have_error_status(spans: InMemorySpanExporter) -> None:
    script = [{"tool_calls": [call("fail", {"reason": "no"})]}] * 3  # the same call: DOOM_LOOP
    engine = new_engine(traced(make_spec(script, tools=["fail"])))
    head = asyncio.run(engine.run("a", "try"))
    assert head.status == "failed" and head.error_code == "DOOM_LOOP"
    found = list(spans.get_finished_spans())
    tools = by_name(found, "execute_tool fail")
    assert tools and all(s.status.status_code is StatusCode.ERROR for s in tools)
    assert all((s.attributes or {}).get("error.type") for s in tools)
    root = next(s for s in found if s.parent is None)
    assert root.status.status_code is StatusCode.ERROR
    assert (root.attributes or {})["error.type"] == "DOOM_LOOP"


def test_capture_content_records_prompts_and_outputs_with_secrets_redacted(
    spans: InMemorySpanExporter,
) -> None:
    secret = "tok-5ecr3t-value-42"
    secrets.remember(secret)  # as if a tool's header had resolved it
    try:
        script = [{"tool_calls": [call("echo", {"text": secret})]}, {"text": f"said {secret}"}]
        spec = traced(make_spec(script, tools=["echo"]), capture_content=True)
        head = asyncio.run(new_engine(spec).run("a", f"repeat {secret}"))
        assert head.status == "succeeded"
    finally:
        secrets.forget_all()
    found = list(spans.get_finished_spans())
    chats = sorted(by_name(found, "chat "), key=lambda s: s.start_time or 0)
    first = chats[0].attributes or {}
    assert "[redacted]" in str(first["gen_ai.input.messages"])
    assert '"role": "user"' in str(first["gen_ai.input.messages"])
    assert "gen_ai.system_instructions" in first
    assert "[redacted]" in str((chats[1].attributes or {})["gen_ai.output.messages"])
    echo = by_name(found, "execute_tool echo")[0].attributes or {}
    assert "[redacted]" in str(echo["gen_ai.tool.call.arguments"])
    assert "[redacted]" in str(echo["gen_ai.tool.call.result"])
    for span in found:
        assert secret not in str(dict(span.attributes or {})), span.name
        for event in span.events:
            assert secret not in str(dict(event.attributes or {}))


def test_a_child_run_is_part_of_its_parents_trace(spans: InMemorySpanExporter) -> None:
    data = make_spec(
        [{"tool_calls": [call("ask_b", {"task": "look"})]}, {"text": "done"}]
    ).to_compiled()
    data["models"]["mb"] = {"provider": "scripted", "script": [{"text": "found"}]}
    data["agents"]["a"]["sub_agents"] = [{"agent": "b", "as": "tool"}]
    data["agents"]["b"] = {"description": "helper", "model": "mb", "tools": []}
    spec = traced(AgentfnSpec.model_validate(data))
    engine = new_engine(spec)
    head = asyncio.run(engine.run("a", "ask b"))
    while head.status != "succeeded":  # one process: advance the child, then the parent
        for child in head.children:
            asyncio.run(engine.advance(child.run_id))
        head = asyncio.run(engine.advance(head.run_id))
    found = list(spans.get_finished_spans())
    assert len({s.context.trace_id for s in found}) == 1
    runs = [s for s in found if (s.attributes or {}).get("agentfn.scope") == "run"]
    parent = next(s for s in runs if (s.attributes or {})["gen_ai.agent.name"] == "a")
    child = next(s for s in runs if (s.attributes or {})["gen_ai.agent.name"] == "b")
    assert parent.parent is None
    assert child.parent is not None and child.parent.span_id == parent.context.span_id


def test_spans_of_an_untraced_run_do_not_exist(spans: InMemorySpanExporter) -> None:
    engine = new_engine(make_spec([{"text": "hi"}], tools=[]))
    assert engine._tracer is None
    head = asyncio.run(engine.run("a", "hello"))
    assert head.status == "succeeded" and head.trace is None
    assert "trace_id" not in engine.result(head.run_id)
    assert spans.get_finished_spans() == ()


def test_a_hooks_denial_is_an_event_of_the_denied_calls_span(spans: InMemorySpanExporter) -> None:
    from tests.runtime.engine.hook_kit import hooked, rule

    deny = rule(arg="amount", op="in", value=[1, 2, 3], **{"else": "deny"}, reason="over limit")
    script = [{"tool_calls": [call("charge", {"amount": 50}, id="c-1")]}, {"text": "done"}]
    engine = new_engine(traced(hooked(script, tools=["charge"], agent=[deny])))
    head = asyncio.run(engine.run("a", "charge 50"))
    assert head.status == "succeeded"
    (span,) = by_name(list(spans.get_finished_spans()), "execute_tool charge")
    assert span.status.status_code is StatusCode.ERROR
    (event,) = [e for e in span.events if e.name == "hook_decision"]
    attributes = dict(event.attributes or {})
    assert attributes["decision"] == "deny" and attributes["gen_ai.tool.call.id"] == "c-1"
    assert attributes["hook"] == "agents.a.hooks[0]" and "reason" not in attributes  # content
