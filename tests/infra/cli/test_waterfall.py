"""`agentfn run --trace`: the waterfall of a run, from its events (no telemetry needed)."""

from __future__ import annotations

import asyncio
import re

from infra.cli.waterfall import collect, duration, render
from runtime.clock import FakeClock
from tests.helpers import run_agentfn
from tests.runtime.engine.kit import call, make_spec, new_engine

SCRIPT = [
    {"tool_calls": [call("echo", {"text": "a"}), call("charge", {"amount": 5})]},
    {"text": "charged"},
]
RULE = [{"tools": ["charge"], "timeout": "2d", "decisions": ["approve", "reject"]}]


def _day_long_approval() -> tuple[object, str]:
    clock = FakeClock()
    engine = new_engine(make_spec(SCRIPT, tools=["echo", "charge"], approval=RULE), clock=clock)
    head = asyncio.run(engine.run("a", "charge me"))
    assert head.status == "awaiting_approval"
    clock.advance(86_400 + 7_200)  # a day and two hours later
    engine.decide(head.run_id, approved=True, by="alice")
    head = asyncio.run(engine.advance(head.run_id))
    assert head.status == "succeeded"
    return engine, head.run_id


def test_the_rows_of_a_run_that_waited_a_day_for_approval() -> None:
    engine, run_id = _day_long_approval()
    chart = collect(engine.store, run_id)  # type: ignore[attr-defined]
    assert chart.status == "succeeded" and chart.agent == "a"
    # In the order they happened: under FakeClock, starts derived from real durations may
    # tie or cross (a slow machine makes a tool look as if it began before its model call).
    kinds = [(r.kind, r.label) for r in chart.rows]
    assert kinds == [
        ("model", "m · step 1"),
        ("tool", "echo ✓"),
        ("wait", "approval · charge"),
        ("tool", "charge ✓"),
        ("model", "m · step 2"),
    ]
    wait = next(r for r in chart.rows if r.kind == "wait")
    assert wait.detail == "approved by alice"
    assert 93_600 <= wait.end - wait.start < 93_700


def test_the_waterfall_draws_bars_and_shortens_the_long_wait() -> None:
    engine, run_id = _day_long_approval()
    text = render(collect(engine.store, run_id), width=100)  # type: ignore[attr-defined]
    lines = text.splitlines()
    assert lines[0].startswith(f"waterfall · run {run_id[:12]}… · a · succeeded · 1 d 02 h")
    assert "waiting 1 d 02 h" in lines[0]
    assert all(len(line) <= 140 for line in lines)
    wait = next(line for line in lines if "approval · charge" in line)
    bar = wait.split("│")[1]
    assert "≈" in bar and "┄" in bar
    assert bar.count("┄") < len(bar) // 2  # shortened: the work stays readable
    first = next(line for line in lines if "m · step 1" in line)  # rows may tie under FakeClock
    assert re.search(r"model\s+m · step 1 .*│ *█", first)
    assert "1 d 02 h" in wait and "approved by alice" in wait
    after = next(line for line in lines if "charge ✓" in line)
    assert after.split("│")[1].index("▒") > bar.index("≈")  # drawn after the wait


def test_durations_read_naturally() -> None:
    assert [duration(s) for s in (0.0123, 2.5, 125, 7_500, 93_600)] == [
        "12 ms",
        "2.50 s",
        "2 m 05 s",
        "2 h 05 m",
        "1 d 02 h",
    ]


def test_agentfn_run_trace_prints_the_waterfall_of_a_team_run() -> None:
    result = run_agentfn(
        "run", "support", "My order ORD-1001 arrived damaged.", "--approve", "--trace", "--json"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.lstrip().startswith("{")  # stdout is still only the result
    text = result.stderr
    start = text.index("waterfall · run ")
    lines = text[start:].splitlines()
    assert " · support · succeeded · " in lines[0]
    labels = [line.split("│")[0] for line in lines[1:]]
    expected = [
        "model demo-support · step 1",
        "tool  lookup_order ✓",
        "agent researcher ✓",
        "  model demo-researcher · step 1",
        "·     handoff → billing",
        "wait  approval · issue_refund",
        "tool  issue_refund ✓",
        "·     escalation → support",
        "model demo-support · step 8",
    ]
    found = [next(i for i, label in enumerate(labels) if label.startswith(e)) for e in expected]
    assert found == sorted(found), "\n".join(lines)
