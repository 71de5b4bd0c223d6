"""Run metrics as CloudWatch reads them: the EMF lines printed on stdout for scripted runs with
tools (one failing), an approval decided by another process a minute and a half later, and a
run that fails, checked by metric name, value, unit and dimension set."""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict
from typing import Any

import pytest

from runtime.clock import FakeClock
from runtime.observability.logs import RunContext
from runtime.observability.metrics import METRICS, NAMESPACE, RunMetrics
from runtime.spec import AgentfnSpec
from runtime.store.memory import MemoryStore
from tests.runtime.engine.kit import TOOLS, call, new_engine

STACK = "agentfn-prod"
USAGE = {"input_tokens": 1000, "output_tokens": 200}
PRICE = {"input_per_mtok": 3.0, "output_per_mtok": 15.0}  # a turn: 0.003 + 0.003 USD


def _spec() -> AgentfnSpec:
    script = [
        {
            "tool_calls": [call("echo", {"text": "hi"}), call("fail", {"reason": "x"})],
            "usage": USAGE,
        },
        {"tool_calls": [call("charge", {"amount": 5}, id="call-charge")], "usage": USAGE},
        {"text": "done", "usage": USAGE},
    ]
    broken = [{"error": {"status": 400, "code": "ValidationException", "message": "bad"}}]
    return AgentfnSpec.model_validate(
        {
            "version": 1,
            "tools_package": "engine_tools",
            "models": {
                "m": {"provider": "scripted", "script": script, "price": PRICE},
                "broken": {"provider": "scripted", "script": broken},
            },
            "tools": {n: TOOLS[n] for n in ("echo", "fail", "charge")},
            "agents": {
                "a": {
                    "description": "works",
                    "model": "m",
                    "tools": ["echo", "fail", "charge"],
                    "approval": [{"tools": ["charge"], "timeout": "1h"}],
                },
                "b": {"description": "fails", "model": "broken"},
            },
        }
    )


def _emf(stdout: str) -> dict[tuple[str, frozenset[tuple[str, str]]], tuple[str, list[float]]]:
    """(metric, dimension set with values) → (unit, values), from every EMF line printed."""
    found: dict[tuple[str, frozenset[tuple[str, str]]], tuple[str, list[float]]] = {}
    values: dict[tuple[str, frozenset[tuple[str, str]]], list[float]] = defaultdict(list)
    for line in stdout.splitlines():
        document = json.loads(line)
        (directive,) = document["_aws"]["CloudWatchMetrics"]
        assert directive["Namespace"] == NAMESPACE
        for names in directive["Dimensions"]:
            dimensions = frozenset((n, document[n]) for n in names)
            for metric in directive["Metrics"]:
                key = (metric["Name"], dimensions)
                value = document[metric["Name"]]
                values[key].extend(value if isinstance(value, list) else [value])
                found[key] = (metric["Unit"], values[key])
    return found


def _dims(**dimensions: str) -> frozenset[tuple[str, str]]:
    return frozenset({"service": STACK, **dimensions}.items())


def test_metrics_of_a_run_with_tools_an_approval_and_a_failure(
    capsys: pytest.CaptureFixture[str],
) -> None:
    spec, store, clock = _spec(), MemoryStore(), FakeClock()
    worker = RunMetrics(STACK, store=store, context=RunContext())  # the agent's function
    api = RunMetrics(STACK, store=store, context=RunContext())  # another process: the API's
    engine = new_engine(spec, store, clock=clock, listener=worker)
    deciding = new_engine(spec, store, clock=clock, listener=api)
    head = asyncio.run(engine.run("a", "charge it"))
    assert head.status == "awaiting_approval"
    clock.advance(90)  # a person takes a minute and a half
    deciding.decide(head.run_id, approved=True)
    api.flush()  # reads the request's time from the store: this process never saw it
    assert asyncio.run(engine.advance(head.run_id)).status == "succeeded"
    failed = asyncio.run(engine.run("b", "break"))
    assert failed.status == "failed" and failed.error_code == "MODEL_ERROR"
    worker.flush()
    assert worker.pending == 0 and api.pending == 0
    metrics = _emf(capsys.readouterr().out)

    def one(name: str, **dimensions: str) -> tuple[str, list[float]]:
        return metrics[(name, _dims(**dimensions))]

    for agent in ("a", "b"):  # runs started: per agent and for the stack
        assert one("RunsStarted", agent=agent) == ("Count", [1.0])
    assert one("RunsStarted") == ("Count", [1.0, 1.0])
    assert one("RunsSucceeded", agent="a") == ("Count", [1.0])
    assert one("RunsSucceeded") == ("Count", [1.0])
    assert one("RunsFailed", agent="b", error_code="MODEL_ERROR") == ("Count", [1.0])
    assert one("RunsFailed", agent="b") == ("Count", [1.0])
    assert one("RunsFailed") == ("Count", [1.0])
    assert ("RunsFailed", _dims(agent="a")) not in metrics
    assert one("RunTurns", agent="a") == ("Count", [3.0])

    assert one("Turns", agent="a") == ("Count", [1.0, 1.0, 1.0])
    assert one("InputTokens", agent="a") == ("Count", [1000.0] * 3)
    assert one("OutputTokens", agent="a") == ("Count", [200.0] * 3)
    unit, costs = one("CostUSD", agent="a")
    assert unit == "None" and costs == pytest.approx([0.006] * 3)
    unit, latencies = one("ModelLatency", agent="a")
    assert unit == "Milliseconds" and len(latencies) == 3 and min(latencies) >= 0

    assert one("ToolCalls", agent="a", tool="echo") == ("Count", [1.0])
    assert one("ToolErrors", agent="a", tool="echo") == ("Count", [0.0])
    assert one("ToolErrors", agent="a", tool="fail") == ("Count", [1.0])
    assert one("ToolErrors", agent="a", tool="charge") == ("Count", [0.0])
    assert one("ToolLatency", agent="a", tool="charge")[0] == "Milliseconds"

    assert one("ApprovalsRequested", agent="a") == ("Count", [1.0])
    assert one("ApprovalsRequested") == ("Count", [1.0])
    assert one("ApprovalsDecided", agent="a") == ("Count", [1.0])
    assert one("ApprovalsTimedOut", agent="a") == ("Count", [0.0])
    unit, waits = one("ApprovalWait", agent="a")
    assert unit == "Seconds" and waits == [pytest.approx(90, abs=0.1)]

    for (name, _), (unit, _) in metrics.items():  # as declared (what the dashboard draws)
        assert METRICS[name] == unit, name
    every_set = {dimensions for _, dimensions in metrics}
    assert every_set == {
        _dims(),
        _dims(agent="a"),
        _dims(agent="b"),
        _dims(agent="b", error_code="MODEL_ERROR"),
        *(_dims(agent="a", tool=t) for t in ("echo", "fail", "charge")),
    }


def test_one_process_sees_the_wait_without_reading_the_store() -> None:
    spec, clock = _spec(), FakeClock()
    store = MemoryStore()
    documents: list[dict[str, Any]] = []
    metrics = RunMetrics(STACK, context=RunContext(), emit=documents.append)  # no store
    engine = new_engine(spec, store, clock=clock, listener=metrics)
    head = asyncio.run(engine.run("a", "charge it"))
    clock.advance(30)
    engine.decide(head.run_id, approved=False, reason="no")
    metrics.flush()
    waits = [d["ApprovalWait"] for d in documents if "ApprovalWait" in d]
    assert waits == [[pytest.approx(30, abs=0.1)]]  # Powertools prints a list of values


def test_cancelled_runs_are_not_failures_and_a_sweep_counts_for_the_stack() -> None:
    documents: list[dict[str, Any]] = []
    metrics = RunMetrics(STACK, context=RunContext(), emit=documents.append)
    engine = new_engine(_spec(), listener=metrics)
    head = engine.start("a", "go")
    engine.cancel(head.run_id, by="ops")
    metrics.sweep({"checked": 4, "resumed": ["r1"], "resent": [], "failed": ["r2"], "errors": []})
    metrics.flush()
    merged = {k: v for d in documents for k, v in d.items() if k != "_aws"}
    assert merged["RunsCancelled"] == [1.0] and "RunsFailed" not in merged
    assert merged["RunsResumed"] == [1.0] and merged["RunsStranded"] == [1.0]
    assert merged["SweptRuns"] == [4.0] and merged["SweepErrors"] == [0.0]
    sweep = next(d for d in documents if "SweptRuns" in d)
    assert sweep["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["service"]]


def test_a_listener_that_fails_never_breaks_a_commit() -> None:
    class Broken(RunMetrics):
        def _record(self, event: Any) -> None:
            raise RuntimeError("boom")

    engine = new_engine(_spec(), listener=Broken(STACK, context=RunContext()))
    assert engine.start("a", "go").status == "running"


def test_nothing_kept_prints_nothing_and_imports_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert RunMetrics(STACK, context=RunContext()).flush() == []
    assert capsys.readouterr().out == ""


def test_more_than_a_hundred_values_go_in_further_lines() -> None:
    documents: list[dict[str, Any]] = []
    metrics = RunMetrics(STACK, context=RunContext(), emit=documents.append)
    for i in range(250):
        metrics.add("ToolLatency", "Milliseconds", i, agent="a", tool="t")
    metrics.flush()
    assert [len(d["ToolLatency"]) for d in documents] == [99, 99, 52]
