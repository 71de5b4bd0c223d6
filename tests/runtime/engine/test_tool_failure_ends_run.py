"""A failed tool can end the run (issue 25): `on_failure: fail_run` on a tool or as the
agent's default ends the run with TOOL_FAILED and the tool's error after
`max_consecutive_failures` failures in a row; `continue` (the default) tells the model."""

from __future__ import annotations

from typing import Any

from runtime.spec import AgentfnSpec
from tests.runtime.engine.kit import CALLS, TOOLS, call, make_spec, new_engine, run


def _spec(script: list[dict[str, Any]], **fail_tool: Any) -> AgentfnSpec:
    """Agent `a` with `echo` and `fail`; `fail_tool` keys go on the `fail` tool itself."""
    return AgentfnSpec.model_validate(
        {
            "version": 1,
            "tools_package": "engine_tools",
            "models": {"m": {"provider": "scripted", "script": script}},
            "tools": {"echo": TOOLS["echo"], "fail": {**TOOLS["fail"], **fail_tool}},
            "agents": {"a": {"description": "t", "model": "m", "tools": ["echo", "fail"]}},
        }
    )


FAILING = [{"tool_calls": [call("fail", {"reason": f"down {i}"})]} for i in range(4)] + [
    {"text": "gave up"}
]


def test_by_default_a_failure_goes_back_to_the_model_and_the_run_goes_on() -> None:
    head = run(new_engine(_spec(FAILING)))
    assert head.status == "succeeded" and len(CALLS) == 4


def test_a_fail_run_tool_ends_the_run_with_tool_failed_and_its_error() -> None:
    engine = new_engine(_spec(FAILING, on_failure="fail_run"))
    head = run(engine)
    assert head.status == "failed" and head.error_code == "TOOL_FAILED"
    assert "cannot do that: down 0" in (head.error_message or "") and len(CALLS) == 1
    result = engine.result(head.run_id)
    assert result["error_code"] == "TOOL_FAILED" and result["tool_calls"][0]["success"] is False


def test_max_consecutive_failures_counts_failures_in_a_row_only() -> None:
    script = [
        {"tool_calls": [call("fail", {"reason": "a"})]},
        {"tool_calls": [call("fail", {"reason": "b"})]},
        {"tool_calls": [call("fail", {"reason": "c"})]},
        {"text": "never"},
    ]
    head = run(new_engine(_spec(script, on_failure="fail_run", max_consecutive_failures=3)))
    assert head.error_code == "TOOL_FAILED" and "3 times in a row" in (head.error_message or "")
    assert len(CALLS) == 3
    # Two failures, then another tool succeeds, then the same tool fails once more: the
    # count is per tool, so another tool's success does not reset it, but stays below 3.
    script = [
        {"tool_calls": [call("fail", {"reason": "a"})]},
        {"tool_calls": [call("fail", {"reason": "b"})]},
        {"tool_calls": [call("echo", {"text": "fine"})]},
        {"text": "done"},
    ]
    head = run(new_engine(_spec(script, on_failure="fail_run", max_consecutive_failures=3)))
    assert head.status == "succeeded"


def test_the_agents_default_applies_to_its_tools_and_a_tool_may_opt_out() -> None:
    policy = {"on_failure": "fail_run"}
    head = run(new_engine(make_spec(FAILING, tool_failures=policy)))
    assert head.error_code == "TOOL_FAILED"
    head = run(new_engine(_spec_with_agent_default(FAILING, policy)))
    assert head.status == "succeeded"  # `fail` says continue: its own key wins


def _spec_with_agent_default(script: list[dict[str, Any]], policy: dict[str, Any]) -> AgentfnSpec:
    spec = _spec(script, on_failure="continue").model_dump(by_alias=True, exclude_unset=True)
    spec["agents"]["a"]["tool_failures"] = policy
    return AgentfnSpec.model_validate(spec)
