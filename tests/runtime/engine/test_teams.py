"""Teams in one process: handoffs, escalation, sub-agents asked as tools (child runs, in
parallel), routing by @mention and by the session's active agent, return_direct, intents,
depth and cycle limits, and a crash at any commit of all of it."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import pytest

from runtime.clock import FakeClock
from runtime.engine.loop import Engine
from runtime.errors import InvalidRequest, RunLeased, RunNotFound
from runtime.messages import ToolResultMessage
from runtime.spec import AgentfnSpec
from runtime.store.memory import MemoryStore
from tests.runtime.engine.kit import CALLS, TOOLS
from tests.runtime.engine.test_crash_recovery import FaultyStore, SimulatedCrash


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def _spec(scripts: dict[str, list[dict[str, Any]]], **extra: Any) -> AgentfnSpec:
    agents: dict[str, Any] = {
        "desk": {
            "description": "Front desk.",
            "model": "desk",
            "system_prompt": "You run the front desk.",
            "sub_agents": ["refunds", {"agent": "researcher", "as": "tool"}],
        },
        "refunds": {
            "description": "Refunds.",
            "model": "refunds",
            "system_prompt": "You refund orders.",
            "sub_agents": ["auditor"],
        },
        "auditor": {"description": "Audits refunds.", "model": "auditor"},
        "researcher": {"description": "Looks things up.", "model": "researcher", "tools": ["echo"]},
    }
    for name, config in extra.pop("agents", {}).items():
        agents[name] = {**agents[name], **config}
    return AgentfnSpec.model_validate(
        {
            "version": 1,
            "tools_package": "engine_tools",
            "models": {
                name: {"provider": "scripted", "script": scripts.get(name, [{"text": "ok"}])}
                for name in ("desk", "refunds", "auditor", "researcher")
            },
            "tools": {"echo": TOOLS["echo"], **extra.pop("tools", {})},
            "agents": agents,
            **extra,
        }
    )


def _engine(spec: AgentfnSpec, store: MemoryStore | None = None) -> Engine:
    return Engine(spec, store if store is not None else MemoryStore(), clock=FakeClock())


def _requests(engine: Engine, model: str) -> list[Any]:
    cached = engine._model_cache.get(model)
    return list(cached.requests) if cached else []


HANDOFF_AND_BACK = {
    "desk": [
        {"tool_calls": [_call("transfer_to_refunds", reason="a refund")]},
        {"text": "I can take it from here."},
    ],
    "refunds": [{"tool_calls": [_call("request_help", reason="no order id")]}],
}


def test_a_handoff_gives_the_conversation_to_the_sub_agent_and_request_help_gives_it_back() -> None:
    engine = _engine(_spec(HANDOFF_AND_BACK))
    head = asyncio.run(engine.run("desk", "Refund please"))
    assert head.status == "succeeded" and head.chain == ["desk"]
    result = engine.result(head.run_id)
    assert result["result"] == "I can take it from here."
    assert result["agent_path"] == ["desk", "refunds", "desk"]
    assert [c["tool_name"] for c in result["tool_calls"]] == [
        "transfer_to_refunds",
        "request_help",
    ]
    assert "transferred to refunds" in _requests(engine, "refunds")[0].messages[-1].content
    # The sub-agent saw the whole conversation, under its own prompt with the supervisor
    # block (and today's date, which its prompt lacks); only it is offered request_help.
    sub = _requests(engine, "refunds")[0]
    assert sub.messages[0].content == "Refund please"
    assert sub.system.startswith("You are refunds, a specialist working for desk")
    assert "Today is" in sub.system and sub.system.endswith("You refund orders.")
    assert "request_help" in {t.name for t in sub.tools}
    first = _requests(engine, "desk")[0]
    assert "request_help" not in {t.name for t in first.tools}
    assert {"transfer_to_refunds", "ask_researcher", "list_subagents_available"} <= {
        t.name for t in first.tools
    }
    back = _requests(engine, "desk")[1]
    assert "refunds handed the conversation back to you and asked for help: no order id" in (
        back.system
    )
    kinds = [e.type for e in engine.store.list_events(head.run_id, limit=200)]
    assert kinds.count("handoff") == 1 and kinds.count("escalation") == 1
    assert set(result["usage_by_agent"]) == {"desk", "refunds"}


def test_the_session_stays_with_the_agent_it_was_handed_to_until_it_hands_back() -> None:
    scripts = {
        "desk": [{"tool_calls": [_call("transfer_to_refunds")]}],
        "refunds": [{"text": "Refund issued."}],  # each run reads the script from the start
    }
    engine = _engine(_spec(scripts))
    first = asyncio.run(engine.run("desk", "Refund please", "s-1"))
    assert first.chain == ["desk", "refunds"]
    second = asyncio.run(engine.run("desk", "Thanks!", "s-1"))
    assert second.active_agent == "refunds" and second.status == "succeeded"
    assert len(_requests(engine, "desk")) == 1  # the second message went straight to refunds
    assert engine.result(second.run_id)["result"] == "Refund issued."
    assert len(_requests(engine, "refunds")) == 2


def test_an_at_mention_goes_to_that_team_member_and_an_unknown_one_is_refused() -> None:
    engine = _engine(_spec({"auditor": [{"text": "Audit clean."}]}))
    head = asyncio.run(engine.run("desk", "@auditor how are the books?"))
    assert head.chain == ["desk", "refunds", "auditor"] and head.status == "succeeded"
    assert _requests(engine, "desk") == [] and len(_requests(engine, "auditor")) == 1
    with pytest.raises(InvalidRequest) as refused:
        engine.start("desk", "@researcher hi")  # asked as a tool, not a handoff member
    assert "@desk, @refunds, @auditor" in str(refused.value) and refused.value.field == "input"


def test_sub_agents_asked_as_tools_run_as_child_runs_in_parallel() -> None:
    scripts = {
        "desk": [
            {
                "tool_calls": [
                    _call("ask_researcher", task="find A"),
                    _call("ask_researcher", task="find B"),
                ]
            },
            {"text": "Both found."},
        ],
        "researcher": [{"text": "found it"}],
    }
    engine = _engine(_spec(scripts))
    head = asyncio.run(engine.run("desk", "Find A and B"))
    assert head.status == "succeeded"
    result = engine.result(head.run_id)
    asks = result["tool_calls"]
    assert [a["output"] for a in asks] == ["found it", "found it"]
    children = [engine.store.load_head(a["child_run_id"]) for a in asks]
    assert len({c.run_id for c in children}) == 2
    assert all(c.parent_run_id == head.run_id and c.depth == 1 for c in children)
    assert [c.input_preview for c in children] == ["find A", "find B"]
    assert result["child_run_ids"] == [c.run_id for c in children]
    # The team's tokens and turns add up on the parent.
    assert result["usage_by_agent"]["researcher"]["tokens_input"] == sum(
        c.usage.input_tokens for c in children
    )
    assert head.turn == 2 + sum(c.turn for c in children)
    kinds = Counter(e.type for e in engine.store.list_events(head.run_id, limit=200))
    assert kinds["child_run_started"] == 2 and kinds["child_run_finished"] == 2


def test_delegations_beyond_max_depth_or_back_up_the_chain_are_refused() -> None:
    scripts = {
        "desk": [{"tool_calls": [_call("transfer_to_refunds")]}],
        "refunds": [{"tool_calls": [_call("transfer_to_auditor")]}, {"text": "done"}],
    }
    spec = _spec(scripts, defaults={"max_depth": 1})
    engine = _engine(spec)
    head = asyncio.run(engine.run("desk", "Refund"))
    assert head.status == "succeeded" and head.chain == ["desk", "refunds"]
    refused = engine.result(head.run_id)["tool_calls"][-1]
    assert refused["success"] is False and "max_depth (1)" in refused["output"]["error"]
    # A cycle at run time: a child asking its own asker.
    cyclic = _spec(
        {
            "desk": [{"tool_calls": [_call("ask_researcher", task="x")]}, {"text": "ok"}],
            "researcher": [{"tool_calls": [_call("transfer_to_desk")]}, {"text": "fine"}],
        },
        agents={"researcher": {"sub_agents": ["desk"]}},
    )
    engine = _engine(cyclic)
    head = asyncio.run(engine.run("desk", "go"))
    child = engine.store.load_head(engine.result(head.run_id)["child_run_ids"][0])
    transfer = engine.result(child.run_id)["tool_calls"][0]
    assert transfer["success"] is False and "already working on this" in transfer["output"]["error"]


def test_a_return_direct_tools_output_is_the_answer_without_another_model_call() -> None:
    scripts = {"desk": [{"tool_calls": [_call("quick", text="ORD-1 shipped")]}]}
    spec = _spec(
        scripts,
        tools={"quick": {**TOOLS["echo"], "return_direct": True}},
        agents={"desk": {"tools": ["quick"]}},
    )
    engine = _engine(spec)
    head = asyncio.run(engine.run("desk", "status?"))
    assert head.status == "succeeded"
    assert engine.result(head.run_id)["result"] == "echo: ORD-1 shipped"
    assert len(_requests(engine, "desk")) == 1  # not asked again


def test_intents_answer_call_a_tool_or_route_before_any_model_call() -> None:
    intents = [
        {"phrases": ["opening hours?"], "answer": "9 to 5, Monday to Friday."},
        {
            "pattern": r"echo (?P<word>\w+)",
            "tool": {"name": "echo", "arguments": {"text": "{word}"}},
        },
        {"phrases": ["refund"], "agent": "refunds"},
    ]
    scripts = {"refunds": [{"text": "Which order?"}]}
    spec = _spec(scripts, agents={"desk": {"tools": ["echo"], "intents": intents}})
    engine = _engine(spec)
    CALLS.clear()
    hours = asyncio.run(engine.run("desk", "Opening hours"))
    assert engine.result(hours.run_id)["result"] == "9 to 5, Monday to Friday."
    echoed = asyncio.run(engine.run("desk", "echo banana"))
    assert engine.result(echoed.run_id)["result"] == "echo: banana"
    assert CALLS == [("echo", {"text": "banana"})]
    routed = asyncio.run(engine.run("desk", "Refund!"))
    assert routed.chain == ["desk", "refunds"]
    assert engine.result(routed.run_id)["result"] == "Which order?"
    assert _requests(engine, "desk") == []  # no model call for any of them
    matched = [
        e.data["then"]
        for run in (hours, echoed, routed)
        for e in engine.store.list_events(run.run_id, limit=100)
        if e.type == "intent_matched"
    ]
    assert matched == ["answer", "tool:echo", "agent:refunds"]
    listed = next(t for t in engine._tools("desk").values() if t.name == "list_intents_available")
    assert listed is not None


TEAM_SCRIPT = {
    "desk": [
        {"tool_calls": [_call("ask_researcher", task="price of ORD-1")]},
        {"tool_calls": [_call("transfer_to_refunds")]},
        {"text": "Refunded 42 EUR."},
    ],
    "refunds": [{"tool_calls": [_call("request_help", reason="needs sign-off")]}],
    "researcher": [{"tool_calls": [_call("echo", text="ORD-1")]}, {"text": "42 EUR"}],
}


def _drive(engine: Engine, clock: FakeClock, run_id: str | None) -> str:
    if run_id is None:
        run_id = engine.start("desk", "Refund ORD-1").run_id
    for _ in range(30):
        try:
            head = engine.store.load_head(run_id)
        except RunNotFound:
            run_id = engine.start("desk", "Refund ORD-1").run_id
            continue
        if head.status in ("succeeded", "failed", "cancelled"):
            return run_id
        try:
            asyncio.run(engine.advance(run_id))
        except RunLeased:
            clock.advance(engine.lease_seconds + 1)
    raise AssertionError("the team run did not finish")


def _normal(result: dict[str, Any]) -> dict[str, Any]:
    """The result without what differs between two runs of the same script: ids, and token
    estimates (the scripted model counts the prompt, whose timestamps a crash shifts)."""
    ignored = {"run_id", "session_id", "child_run_ids", "tokens_input", "usage_by_agent"}
    out = {k: v for k, v in result.items() if k not in ignored}
    out["agents_with_usage"] = sorted(result.get("usage_by_agent", {}))
    out["tool_calls"] = [
        {
            **{k: v for k, v in c.items() if k not in {"tool_call_id", "child_run_id"}},
            "duration_ms": 0,
        }
        for c in result["tool_calls"]
    ]
    return out


def _baseline() -> tuple[dict[str, Any], int]:
    store, clock = MemoryStore(), FakeClock()
    counting = FaultyStore(store, crash_at=-1, phase="never")
    engine = Engine(_spec(TEAM_SCRIPT), counting, clock=clock)  # type: ignore[arg-type]
    run_id = _drive(engine, clock, None)
    return _normal(engine.result(run_id)), counting.commits


TEAM_BASELINE, TEAM_COMMITS = _baseline()


def test_the_team_baseline_hands_off_escalates_and_asks() -> None:
    assert TEAM_BASELINE["status"] == "succeeded"
    assert TEAM_BASELINE["agent_path"] == ["desk", "refunds", "desk"]
    assert TEAM_COMMITS >= 12


@pytest.mark.parametrize("phase", ["before", "after"])
@pytest.mark.parametrize("crash_at", range(1, TEAM_COMMITS + 1))
def test_a_crash_at_any_commit_of_a_team_run_resumes_to_the_same_result(
    crash_at: int, phase: str
) -> None:
    store, clock = MemoryStore(), FakeClock()
    faulty = FaultyStore(store, crash_at, phase)
    first = Engine(_spec(TEAM_SCRIPT), faulty, clock=clock)  # type: ignore[arg-type]
    CALLS.clear()
    with pytest.raises(SimulatedCrash):
        _drive(first, clock, None)
    crashed = faulty.crashed_commit
    assert crashed is not None
    run_id = crashed.head.parent_run_id or crashed.head.run_id
    if crashed.expected_version is None and phase == "before" and not crashed.head.parent_run_id:
        run_id = None  # the start itself was lost: the caller starts again
    second = Engine(_spec(TEAM_SCRIPT), store, clock=clock)  # a new process
    run_id = _drive(second, clock, run_id)
    full = second.result(run_id)
    # The same result, the same single child (never two), nothing duplicated.
    assert len(full["child_run_ids"]) == 1
    assert _normal(full) == TEAM_BASELINE
    children = [k for k in store.items if k[1] == "HEAD" and k[0] != f"RUN#{run_id}"]
    assert len(children) == 1
    head = store.load_head(run_id)
    assert [e.seq for e in store.list_events(run_id, limit=1000)] == list(range(head.event_seq))
    messages = store.load_messages(head)
    assert head.msg_seq == len(messages)
    assert sum(isinstance(m, ToolResultMessage) for m in messages) == 2 + 1  # ask, transfer, help


def _budget_spec(max_tokens: int) -> AgentfnSpec:
    """Issue 22, point 9's scenario: `desk` (budget max_tokens) asks `kid` three times in one
    answer. The first answer costs 110 tokens, so 890 are left when the children start; each
    child's answer costs 325 tokens, two answers each: 2,060 in all when nothing holds them."""
    scripts = {
        "desk": [
            {
                "tool_calls": [_call("ask_kid", task=f"part {i}") for i in range(3)],
                "usage": {"input_tokens": 100, "output_tokens": 10},
            },
            {"text": "All parts done."},
        ],
    }
    data = _spec(scripts).model_dump(mode="json", by_alias=True)
    data["agents"]["desk"]["sub_agents"] = [{"agent": "kid", "as": "tool"}]
    data["agents"]["desk"]["budget"] = {"max_tokens": max_tokens}
    data["models"]["desk"]["max_tokens"] = 50
    data["agents"]["kid"] = {
        "description": "Does one part.",
        "model": "kid",
        "tools": ["echo"],
    }
    data["models"]["kid"] = {
        "provider": "scripted",
        "max_tokens": 25,
        "script": [
            {
                "tool_calls": [_call("echo", text="working")],
                "usage": {"input_tokens": 300, "output_tokens": 25},
            },
            {"text": "part done", "usage": {"input_tokens": 300, "output_tokens": 25}},
        ],
    }
    return AgentfnSpec.model_validate(data)


def _spent(engine: Engine, run_id: str) -> int:
    head = engine.store.load_head(run_id)
    return head.usage.input_tokens + head.usage.output_tokens


def test_parallel_children_share_what_is_left_of_the_budget() -> None:
    """Each child used to start with the whole remainder (890) and the run spent 2,060 of
    its 1,000 tokens. What is left is now split among the children started together, so the
    run never spends more than its budget plus one model call's estimate."""
    free = _engine(_budget_spec(1_000_000))  # the same team without a limit that matters
    unbounded = asyncio.run(free.run("desk", "do the three parts"))
    assert unbounded.status == "succeeded" and _spent(free, unbounded.run_id) > 2000
    one_call = max(r.estimated_tokens for r in _requests(free, "kid")) + 25  # its max_tokens

    engine = _engine(_budget_spec(1000))
    head = asyncio.run(engine.run("desk", "do the three parts"))
    children = [engine.store.load_head(c) for c in engine.result(head.run_id)["child_run_ids"]]
    assert len(children) == 3
    shares = [c.budget_left.tokens for c in children if c.budget_left is not None]
    assert shares == [296, 296, 296]  # 890 split three ways
    assert _spent(engine, head.run_id) <= 1000 + one_call, _spent(engine, head.run_id)
