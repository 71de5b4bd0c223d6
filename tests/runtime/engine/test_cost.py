"""Cost per call, per model and per agent, and budgets that stop a run before it overspends:
at the boundary exactly a call is still made; one token or one cent less and it is not."""

from __future__ import annotations

from typing import Any

import pytest

from runtime.engine.loop import Engine
from runtime.spec import AgentfnSpec
from runtime.store.memory import MemoryStore
from tests.runtime.engine.kit import call, make_spec, new_engine, run

PRICE = {"input_per_mtok": 3.0, "output_per_mtok": 15.0}
SCRIPT: list[dict[str, Any]] = [
    {"text": "Looking.", "tool_calls": [call("echo", {"text": "ORD-1"})]},
    {"text": "ORD-1 is on its way."},
]


def _spec(budget: dict[str, Any] | None = None, **models: Any) -> AgentfnSpec:
    spec = make_spec(SCRIPT, tools=["echo"], **({"budget": budget} if budget else {}))
    data = spec.model_dump(mode="json", by_alias=True)
    data["models"]["m"].update(price=PRICE, max_tokens=50, **models)
    return AgentfnSpec.model_validate(data)


def _calls(engine: Engine) -> list[dict[str, Any]]:
    head_events = engine.store.list_events(engine._last_run, limit=500)  # type: ignore[attr-defined]
    return [e.data for e in head_events if e.type == "model_response"]


def _run(
    spec: AgentfnSpec, session: str | None = None, store: MemoryStore | None = None
) -> tuple[Engine, Any]:
    engine = new_engine(spec, store)
    head = run(engine, "where is ORD-1?", session_id=session)
    engine._last_run = head.run_id  # type: ignore[attr-defined]
    return engine, head


def test_each_call_is_charged_at_its_models_price() -> None:
    engine, head = _run(_spec())
    assert head.status == "succeeded"
    calls = _calls(engine)
    requests = engine._model_cache["m"].requests  # type: ignore[attr-defined]
    expected = [
        (r.estimated_tokens * 3.0 + e["usage"]["output_tokens"] * 15.0) / 1e6
        for r, e in zip(requests, calls, strict=True)
    ]
    assert [c["cost_usd"] for c in calls] == [round(x, 6) for x in expected]
    assert all(isinstance(c["duration_ms"], int) for c in calls)
    result = engine.result(head.run_id)
    assert result["cost_usd"] == round(sum(expected), 6)
    assert result["cost_by_model"] == {"m": round(sum(expected), 6)}
    done = [e.data for e in engine.store.list_events(head.run_id) if e.type == "run_completed"]
    assert done[0]["cost_usd"] == result["cost_usd"] > 0


def test_a_fallback_is_charged_at_its_own_price() -> None:
    script = [{"error": {"status": 400, "message": "bad request"}}, {"text": "unused"}]
    spec = make_spec(
        script,
        tools=[],
        fallbacks=["b"],
        models={
            "b": {
                "provider": "scripted",
                "script": [{"text": "from b"}],
                "price": {"input_per_mtok": 1.0, "output_per_mtok": 2.0},
            }
        },
    )
    data = spec.model_dump(mode="json", by_alias=True)
    data["models"]["m"]["price"] = PRICE
    engine, head = _run(AgentfnSpec.model_validate(data))
    assert head.status == "succeeded"
    result = engine.result(head.run_id)
    assert set(result["cost_by_model"]) == {"b"} and result["cost_usd"] > 0


def _needs() -> tuple[int, int, float, float]:
    """Without a budget: tokens and dollars spent by the first call, and what the check
    counts for the second (its estimated prompt plus a full answer of max_tokens 50)."""
    engine, _ = _run(_spec())
    first = _calls(engine)[0]
    second_prompt = engine._model_cache["m"].requests[1].estimated_tokens  # type: ignore[attr-defined]
    spent_tokens = first["usage"]["input_tokens"] + first["usage"]["output_tokens"]
    second_tokens = second_prompt + 50
    second_cost = (second_prompt * 3.0 + 50 * 15.0) / 1e6
    return spent_tokens, second_tokens, first["cost_usd"], second_cost


def test_a_token_budget_allows_the_exact_boundary_and_stops_one_token_below() -> None:
    spent, upcoming, _, _ = _needs()
    _, head = _run(_spec({"max_tokens": spent + upcoming}))
    assert head.status == "succeeded", head.error_message
    engine, head = _run(_spec({"max_tokens": spent + upcoming - 1}))
    assert head.status == "failed" and head.error_code == "BUDGET_EXCEEDED"
    assert f"{spent:,} tokens used" in (head.error_message or "")
    result = engine.result(head.run_id)
    assert result["turns_used"] == 1 and result["tokens_input"] + result["tokens_output"] == spent


def test_a_dollar_budget_stops_the_run_before_the_call_that_would_pass_it() -> None:
    _, _, spent, upcoming = _needs()
    _, head = _run(_spec({"max_cost_usd": spent + upcoming + 1e-9}))
    assert head.status == "succeeded", head.error_message
    _, head = _run(_spec({"max_cost_usd": spent + upcoming - 1e-7}))
    assert head.status == "failed" and head.error_code == "BUDGET_EXCEEDED"
    assert "max_cost_usd" in (head.error_message or "")


def test_a_session_budget_counts_the_sessions_earlier_runs() -> None:
    _, alone = _run(_spec(), "s0")
    total = alone.usage.input_tokens + alone.usage.output_tokens  # what one run spends
    store = MemoryStore()
    spec = _spec({"session": {"max_tokens": total + 100}})  # one run and a bit
    _, first = _run(spec, "s1", store)
    assert first.status == "succeeded"
    assert store.session_state("a", "s1").spent.tokens == total
    _, second = _run(spec, "s1", store)
    assert second.status == "failed" and second.error_code == "BUDGET_EXCEEDED"
    assert "budget.session" in (second.error_message or "") and second.turn == 0
    _, other = _run(spec, "s2", store)  # another session starts from nothing
    assert other.status == "succeeded"


@pytest.mark.parametrize("limit", ["max_tokens", "max_cost_usd"])
def test_a_child_run_gets_what_its_parents_budget_has_left(limit: str) -> None:
    from runtime.engine.cost import child_budget
    from runtime.store.base import RunHead

    spec = _spec({limit: 1000 if limit == "max_tokens" else 1.0})
    parent = RunHead(
        run_id="r",
        agent="a",
        session_id="s",
        run_key="k",
        spec_hash="h",
        agent_hash="h",
        created_at=0,
        updated_at=0,
        expires_at=10,
    )
    parent.usage.input_tokens, parent.cost_usd = 400, 0.25
    left = child_budget(spec, parent)
    assert left is not None
    if limit == "max_tokens":
        assert (left.tokens, left.cost_usd) == (600, 0.0)
    else:
        assert (left.tokens, left.cost_usd) == (0, 0.75)
