"""`agentfn run --max-turns N` (issue 25): the run's own limit, under the agent's."""

from __future__ import annotations

import json

from tests.helpers import run_agentfn


def test_max_turns_lowers_the_runs_limit() -> None:
    result = run_agentfn("run", "orders", "My order ORD-1001 arrived damaged.", "--max-turns", "1")
    assert result.returncode == 1, result.stderr
    assert "MAX_TURNS_EXCEEDED: reached max_turns (1)" in result.stderr
    result = run_agentfn("run", "orders", "damaged ORD-1001", "--max-turns", "2", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["turns_used"] == 2


def test_more_turns_than_the_agent_allows_is_a_usage_error() -> None:
    result = run_agentfn("run", "orders", "hi", "--max-turns", "1000")
    assert result.returncode == 2
    assert "--max-turns: 1000 is over the max_turns of agent 'orders'" in result.stderr
