"""Today's date (issue 25, seed 003): a prompt without a date variable gets a date line,
top-level agents too; `inject_date: false` (agent, or defaults) turns it off."""

from __future__ import annotations

from typing import Any

from runtime.clock import FakeClock
from runtime.spec import AgentfnSpec
from tests.runtime.engine.kit import make_spec, new_engine, run

NOW = 1_790_000_000.0  # Monday 2026-09-21, 14:13 UTC


def _system(spec: AgentfnSpec) -> str:
    engine = new_engine(spec, clock=FakeClock(NOW))
    assert run(engine).status == "succeeded"
    return str(engine._model_cache["m"].requests[0].system)


def _spec(**agent: Any) -> AgentfnSpec:
    return make_spec([{"text": "hi"}], tools=[], **agent)


def test_a_top_level_agent_without_a_date_variable_is_told_the_date() -> None:
    system = _system(_spec(system_prompt="You help."))
    assert system == "You help.\n\nToday is Monday, 2026-09-21 (UTC)."


def test_a_prompt_with_its_own_date_variable_gets_no_second_date() -> None:
    system = _system(_spec(system_prompt="You help. Date: {date}."))
    assert system == "You help. Date: 2026-09-21." and "Today is" not in system


def test_inject_date_false_on_the_agent_or_in_defaults_turns_it_off() -> None:
    assert _system(_spec(system_prompt="You help.", inject_date=False)) == "You help."
    data = _spec(system_prompt="You help.").model_dump(by_alias=True, exclude_unset=True)
    data["defaults"] = {"inject_date": False}
    assert _system(AgentfnSpec.model_validate(data)) == "You help."
    data["agents"]["a"]["inject_date"] = True  # the agent's own key wins
    assert _system(AgentfnSpec.model_validate(data)).endswith("2026-09-21 (UTC).")
