"""Default tools (issue 25, seed 003): `get_time_date` and `list_tools_available` are offered
to every agent without being listed, unless `default_tools: false` (agent or defaults)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from runtime.clock import FakeClock
from runtime.spec import AgentfnSpec
from tests.runtime.engine.kit import call, make_spec, new_engine, run

NOW = 1_790_000_000.0  # 2026-09-21 14:13:20 UTC

SCRIPT = [
    {"tool_calls": [call("get_time_date"), call("list_tools_available")]},
    {"text": "done"},
]


def _offered(spec: AgentfnSpec) -> list[str]:
    engine = new_engine(spec, clock=FakeClock(NOW))
    run(engine)
    return [t.name for t in engine._model_cache["m"].requests[0].tools]


def test_an_agent_that_lists_no_tools_can_still_tell_the_time_and_list_its_tools() -> None:
    engine = new_engine(make_spec(SCRIPT, tools=["echo"]), clock=FakeClock(NOW))
    head = run(engine)
    assert head.status == "succeeded"
    calls = engine.result(head.run_id)["tool_calls"]
    assert [c["tool_name"] for c in calls] == ["get_time_date", "list_tools_available"]
    assert all(c["success"] for c in calls)
    # The tool reads the engine's clock (a replayed eval's starts on the recorded day).
    assert calls[0]["output"]["date"] == datetime.fromtimestamp(NOW, UTC).date().isoformat()
    listed = json.dumps(calls[1]["output"])
    assert "echo" in listed and "get_time_date" in listed


def test_default_tools_false_on_the_agent_or_in_defaults_leaves_them_out() -> None:
    assert _offered(make_spec([{"text": "hi"}], tools=[], default_tools=False)) == ["agent_clarify"]
    data = make_spec([{"text": "hi"}], tools=[]).model_dump(by_alias=True, exclude_unset=True)
    data["defaults"] = {"default_tools": False}
    assert _offered(AgentfnSpec.model_validate(data)) == ["agent_clarify"]
    # Listing one explicitly still offers it.
    data["agents"]["a"]["tools"] = ["builtin:get_time_date"]
    assert _offered(AgentfnSpec.model_validate(data)) == ["get_time_date", "agent_clarify"]
