"""`system_prompt: {python: MODULE:FUNCTION}`: computed before each model call from the run's
context and history, recorded per turn so a retried or resumed call gets the same text, and
bounded: a slow, failing or non-text function fails the run naming it."""

from __future__ import annotations

import asyncio
import importlib
from typing import Any

import pytest

from runtime.engine.commits import RunCursor
from runtime.engine.computed_prompt import agent_prompt, prompt_key
from tests.runtime.engine.kit import call, make_spec, new_engine, run

prompts = importlib.import_module("engine_tools.prompts")  # on the path the kit sets


def _engine(function: str, script: list[dict[str, Any]], **prompt: Any) -> Any:
    spec = make_spec(script, tools=["echo"], system_prompt={"python": function, **prompt})
    return new_engine(spec)


def test_each_model_call_gets_the_prompt_its_function_computes_from_the_history() -> None:
    prompts.SEEN.clear()
    engine = _engine(
        "engine_tools.prompts:by_history",
        [{"tool_calls": [call("echo", {"text": "x"})]}, {"text": "done"}],
    )
    head = run(engine, "what is x?")
    assert head.status == "succeeded"
    systems = [r.system for r in engine._model_cache["m"].requests]
    assert systems == [
        "You are a on turn 1, after 1 messages; the user asked: what is x?",
        "You are a on turn 2, after 3 messages; the user asked: what is x?",
    ]
    context, history = prompts.SEEN[1]
    assert context["run_id"] == head.run_id and context["session_id"] == head.session_id
    assert [m["kind"] for m in history] == ["user", "assistant", "tool_result"]
    recorded = engine.store.blobs.get(prompt_key(head.run_id, "a", 2)).decode()
    assert recorded == systems[1]  # what the model was sent, kept with the run


def test_a_recorded_turn_is_never_computed_again() -> None:
    """The same turn asked again (a retry, a resume elsewhere) gets the recorded text even
    though the function would now say something else."""
    engine = _engine("engine_tools.prompts:by_history", [{"text": "ok"}])
    head = run(engine, "hi")
    cursor = RunCursor(head=head, messages=engine.store.load_messages(head))
    prompts.PREFIX[0] = "Now you are"
    try:
        again = asyncio.run(agent_prompt(cursor, engine.spec, engine.store.blobs, 1, 0))
        fresh = asyncio.run(agent_prompt(cursor, engine.spec, engine.store.blobs, 9, 0))
    finally:
        prompts.PREFIX[0] = "You are"
    assert again == engine._model_cache["m"].requests[0].system
    assert again.startswith("You are a on turn 1") and fresh.startswith("Now you are a on turn 9")


def test_an_async_function_is_awaited() -> None:
    engine = _engine("engine_tools.prompts:async_prompt", [{"text": "ok"}])
    head = run(engine)
    assert engine._model_cache["m"].requests[0].system == f"async prompt for {head.run_id}"


@pytest.mark.parametrize(
    ("function", "why"),
    [
        ("engine_tools.prompts:sleepy", "did not return within 0.5s"),
        ("engine_tools.prompts:not_text", "returned int, not non-empty text"),
        ("engine_tools.prompts:missing", "no public function 'missing'"),
    ],
)
def test_a_bad_prompt_function_fails_the_run_naming_it(function: str, why: str) -> None:
    engine = _engine(function, [{"text": "never"}], timeout="0.5s")
    head = run(engine)
    assert head.status == "failed" and head.error_code == "SYSTEM_PROMPT_FAILED"
    assert function in (head.error_message or "") and why in (head.error_message or "")
    assert engine._model_cache.get("m") is None or not engine._model_cache["m"].requests
