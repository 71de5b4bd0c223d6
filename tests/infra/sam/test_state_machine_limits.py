"""The state machine against Step Functions' hard limits and throttling, computed from the
generated definition: worst-case history per execution stays under 25,000 events, throttled
tasks (the failure path included) are retried for minutes with jitter. (That nothing but
ids and small routing values crosses the state is proven end to end in
tests/e2e/test_durability.py.)"""

from __future__ import annotations

from infra.sam import asl
from runtime.service import MAX_LOOPS
from runtime.spec import AgentfnSpec


def _window(retrier: dict[str, object]) -> float:
    """Seconds a retrier keeps trying (before jitter shortens the waits)."""
    interval = float(retrier.get("IntervalSeconds", 1))  # type: ignore[arg-type]
    rate = float(retrier.get("BackoffRate", 2.0))  # type: ignore[arg-type]
    cap = float(retrier.get("MaxDelaySeconds", 10**9))  # type: ignore[arg-type]
    attempts = int(retrier.get("MaxAttempts", 3))  # type: ignore[call-overload]
    return sum(min(cap, interval * rate**n) for n in range(attempts))


def test_the_worst_case_history_of_an_execution_stays_under_the_limit(
    full_spec: AgentfnSpec,
) -> None:
    for agent in full_spec.agents:
        machine = asl.definition(full_spec, agent)
        per_loop = asl.max_events_per_loop(machine)
        assert per_loop > 100  # every retry of every task on the loop is counted
        assert asl.max_execution_events(machine) < asl.HISTORY_LIMIT, (agent, per_loop)
    assert MAX_LOOPS >= 50  # and still plenty of work per execution


def test_throttled_tasks_are_retried_for_minutes_with_jitter(full_spec: AgentfnSpec) -> None:
    states = asl.definition(full_spec, "support")["States"]
    for name, state in states.items():
        if state.get("Type") != "Task":
            continue
        throttled = [
            r for r in state["Retry"] if "Lambda.TooManyRequestsException" in r["ErrorEquals"]
        ]
        assert throttled, name
        assert _window(throttled[0]) >= 300, name  # minutes, not ~40 s
        assert throttled[0]["JitterStrategy"] == "FULL", name
    # The failure path is retried too, and its last resort still ends the execution.
    assert states["MarkFailed"]["Catch"][0]["Next"] == "Failed"
