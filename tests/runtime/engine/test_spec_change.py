"""A run never silently continues on a different spec."""

from __future__ import annotations

import asyncio

from runtime.engine.loop import Engine
from runtime.spec import AgentfnSpec
from tests.runtime.engine.kit import call, make_spec, new_engine

SCRIPT = [{"tool_calls": [call("agent_clarify", {"question": "which?"})]}, {"text": "done"}]


def _paused(spec: AgentfnSpec) -> tuple[Engine, str]:
    engine = new_engine(spec)
    head = asyncio.run(engine.run("a", "go"))
    assert head.status == "awaiting_input"
    engine.reply(head.run_id, "this one")
    return engine, head.run_id


def _edited(spec: AgentfnSpec, change) -> AgentfnSpec:  # type: ignore[no-untyped-def]
    data = spec.model_dump(mode="json", by_alias=True)
    change(data)
    return AgentfnSpec.model_validate(data)


def test_an_incompatible_change_ends_the_run_with_spec_changed() -> None:
    spec = make_spec(SCRIPT, tools=["echo"])
    engine, run_id = _paused(spec)
    changed = _edited(spec, lambda d: d["agents"]["a"].update(system_prompt="Be terse."))
    head = asyncio.run(Engine(changed, engine.store).advance(run_id))
    assert head.status == "failed" and head.error_code == "SPEC_CHANGED"


def test_a_change_to_another_agent_is_compatible_and_the_run_continues() -> None:
    spec = make_spec(SCRIPT, tools=["echo"])
    engine, run_id = _paused(spec)

    def add_agent(data: dict) -> None:  # type: ignore[type-arg]
        data["agents"]["other"] = {"description": "new", "model": "m"}

    changed = _edited(spec, add_agent)
    assert changed.spec_hash() != spec.spec_hash()
    head = asyncio.run(Engine(changed, engine.store).advance(run_id))
    assert head.status == "succeeded"
    assert head.spec_hash == spec.spec_hash()  # the run still records what it started with


def test_a_setting_left_at_its_default_does_not_change_the_agent_hash() -> None:
    """A new agentfn version adds settings with defaults (compaction, hooks, context_window):
    written out at their defaults, or absent, the agent hash is the same, so deploying the
    upgrade does not end the runs in flight."""
    from runtime.engine.compat import agent_hash

    spec = make_spec(SCRIPT, tools=["echo"])
    explicit = _edited(
        spec,
        lambda d: (
            d["agents"]["a"].update(compaction={"threshold": 0.8}, hooks=[]),
            d["models"]["m"].update(context_window=None),
        ),
    )
    before = agent_hash(spec.to_runtime(), "a")
    assert agent_hash(explicit.to_runtime(), "a") == before
    changed = _edited(spec, lambda d: d["agents"]["a"].update(compaction={"threshold": 0.5}))
    assert agent_hash(changed.to_runtime(), "a") != before
