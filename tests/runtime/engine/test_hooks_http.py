"""http hooks against a real server on loopback: the payload and headers they send, answers
applied, decisions that survive a crash without asking again, failing open or closed, the
SSRF guard, credentials on redirects and secrets kept out of everything committed."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from runtime.clock import FakeClock
from runtime.engine.loop import Engine
from runtime.store.base import Commit
from runtime.store.memory import MemoryStore
from runtime.structs import encode
from tests.runtime.engine.hook_kit import event_types, hook_events, hooked, results
from tests.runtime.engine.hook_server import HookServer, allow, hook_server
from tests.runtime.engine.kit import CALLS, call, new_engine, run

CHARGE = [{"tool_calls": [call("charge", {"amount": 5}, id="call-1")]}, {"text": "done"}]
TOKEN = "tok-s3cret-value-123"


@pytest.fixture
def server() -> Iterator[HookServer]:
    with hook_server() as running:
        yield running


@pytest.fixture(autouse=True)
def _token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTFN_SECRET_POLICY_TOKEN", TOKEN)


def http(server: HookServer, event: str, path: str = "/hook", **fields: Any) -> dict[str, Any]:
    return {
        "event": event,
        "type": "http",
        "url": server.url + path,
        "allow_private": ["127.0.0.1"],
        "headers": {"Authorization": "Bearer ${secret:policy-token}"},
        **fields,
    }


def doubling(path: str, payload: Any) -> tuple[int, Any]:
    arguments = dict(payload["tool"]["arguments"])
    arguments["amount"] *= 2
    return 200, {"decision": "modify", "arguments": arguments, "reason": "doubled"}


def test_an_http_hook_is_posted_the_event_and_its_answer_applies(server: HookServer) -> None:
    server.answer = doubling
    spec = hooked(
        CHARGE, tools=["charge"], agent=[http(server, "pre_tool_use")], secrets=["policy-token"]
    )
    engine = new_engine(spec)
    head = run(engine)
    assert head.status == "succeeded" and CALLS == [("charge", {"amount": 10})]
    (sent,) = server.received
    assert sent.path == "/hook"
    assert sent.payload == {
        "event": "pre_tool_use",
        "hook": "agents.a.hooks[0]",
        "agent": "a",
        "run_id": head.run_id,
        "session_id": head.session_id,
        "tool": {
            "name": "charge",
            "reference": "charge",
            "call_id": "call-1",
            "arguments": {"amount": 5},
        },
    }
    assert sent.headers["authorization"] == f"Bearer {TOKEN}"  # resolved at run time
    assert sent.headers["content-type"] == "application/json"
    assert sent.headers["user-agent"] == "agentfn"
    key = f"{head.run_id}:pre_tool_use:call-1:agents.a.hooks[0]"
    assert sent.headers["idempotency-key"] == key
    (event,) = hook_events(engine, head.run_id)
    assert (event["type"], event["decision"], event["reason"]) == ("http", "modify", "doubled")
    assert results(engine, head.run_id)[0].inputs == {"amount": 10}


class CrashingStore:
    """A MemoryStore that dies right after (or before) the first commit that records the
    hooks' decision for `key` on the run head."""

    def __init__(self, inner: MemoryStore, key: str, after: bool):
        self.inner, self.key, self.after = inner, key, after
        self.blobs = inner.blobs
        self.crashed = False

    def commit(self, commit: Commit) -> None:
        deciding = not self.crashed and self.key in commit.head.hook_decisions
        if deciding and not self.after:
            self.crashed = True
            raise SimulatedCrash
        self.inner.commit(commit)
        if deciding:
            self.crashed = True
            raise SimulatedCrash

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class SimulatedCrash(BaseException):
    """A process dying: nothing in the engine can swallow it."""


def _crash_then_resume(spec: Any, key: str, after: bool) -> tuple[Engine, str]:
    store = MemoryStore()
    clock = FakeClock()
    CALLS.clear()
    dying = Engine(spec, CrashingStore(store, key, after), clock=clock)  # type: ignore[arg-type]
    run_id = dying.start("a", "go").run_id
    with pytest.raises(SimulatedCrash):
        asyncio.run(dying.advance(run_id))
    clock.advance(dying.lease_seconds + 1)  # the dead worker's lease runs out
    fresh = Engine(spec, store, clock=clock)  # a new process: no warm state
    asyncio.run(fresh.advance(run_id))
    return fresh, run_id


@pytest.mark.parametrize("after", [True, False], ids=["after-commit", "before-commit"])
def test_a_committed_decision_is_never_asked_again_after_a_crash(
    server: HookServer, after: bool
) -> None:
    server.answer = doubling
    spec = hooked(
        CHARGE, tools=["charge"], agent=[http(server, "pre_tool_use")], secrets=["policy-token"]
    )
    engine, run_id = _crash_then_resume(spec, "call-1", after)
    head = engine.store.load_head(run_id)
    assert head.status == "succeeded"
    assert CALLS == [("charge", {"amount": 10})]  # run once, with the decided arguments
    # Committed: the resumed run applies it. Not yet committed: it was never taken, so the
    # hook is asked again, once.
    assert len(server.received) == (1 if after else 2)
    assert len(hook_events(engine, run_id)) == 1  # one decision recorded, either way


def test_on_run_start_is_not_asked_again_after_a_crash(server: HookServer) -> None:
    spec = hooked(
        CHARGE, tools=["charge"], agent=[http(server, "on_run_start")], secrets=["policy-token"]
    )
    engine, run_id = _crash_then_resume(spec, "@run_start", after=True)
    assert engine.store.load_head(run_id).status == "succeeded"
    assert (
        len(server.asked("on_run_start")) == 1 and server.asked("on_run_start")[0]["input"] == "go"
    )


def test_on_run_start_denial_over_http(server: HookServer) -> None:
    server.answer = lambda path, payload: (200, {"decision": "deny", "reason": "caller blocked"})
    spec = hooked(
        CHARGE, tools=["charge"], top=[http(server, "on_run_start")], secrets=["policy-token"]
    )
    engine = new_engine(spec)
    head = run(engine)
    assert head.status == "failed" and head.error_code == "HOOK_DENIED"
    assert head.error_message == "an on_run_start hook denied the run: caller blocked"
    assert CALLS == []


@pytest.mark.parametrize(
    ("path", "error"),
    [
        ("/status/500", "answered HTTP 500"),
        ("/slow", "no answer within 0.3s"),
    ],
)
@pytest.mark.parametrize("on_error", ["allow", "deny"])
def test_fail_open_by_default_and_closed_with_on_error_deny(
    server: HookServer, path: str, error: str, on_error: str
) -> None:
    hook = http(server, "pre_tool_use", path, timeout="300ms", on_error=on_error)
    engine = new_engine(hooked(CHARGE, tools=["charge"], agent=[hook], secrets=["policy-token"]))
    head = run(engine)
    assert head.status == "succeeded"
    (event,) = hook_events(engine, head.run_id)
    assert error in event["error"]
    (result,) = results(engine, head.run_id)
    if on_error == "allow":
        assert CALLS == [("charge", {"amount": 5})] and result.success
        assert head.warnings[0].endswith("allowed (fail open)")
    else:
        assert CALLS == [] and not result.success and error in result.content
        assert head.warnings[0].endswith("denied (on_error: deny)")


@pytest.mark.parametrize(
    ("answer", "outcome"),
    [
        ((204, b""), "allow"),
        ((200, b""), "answered an empty body"),
        ((200, b"yes"), "the answer is not JSON"),
        ((200, {"decision": "perhaps"}), "`decision` must be allow, deny or modify"),
    ],
)
def test_what_an_http_hook_may_answer(server: HookServer, answer: Any, outcome: str) -> None:
    server.answer = lambda path, payload: answer
    hook = http(server, "pre_tool_use", on_error="deny")
    engine = new_engine(hooked(CHARGE, tools=["charge"], agent=[hook], secrets=["policy-token"]))
    head = run(engine)
    (event,) = hook_events(engine, head.run_id)
    if outcome == "allow":
        assert event["decision"] == "allow" and "error" not in event and CALLS
    else:
        assert outcome in event["error"] and event["decision"] == "deny" and CALLS == []


def test_the_ssrf_guard_refuses_a_private_address_not_allowlisted(server: HookServer) -> None:
    hook = http(server, "pre_tool_use", allow_private=[])
    engine = new_engine(hooked(CHARGE, tools=["charge"], agent=[hook], secrets=["policy-token"]))
    head = run(engine)
    assert server.received == []
    (event,) = hook_events(engine, head.run_id)
    assert "refused: 127.0.0.1 is a loopback address" in event["error"]
    assert CALLS == [("charge", {"amount": 5})]  # fail open, visibly
    assert "refused" in head.warnings[0]


def test_credentials_never_follow_a_redirect_to_another_origin(server: HookServer) -> None:
    with hook_server() as other:
        target = other.url + "/elsewhere"
        server.answer = lambda path, payload: (307, {"location": target})
        hook = http(server, "pre_tool_use", headers={"X-Policy-Key": "${secret:policy-token}"})
        engine = new_engine(
            hooked(CHARGE, tools=["charge"], agent=[hook], secrets=["policy-token"])
        )
        head = run(engine)
        assert server.received[0].headers["x-policy-key"] == TOKEN
        (followed,) = other.received
        assert (
            "x-policy-key" not in followed.headers and followed.payload["event"] == "pre_tool_use"
        )
        assert (
            head.status == "succeeded"
            and hook_events(engine, head.run_id)[0]["decision"] == "allow"
        )


def test_a_secret_echoed_by_the_hook_is_redacted_from_everything_committed(
    server: HookServer,
) -> None:
    def echo_back(path: str, payload: Any) -> tuple[int, Any]:
        if payload["event"] == "pre_tool_use":
            return 200, {"decision": "deny", "reason": f"your token {TOKEN} is wrong"}
        return 500, {"error": f"boom {TOKEN}"}

    server.answer = echo_back
    hooks = [http(server, "pre_tool_use"), http(server, "on_run_complete")]
    engine = new_engine(hooked(CHARGE, tools=["charge"], agent=hooks, secrets=["policy-token"]))
    head = run(engine)
    assert server.received[0].headers["authorization"] == f"Bearer {TOKEN}"
    head = engine.store.load_head(head.run_id)
    committed = [
        encode(head),
        *(encode(m) for m in engine.store.load_messages(head)),
        *(encode(e) for e in engine.store.list_events(head.run_id, limit=1000)),
        str(engine.result(head.run_id)),
    ]
    assert all(TOKEN not in text for text in committed)
    assert "your token" in results(engine, head.run_id)[0].content  # the rest is kept


def test_post_tool_use_and_pre_response_over_http(server: HookServer) -> None:
    def answer(path: str, payload: Any) -> tuple[int, Any]:
        if payload["event"] == "post_tool_use":
            return 200, {"decision": "modify", "result": {"charged": "[redacted]"}}
        if payload["event"] == "pre_response":
            return 200, {"decision": "deny", "reason": "not today"}
        return allow(path, payload)

    server.answer = answer
    hooks = [http(server, "post_tool_use"), http(server, "pre_response")]
    engine = new_engine(hooked(CHARGE, tools=["charge"], agent=hooks, secrets=["policy-token"]))
    head = run(engine)
    (result,) = results(engine, head.run_id)
    assert (
        result.output == {"charged": "[redacted]"} and result.content == '{"charged":"[redacted]"}'
    )
    assert server.asked("post_tool_use")[0]["result"]["output"] == {"charged": 5}
    assert server.asked("pre_response")[0]["response"] == "done"
    assert engine.result(head.run_id)["result"] == "The response was blocked by policy: not today"
    assert "hook_decision" in event_types(engine, head.run_id)
