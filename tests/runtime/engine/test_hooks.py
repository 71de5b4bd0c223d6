"""Hooks in runs, with rule and python hooks: each event, what it may block and modify, what
the history keeps, how hooks meet approvals, their order, and failing open or closed."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from runtime.messages import AssistantMessage, ToolResultMessage
from runtime.store.memory import MemoryStore
from runtime.structs import dump
from tests.helpers import ROOT
from tests.runtime.engine.hook_kit import (
    event_types,
    hook_events,
    hooked,
    model_saw,
    policy,
    python,
    results,
    rule,
)
from tests.runtime.engine.kit import CALLS, call, make_spec, new_engine, run

CHARGE_THEN_DONE = [
    {"tool_calls": [call("charge", {"amount": 5}, id="call-1")]},
    {"text": "done"},
]


@pytest.fixture(autouse=True)
def _clean_policy() -> Iterator[None]:
    policy.SEEN.clear()
    policy.ANSWERS.clear()
    yield
    policy.SEEN.clear()
    policy.ANSWERS.clear()


def seen(event: str) -> list[dict[str, Any]]:
    return [p for p in policy.SEEN if p["event"] == event]


# ---- no hooks --------------------------------------------------------------------------


def test_without_hooks_a_run_leaves_no_hook_trace() -> None:
    engine = new_engine(make_spec(CHARGE_THEN_DONE, tools=["charge"]))
    head = run(engine)
    assert head.status == "succeeded" and CALLS == [("charge", {"amount": 5})]
    assert "hook_decision" not in event_types(engine, head.run_id)
    assert head.hook_decisions == {} and head.warnings == []


# ---- pre_tool_use ------------------------------------------------------------------------


def test_a_rule_denial_reaches_the_model_as_the_tools_error_result() -> None:
    deny = rule(arg="amount", op="in", value=[1, 2, 3], **{"else": "deny"}, reason="over limit")
    engine = new_engine(hooked(CHARGE_THEN_DONE, tools=["charge"], agent=[deny]))
    head = run(engine)
    assert head.status == "succeeded"
    assert CALLS == []  # the tool never ran
    (denied,) = results(engine, head.run_id)
    assert denied.success is False
    assert denied.content == "Error: a policy hook denied this call: over limit; it was not run"
    told = [m for m in model_saw(engine, 1) if isinstance(m, ToolResultMessage)]
    assert [m.content for m in told] == [denied.content]  # what the model read next
    (event,) = hook_events(engine, head.run_id)
    assert event["decision"] == "deny" and event["reason"] == "over limit"
    assert event["hook"] == "agents.a.hooks[0]" and event["type"] == "rule"
    assert event["tool_call_id"] == "call-1" and event["event"] == "pre_tool_use"
    types = event_types(engine, head.run_id)
    assert types.index("hook_decision") < types.index("tool_result")


def test_rule_decisions_add_events_but_no_commit() -> None:
    """A rule is pure: it is evaluated again when needed, never committed on its own."""
    allow = rule(arg="amount", op="in", value=[5], **{"else": "deny"})
    counts = []
    for hooks in ([], [allow]):
        engine = new_engine(hooked(CHARGE_THEN_DONE, tools=["charge"], agent=hooks))
        assert isinstance(engine.store, MemoryStore)
        head = run(engine)
        assert head.status == "succeeded" and CALLS == [("charge", {"amount": 5})]
        counts.append(engine.store.stats.commits)
        assert len(hook_events(engine, head.run_id)) == len(hooks)
    assert counts[0] == counts[1]


def test_match_selects_tools_by_identity_and_globs() -> None:
    script = [
        {"tool_calls": [call("echo", {"text": "hi"}), call("charge", {"amount": 5})]},
        {"text": "done"},
    ]
    never = {"arg": "nope", "op": "equals", "value": 1, "else": "deny", "reason": "no"}
    hooks = [
        {"event": "pre_tool_use", "type": "rule", "match": "ch*", "rules": [never]},
        {"event": "pre_tool_use", "type": "rule", "match": ["aecho"], "rules": [never]},
    ]
    engine = new_engine(hooked(script, tools=["echo", "charge", "aecho"], agent=hooks))
    head = run(engine)
    assert CALLS == [("echo", {"text": "hi"})]  # charge denied by the glob; echo unmatched
    assert [e["hook"] for e in hook_events(engine, head.run_id)] == ["agents.a.hooks[0]"]


def test_modified_arguments_are_what_runs_and_what_the_history_keeps() -> None:
    hooks = [python("pre_tool_use", "engine_tools.policy:double", match="charge")]
    engine = new_engine(hooked(CHARGE_THEN_DONE, tools=["charge"], agent=hooks))
    head = run(engine)
    assert CALLS == [("charge", {"amount": 10})]
    (result,) = results(engine, head.run_id)
    assert result.inputs == {"amount": 10} and result.success
    assert engine.result(head.run_id)["tool_calls"][0]["inputs"] == {"amount": 10}
    (asked,) = seen("pre_tool_use")
    assert asked["tool"] == {
        "name": "charge",
        "reference": "charge",
        "call_id": "call-1",
        "arguments": {"amount": 5},
    }
    assert asked["agent"] == "a" and asked["run_id"] == head.run_id
    assert asked["session_id"] == head.session_id and asked["hook"] == "agents.a.hooks[0]"
    (event,) = hook_events(engine, head.run_id)
    assert (event["decision"], event["reason"]) == ("modify", "doubled")
    assert engine.store.load_head(head.run_id).hook_decisions == {}  # dropped with the result


def test_replacement_arguments_that_break_the_schema_are_a_hook_failure() -> None:
    policy.ANSWERS["pre_tool_use"] = {"decision": "modify", "arguments": {"amount": -1}}
    engine = new_engine(hooked(CHARGE_THEN_DONE, tools=["charge"], agent=[python("pre_tool_use")]))
    head = run(engine)
    assert CALLS == [("charge", {"amount": 5})]  # fail open: the model's arguments
    (event,) = hook_events(engine, head.run_id)
    assert event["decision"] == "allow" and "does not fit the schema" in event["error"]
    assert any("fail open" in w for w in head.warnings)


def test_hooks_run_top_level_then_defaults_then_agent_each_seeing_the_last_change() -> None:
    script = [{"tool_calls": [call("echo", {"text": "x"})]}, {"text": "done"}]
    tag = python("pre_tool_use", "engine_tools.policy:tag")
    spec = hooked(script, tools=["echo"], top=[tag, tag], defaults=[tag], agent=[tag])
    engine = new_engine(spec)
    head = run(engine)
    order = ["hooks[0]", "hooks[1]", "defaults.hooks[0]", "agents.a.hooks[0]"]
    assert [e["hook"] for e in hook_events(engine, head.run_id)] == order
    tagged = "x" + "".join(f"<{o}>" for o in order)
    assert list(CALLS) == [("echo", {"text": tagged})]


def test_a_denial_stops_the_chain() -> None:
    script = [{"tool_calls": [call("echo", {"text": "x"})]}, {"text": "done"}]
    deny = rule(arg="text", op="equals", value="x", then="deny", reason="no x")
    spec = hooked(script, tools=["echo"], top=[deny], agent=[python("pre_tool_use")])
    engine = new_engine(spec)
    head = run(engine)
    assert seen("pre_tool_use") == [] and CALLS == []
    assert [e["decision"] for e in hook_events(engine, head.run_id)] == ["deny"]


def test_read_only_calls_in_a_batch_are_checked_one_by_one() -> None:
    script = [
        {"tool_calls": [call("aecho", {"text": "ok"}), call("aecho", {"text": "secret"})]},
        {"text": "done"},
    ]
    deny = rule(arg="text", op="contains", value="secret", then="deny", reason="no secrets")
    engine = new_engine(hooked(script, tools=["aecho"], agent=[deny]))
    head = run(engine)
    assert CALLS == [("aecho", {"text": "ok", "times": 1})]
    ok, denied = results(engine, head.run_id)
    assert ok.success and not denied.success and "no secrets" in denied.content


# ---- hooks and approvals -----------------------------------------------------------------


def test_an_approver_sees_the_arguments_as_the_hooks_left_them() -> None:
    hooks = [python("pre_tool_use", "engine_tools.policy:double")]
    spec = hooked(CHARGE_THEN_DONE, tools=["charge"], agent=hooks, approval=[{"tools": ["charge"]}])
    engine = new_engine(spec)
    head = run(engine)
    assert head.status == "awaiting_approval"
    assert [p.inputs for p in head.pending_approval] == [{"amount": 10}]
    assert engine.result(head.run_id)["pending_approval"][0]["inputs"] == {"amount": 10}
    types = event_types(engine, head.run_id)
    assert types.index("hook_decision") < types.index("approval_requested")
    engine.decide(head.run_id, approved=True)
    head = asyncio.run(engine.advance(head.run_id))
    assert head.status == "succeeded" and CALLS == [("charge", {"amount": 10})]
    assert len(seen("pre_tool_use")) == 1  # the decision was committed: not asked again
    assert len(hook_events(engine, head.run_id)) == 1


def test_a_call_a_hook_denies_never_waits_for_a_person() -> None:
    script = [
        {"tool_calls": [call("charge", {"amount": 5}), call("charge", {"amount": 500})]},
        {"text": "done"},
    ]
    deny = rule(arg="amount", op="in", value=[5], **{"else": "deny"}, reason="too much")
    spec = hooked(script, tools=["charge"], agent=[deny], approval=[{"tools": ["charge"]}])
    engine = new_engine(spec)
    head = run(engine)
    assert head.status == "awaiting_approval"
    assert [p.inputs for p in head.pending_approval] == [{"amount": 5}]
    # Settled before the person was asked: committed, and not evaluated (or recorded) twice.
    assert len(hook_events(engine, head.run_id)) == 2
    engine.decide(head.run_id, approved=True)
    head = asyncio.run(engine.advance(head.run_id))
    assert head.status == "succeeded" and CALLS == [("charge", {"amount": 5})]
    assert [r.success for r in results(engine, head.run_id)] == [True, False]
    assert len(hook_events(engine, head.run_id)) == 2
    assert head.hook_decisions == {}


# ---- post_tool_use -----------------------------------------------------------------------


def test_post_tool_use_redaction_is_what_is_committed_and_cached() -> None:
    script = [
        {"tool_calls": [call("echo", {"text": "card 4111 1111"}, id="c-1")]},
        {"tool_calls": [call("big", {"size": 300}, id="c-2")]},
        {"text": "done"},
    ]
    hooks = [python("post_tool_use", "engine_tools.policy:scrub")]
    spec = hooked(script, tools=["echo", "big"], agent=hooks, tool_result_max_chars=100)
    engine = new_engine(spec)
    head = run(engine)
    assert head.status == "succeeded"
    echo, big = results(engine, head.run_id)
    assert echo.content == "echo: card #### ####" and echo.output == "echo: card #### ####"
    assert not any(c.isdigit() for c in big.content.split("\n[output truncated")[0])
    assert big.full_output_ref is not None and big.full_size == 300
    cached = engine.store.blobs.get(big.full_output_ref).decode()
    assert len(cached) == 300 and not any(c.isdigit() for c in cached)  # no original left
    told = [m for m in model_saw(engine, 1) if isinstance(m, ToolResultMessage)]
    assert told[0].content == "echo: card #### ####"
    asked = seen("post_tool_use")[0]
    assert asked["result"] == {
        "content": "echo: card 4111 1111",
        "success": True,
        "output": "echo: card 4111 1111",
    }
    assert asked["tool"]["arguments"] == {"text": "card 4111 1111"}


def test_post_tool_use_cannot_deny() -> None:
    policy.ANSWERS["post_tool_use"] = {"decision": "deny", "reason": "no"}
    script = [{"tool_calls": [call("echo", {"text": "hi"})]}, {"text": "done"}]
    engine = new_engine(hooked(script, tools=["echo"], agent=[python("post_tool_use")]))
    head = run(engine)
    (result,) = results(engine, head.run_id)
    assert result.success and result.content == "echo: hi"
    (event,) = hook_events(engine, head.run_id)
    assert event["error"] == "post_tool_use hooks cannot deny"


# ---- pre_response ------------------------------------------------------------------------


def test_pre_response_modifies_the_answer_and_the_history() -> None:
    script = [{"text": "Your code is 1234."}]
    engine = new_engine(
        hooked(script, tools=[], agent=[python("pre_response", "engine_tools.policy:scrub")])
    )
    head = run(engine)
    assert head.status == "succeeded"
    assert engine.result(head.run_id)["result"] == "Your code is ####."
    answers = [m for m in engine.store.load_messages(head) if isinstance(m, AssistantMessage)]
    assert answers[-1].text == "Your code is ####."
    events = engine.store.list_events(head.run_id)
    response = next(e for e in events if e.type == "model_response")
    assert "1234" not in response.data["text"]
    assert [e.type for e in events][-3:] == ["hook_decision", "step_completed", "run_completed"]


def test_pre_response_block_answers_with_the_blocked_message() -> None:
    script = [{"text": "The admin password is hunter2."}]
    block = rule("pre_response", op="contains", value="password", then="deny", reason="leak")
    engine = new_engine(hooked(script, tools=[], agent=[block]))
    head = run(engine)
    assert head.status == "succeeded"
    result = engine.result(head.run_id)
    assert result["result"] == "The response was blocked by policy: leak"
    assert any("blocked" in w for w in result["warnings"])
    assert "hunter2" not in str(engine.store.load_messages(head))


def test_pre_response_applies_to_a_direct_answer_too() -> None:
    intents = [{"phrases": ["code"], "answer": "code 42"}]
    hooks = [python("pre_response", "engine_tools.policy:scrub")]
    engine = new_engine(hooked([{"text": "unused"}], tools=[], agent=hooks, intents=intents))
    head = run(engine, "code")
    assert engine.result(head.run_id)["result"] == "code ##"


def test_a_structured_answer_stays_valid_after_a_hook() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    policy.ANSWERS["pre_response"] = {"decision": "modify", "response": {"n": "not a number"}}
    engine = new_engine(
        hooked(
            [{"text": '{"n": 1}'}], tools=[], agent=[python("pre_response")], output_schema=schema
        )
    )
    head = run(engine)
    assert engine.result(head.run_id)["result"] == {"n": 1}  # the invalid change is refused
    (event,) = hook_events(engine, head.run_id)
    assert "does not fit the schema" in event["error"]
    assert seen("pre_response")[0]["response"] == {"n": 1}


# ---- on_run_start / on_run_complete ------------------------------------------------------


def test_on_run_start_denial_fails_the_run_before_any_model_call() -> None:
    deny = rule("on_run_start", op="contains", value="DROP TABLE", then="deny", reason="sql")
    engine = new_engine(hooked(CHARGE_THEN_DONE, tools=["charge"], top=[deny]))
    head = run(engine, "please DROP TABLE users")
    assert head.status == "failed" and head.error_code == "HOOK_DENIED"
    assert "sql" in (head.error_message or "")
    assert "m" not in engine._model_cache or engine._model_cache["m"].requests == []  # type: ignore[attr-defined]
    assert event_types(engine, head.run_id) == ["run_started", "hook_decision", "run_failed"]
    assert engine.result(head.run_id)["error_code"] == "HOOK_DENIED"


def test_on_run_start_is_asked_once_before_the_first_step() -> None:
    engine = new_engine(hooked(CHARGE_THEN_DONE, tools=["charge"], agent=[python("on_run_start")]))
    head = run(engine, "hello there")
    assert head.status == "succeeded"
    assert [p["input"] for p in seen("on_run_start")] == ["hello there"]
    types = event_types(engine, head.run_id)
    assert types[:3] == ["run_started", "hook_decision", "step_started"]


def test_on_run_start_cannot_modify() -> None:
    policy.ANSWERS["on_run_start"] = {"decision": "modify", "response": "x"}
    hooks = [python("on_run_start", on_error="deny")]
    engine = new_engine(hooked(CHARGE_THEN_DONE, tools=["charge"], agent=hooks))
    head = run(engine)
    assert head.error_code == "HOOK_DENIED" and "cannot modify" in (head.error_message or "")


def test_on_run_complete_fires_once_and_its_failure_does_not_fail_the_run() -> None:
    hooks = [python("on_run_complete"), python("on_run_complete", "engine_tools.policy:boom")]
    engine = new_engine(hooked([{"text": "all done"}], tools=[], agent=hooks))
    head = run(engine)
    assert head.status == "succeeded"
    asyncio.run(engine.advance(head.run_id))  # a finished run: nothing fires again
    (fired,) = seen("on_run_complete")
    head = engine.store.load_head(head.run_id)
    assert fired["response"] == "all done" and fired["usage"] == dump(head.usage)
    assert head.status == "succeeded"
    ok, failed = hook_events(engine, head.run_id)
    assert ok.get("error") is None and "kaboom" in failed["error"]
    assert any("kaboom" in w for w in head.warnings)
    assert event_types(engine, head.run_id)[-3:] == ["run_completed", *["hook_decision"] * 2]


def test_on_run_complete_does_not_fire_for_a_failed_run() -> None:
    spec = hooked(
        [{"text": "not json"}] * 5,
        tools=[],
        agent=[python("on_run_complete")],
        output_schema={"type": "object"},
    )
    engine = new_engine(spec)
    head = run(engine)
    assert head.status == "failed" and seen("on_run_complete") == []


# ---- failures: open or closed ------------------------------------------------------------


@pytest.mark.parametrize("on_error", ["allow", "deny"])
def test_a_failing_hook_fails_open_unless_told_to_fail_closed(on_error: str) -> None:
    policy.ANSWERS["pre_tool_use"] = RuntimeError("policy service bug")
    hooks = [python("pre_tool_use", on_error=on_error)]
    engine = new_engine(hooked(CHARGE_THEN_DONE, tools=["charge"], agent=hooks))
    head = run(engine)
    assert head.status == "succeeded"
    (event,) = hook_events(engine, head.run_id)
    assert event["error"] == "RuntimeError: policy service bug"
    (result,) = results(engine, head.run_id)
    if on_error == "allow":
        assert CALLS == [("charge", {"amount": 5})] and result.success
        assert event["decision"] == "allow"
        assert head.warnings == [
            "hook agents.a.hooks[0] (python, pre_tool_use) failed: "
            "RuntimeError: policy service bug; allowed (fail open)"
        ]
    else:
        assert CALLS == [] and not result.success and "policy service bug" in result.content
        assert event["decision"] == "deny"
        assert head.warnings[0].endswith("denied (on_error: deny)")


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        ("yes", "the answer is not a JSON object"),
        ({"decision": "maybe"}, "`decision` must be allow, deny or modify"),
        ({"decision": "modify"}, "a modify answer needs `arguments`"),
        ({"decision": "modify", "arguments": [1]}, "`arguments` must be a JSON object"),
        ({"decision": "deny", "reason": 7}, "`reason` must be a string"),
    ],
)
def test_an_answer_outside_the_protocol_is_a_failure(answer: Any, problem: str) -> None:
    policy.ANSWERS["pre_tool_use"] = answer
    hooks = [python("pre_tool_use", on_error="deny")]
    engine = new_engine(hooked(CHARGE_THEN_DONE, tools=["charge"], agent=hooks))
    head = run(engine)
    (event,) = hook_events(engine, head.run_id)
    assert problem in event["error"] and event["decision"] == "deny" and CALLS == []


def test_a_slow_hook_times_out() -> None:
    hooks = [python("pre_tool_use", "engine_tools.policy:slow", timeout="200ms")]
    engine = new_engine(hooked(CHARGE_THEN_DONE, tools=["charge"], agent=hooks))
    head = run(engine)
    (event,) = hook_events(engine, head.run_id)
    assert event["error"] == "no answer within 0.2s" and CALLS == [("charge", {"amount": 5})]


def test_a_python_hook_outside_the_tools_package_is_never_imported() -> None:
    hooks = [python("pre_tool_use", "os:system", on_error="deny")]
    engine = new_engine(hooked(CHARGE_THEN_DONE, tools=["charge"], agent=hooks))
    head = run(engine)
    (event,) = hook_events(engine, head.run_id)
    assert "outside the tools package" in event["error"] and CALLS == []


# ---- cost ----------------------------------------------------------------------------------


def test_rule_and_python_hooks_import_nothing_for_http() -> None:
    """Off costs nothing: the HTTP client is imported only when an http hook is asked."""
    code = (
        "import sys, asyncio; sys.path.insert(0, 'tests/fixtures/engine')\n"
        "from tests.runtime.engine.hook_kit import hooked, python, rule\n"
        "from tests.runtime.engine.kit import call, new_engine, run\n"
        "script = [{'tool_calls': [call('echo', {'text': 'x'})]}, {'text': 'ok'}]\n"
        "deny = rule(arg='text', op='equals', value='y', then='deny')\n"
        "spec = hooked(script, tools=['echo'], agent=[deny, python('post_tool_use')])\n"
        "assert run(new_engine(spec)).status == 'succeeded'\n"
        "print(sorted(m for m in sys.modules if m in {'httpx', 'runtime.tools.http_tool'}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


# ---- rules that cannot be evaluated (issue 22, point 7) -----------------------------------


def test_a_rule_on_an_argument_that_never_exists_fails_closed_and_says_so() -> None:
    """The attack: `ammount` (a typo) with `then: deny` used to let `amount: 5000` run with
    nothing recorded. Now the rule cannot be evaluated: a failure of the hook, denied (a
    rule's `on_error` is `deny` unless it says otherwise), in the event and the warnings."""
    script = [{"tool_calls": [call("charge", {"amount": 5000}, id="call-1")]}, {"text": "done"}]
    typo = rule(arg="ammount", op="not_in", value=[1, 2, 3], then="deny", reason="too much")
    engine = new_engine(hooked(script, tools=["charge"], agent=[typo]))
    head = run(engine)
    assert CALLS == []  # the charge never ran
    (denied,) = results(engine, head.run_id)
    assert not denied.success and "`ammount` is not in the arguments" in denied.content
    (event,) = hook_events(engine, head.run_id)
    assert event["decision"] == "deny" and "`ammount` is not in the arguments" in event["error"]
    assert any("agents.a.hooks[0] (rule, pre_tool_use) failed" in w for w in head.warnings)
    assert any(w.endswith("denied (on_error: deny)") for w in head.warnings)


def test_a_rule_with_on_error_allow_lets_the_call_through_but_records_the_failure() -> None:
    script = [{"tool_calls": [call("charge", {"amount": 5}, id="call-1")]}, {"text": "done"}]
    optional = {**rule(arg="note", op="contains", value="DROP", then="deny"), "on_error": "allow"}
    engine = new_engine(hooked(script, tools=["charge"], agent=[optional]))
    head = run(engine)
    assert CALLS == [("charge", {"amount": 5})]
    (event,) = hook_events(engine, head.run_id)
    assert event["decision"] == "allow" and "`note` is not in the arguments" in event["error"]
    assert any("allowed (fail open)" in w for w in head.warnings)


def test_a_pre_response_rule_with_an_arg_on_a_text_answer_blocks_instead_of_never_firing() -> None:
    script = [{"text": "The admin password is hunter2."}]
    block = rule("pre_response", arg="secret", op="contains", value="hunter2", then="deny")
    engine = new_engine(hooked(script, tools=[], agent=[block]))
    head = run(engine)
    result = engine.result(head.run_id)
    assert result["result"].startswith("The response was blocked by policy: the rule hook failed")
    (event,) = hook_events(engine, head.run_id)
    assert event["decision"] == "deny" and "a text" in event["error"]


# ---- an approver's edit goes through the hooks again (issue 22, point 8) ------------------


def test_an_approvers_edit_is_checked_by_the_pre_tool_use_hooks_again() -> None:
    """The attack: a rule allows amounts 1-3; the call asks for 2 and waits for a person,
    who edits it to 5000. The edit is checked like the model's arguments were: denied."""
    script = [{"tool_calls": [call("charge", {"amount": 2}, id="call-1")]}, {"text": "done"}]
    limit = rule(arg="amount", op="in", value=[1, 2, 3], **{"else": "deny"}, reason="1-3 only")
    rules = [{"tools": ["charge"], "decisions": ["approve", "edit"]}]
    engine = new_engine(hooked(script, tools=["charge"], agent=[limit], approval=rules))
    head = run(engine)
    assert head.status == "awaiting_approval"
    engine.decide(head.run_id, approved=True, tool_call_id="call-1", edited_inputs={"amount": 5000})
    head = asyncio.run(engine.advance(head.run_id))
    assert head.status == "succeeded" and CALLS == []  # 5000 never ran
    (denied,) = results(engine, head.run_id)
    assert not denied.success and "1-3 only" in denied.content
    assert denied.inputs == {"amount": 5000}
    events = hook_events(engine, head.run_id)
    assert [(e["decision"], e.get("after_edit", False)) for e in events] == [
        ("allow", False),
        ("deny", True),
    ]
    types = event_types(engine, head.run_id)
    assert types.index("approval_decided") < types.index("tool_result")
    assert head.hook_decisions == {} and head.decisions == {}


def test_an_edit_the_hooks_allow_runs_and_an_asked_hook_sees_the_edit_once() -> None:
    hooks = [python("pre_tool_use", "engine_tools.policy:double")]
    rules = [{"tools": ["charge"], "decisions": ["approve", "edit"]}]
    engine = new_engine(hooked(CHARGE_THEN_DONE, tools=["charge"], agent=hooks, approval=rules))
    head = run(engine)
    assert [p.inputs for p in head.pending_approval] == [{"amount": 10}]
    engine.decide(head.run_id, approved=True, tool_call_id="call-1", edited_inputs={"amount": 3})
    head = asyncio.run(engine.advance(head.run_id))
    # The hook is asked about the edit too (it doubles it, as it doubled the model's).
    assert CALLS == [("charge", {"amount": 6})]
    asked = [p["tool"]["arguments"] for p in seen("pre_tool_use")]
    assert asked == [{"amount": 5}, {"amount": 3}]
    assert head.hook_decisions == {}


@pytest.mark.parametrize("after", [True, False], ids=["after-commit", "before-commit"])
def test_a_crash_around_the_edits_hook_decision_never_asks_twice_about_it(after: bool) -> None:
    """The edit's chain is durable like the first one: its answer is committed under a key
    of its own, so a crash after that commit resumes with it (the hook is not asked about the
    edit again), and a crash before it asks once more, as for any uncommitted decision."""
    from runtime.clock import FakeClock
    from runtime.engine.loop import Engine
    from tests.runtime.engine.test_hooks_http import CrashingStore, SimulatedCrash

    hooks = [python("pre_tool_use", "engine_tools.policy:double")]
    rules = [{"tools": ["charge"], "decisions": ["approve", "edit"]}]
    spec = hooked(CHARGE_THEN_DONE, tools=["charge"], agent=hooks, approval=rules)
    store, clock = MemoryStore(), FakeClock()
    head = asyncio.run(Engine(spec, store, clock=clock).run("a", "go"))
    Engine(spec, store, clock=clock).decide(
        head.run_id, approved=True, tool_call_id="call-1", edited_inputs={"amount": 3}
    )
    CALLS.clear()
    dying = Engine(spec, CrashingStore(store, "call-1@edited", after), clock=clock)  # type: ignore[arg-type]
    with pytest.raises(SimulatedCrash):
        asyncio.run(dying.advance(head.run_id))
    assert CALLS == []  # it died before the tool ran
    clock.advance(dying.lease_seconds + 1)
    fresh = Engine(spec, store, clock=clock)
    done = asyncio.run(fresh.advance(head.run_id))
    assert done.status == "succeeded" and CALLS == [("charge", {"amount": 6})]
    asked = [p["tool"]["arguments"] for p in seen("pre_tool_use")]
    assert asked == [{"amount": 5}, {"amount": 3}] + ([] if after else [{"amount": 3}])
    edits = [e for e in hook_events(fresh, head.run_id) if e.get("after_edit")]
    assert len(edits) == 1 and edits[0]["decision"] == "modify"
    assert done.hook_decisions == {}
