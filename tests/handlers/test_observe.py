"""Logs and metrics of the deployed functions, driven the way Lambda drives them.

The step handler of an agent whose HTTP tool sends a secret (the server echoes it back, so
the tool's output holds it) logs through the Powertools Logger at DEBUG: its lines appear,
as JSON, each with the run's keys; the secret (a canary) is in none of them, nor in any
line of the root logger (Lambda's own handler), nor in the metrics printed at the end of
the invocation. A sweep counts what it did.
"""

from __future__ import annotations

import io
import json
import logging
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

import handlers.step
import handlers.sweeper
import runtime.secrets as secrets_module
from handlers import observe
from runtime.clock import FakeClock
from runtime.engine.loop import Engine
from runtime.service import RunService
from runtime.spec import AgentfnSpec
from runtime.stack import Stack
from runtime.store.memory import MemoryStore
from tests.runtime.tools.local_http import serve

STACK = "agentfn-test"


class FakeContext:
    function_name = "agentfn-abc-a"
    aws_request_id = "req-7"

    def get_remaining_time_in_millis(self) -> int:
        return 300_000


@dataclass
class Captured:
    powertools: io.StringIO  # what the functions' Logger writes (its JSON lines)
    root: io.StringIO  # what Lambda's own handler on the root logger would write

    def lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.powertools.getvalue().splitlines()]


@pytest.fixture
def captured(monkeypatch: pytest.MonkeyPatch) -> Iterator[Captured]:
    """A fresh container at DEBUG: the Logger writes to a buffer, and a handler on the root
    logger (there before the Logger, as Lambda's is) catches everything else."""
    monkeypatch.setenv("POWERTOOLS_LOG_LEVEL", "DEBUG")
    monkeypatch.setenv(observe.STACK_ENV, STACK)
    monkeypatch.delenv("AWS_LAMBDA_LOG_LEVEL", raising=False)
    secrets_module.forget_all()
    observe.reset()
    root = logging.getLogger()
    own, level = logging.StreamHandler(io.StringIO()), root.level
    own.setLevel(logging.DEBUG)
    root.addHandler(own)
    root.setLevel(logging.DEBUG)
    stream = io.StringIO()
    observe.logger(stream=stream)
    try:
        yield Captured(stream, own.stream)
    finally:
        root.removeHandler(own)
        root.setLevel(level)
        for handler in root.handlers:  # Powertools' de-duplication filter on the root's
            handler.filters = [f for f in handler.filters if "Suppress" not in type(f).__name__]
        observe.reset()
        logging.getLogger(observe.LOGGER_NAME).setLevel(logging.NOTSET)
        handlers.step.configure(None)
        secrets_module.forget_all()


def _spec(url: str) -> AgentfnSpec:
    return AgentfnSpec.model_validate(
        {
            "version": 1,
            "secrets": {"canary": {}},
            "models": {
                "m": {
                    "provider": "scripted",
                    "script": [
                        {"tool_calls": [{"name": "crm", "arguments": {}, "id": "call-1"}]},
                        {"text": "done"},
                    ],
                }
            },
            "tools": {
                "crm": {
                    "type": "http",
                    "url": f"{url}/echo-headers",
                    "description": "Echoes the request's headers.",
                    "effect": "read_only",
                    "headers": {"Authorization": "Bearer ${secret:canary}"},
                    "allow_private": ["127.0.0.1"],
                }
            },
            "agents": {"a": {"description": "d", "model": "m", "tools": ["crm"]}},
        }
    )


def _service(spec: AgentfnSpec, store: MemoryStore) -> RunService:
    """As build_service_from_environment makes it: the container's metrics as listener."""
    engine = Engine(spec, store, clock=FakeClock(), listener=observe.listener(store), scope="a")
    return RunService(engine, Stack(), agent="a")


def test_a_step_logs_json_with_the_run_keys_and_never_the_secret(
    captured: Captured, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    canary = f"canary-{uuid.uuid4().hex}"
    monkeypatch.setenv("AGENTFN_SECRET_CANARY", canary)
    store = MemoryStore()
    with serve() as server:
        service = _service(_spec(server.url), store)
        head = service.engine.start("a", "look it up", session_id="sess-1")  # the API's part
        handlers.step.configure(service)
        answer = handlers.step.handler({"action": "advance", "run_id": head.run_id}, FakeContext())
        # A careless line (a tool's, a library's) would print it: the handlers redact it.
        logging.getLogger("agentfn.tools.crm").debug("sent Authorization: Bearer %s", canary)
        logging.getLogger("httpx").debug("headers %s", {"authorization": f"Bearer {canary}"})
    assert answer["status"] == "succeeded"
    assert server.requests[0].headers["authorization"] == f"Bearer {canary}"  # it was sent
    tool_result = next(e for e in store.list_events(head.run_id) if e.type == "tool_result")
    assert "[redacted]" in tool_result.data["output"]  # and came back in the tool's output

    lines = captured.lines()
    assert lines, "the step handler's lines must appear"
    levels = {line["level"] for line in lines}
    assert {"DEBUG", "INFO"} <= levels
    task = next(line for line in lines if line["message"] == "task advance: run succeeded")
    assert task["level"] == "INFO" and task["service"] == "agentfn"
    assert task["cold_start"] is True and task["function_request_id"] == "req-7"
    during = [line for line in lines if not line["message"].startswith("sent Authorization")]
    for line in during:  # every line written while the run was handled carries its keys
        assert line["run_id"] == head.run_id, line
        assert line["agent"] == "a" and line["session_id"] == "sess-1", line
        assert isinstance(line["step"], int), line
    steps = {line["step"] for line in lines if line["message"].startswith("model_response")}
    assert steps == {1, 2}
    finished = next(line for line in lines if line["message"].startswith("run_completed"))
    assert finished["level"] == "INFO" and finished["event_data"]["turns_used"] == 2

    emf = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert any("RunsSucceeded" in document for document in emf)  # flushed at the end

    everything = "\n".join(
        [captured.powertools.getvalue(), captured.root.getvalue(), json.dumps(emf)]
    )
    for spelling in (canary, json.dumps(canary)[1:-1], canary.encode().hex()):
        assert spelling not in everything
    assert "sent Authorization: Bearer [redacted]" in captured.powertools.getvalue()
    assert "[redacted]" in captured.root.getvalue()  # the library's line, on the root's


def test_log_keys_go_when_the_invocation_ends_and_come_back_with_the_next(
    captured: Captured, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = AgentfnSpec.model_validate(
        {
            "version": 1,
            "models": {"m": {"provider": "scripted", "script": [{"text": "done"}]}},
            "agents": {"a": {"description": "d", "model": "m"}},
        }
    )
    service = _service(spec, MemoryStore())
    handlers.step.configure(service)
    first = service.engine.start("a", "one").run_id
    handlers.step.handler({"action": "advance", "run_id": first}, FakeContext())
    logging.getLogger("agentfn.test").info("between invocations")
    second = service.engine.start("a", "two").run_id
    handlers.step.handler({"action": "advance", "run_id": second}, None)
    lines = captured.lines()
    between = next(line for line in lines if line["message"] == "between invocations")
    assert "run_id" not in between and "session_id" not in between
    tasks = [line for line in lines if line["message"].startswith("task advance")]
    assert [t["run_id"] for t in tasks] == [first, second]
    assert [t["cold_start"] for t in tasks] == [True, False]
    capsys.readouterr()


def test_info_is_the_default_and_debug_lines_stay_out(
    captured: Captured, monkeypatch: pytest.MonkeyPatch
) -> None:
    observe.reset()
    monkeypatch.setenv("POWERTOOLS_LOG_LEVEL", "INFO")
    stream = io.StringIO()
    observe.logger(stream=stream)
    captured.powertools = stream
    spec = AgentfnSpec.model_validate(
        {
            "version": 1,
            "models": {"m": {"provider": "scripted", "script": [{"text": "done"}]}},
            "agents": {"a": {"description": "d", "model": "m"}},
        }
    )
    service = _service(spec, MemoryStore())
    handlers.step.configure(service)
    run_id = service.engine.start("a", "one").run_id
    handlers.step.handler({"action": "advance", "run_id": run_id}, FakeContext())
    levels = [line["level"] for line in captured.lines()]
    assert levels and set(levels) == {"INFO"}


def test_the_sweeper_counts_what_it_did(
    captured: Captured, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    class Report:
        def as_dict(self) -> dict[str, Any]:
            return {"checked": 2, "healthy": 1, "resumed": ["r"], "resent": [], "failed": []}

    class FakeSweeper:
        def sweep(self) -> Report:
            return Report()

    monkeypatch.setattr(handlers.sweeper, "_sweeper", FakeSweeper())
    observe.listener()  # the container's metrics, as build_service_from_environment makes
    assert handlers.sweeper.handler({}, FakeContext())["checked"] == 2
    (document,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert document["service"] == STACK and document["RunsResumed"] == [1.0]
    assert document["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["service"]]
