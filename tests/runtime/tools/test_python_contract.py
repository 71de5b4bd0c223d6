"""The Python tool contract of docs/spec.md ("Python tools"), rule by rule, through real runs:
a tools package written to disk, a scripted model calling it, the engine answering."""

from __future__ import annotations

import asyncio
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from runtime.spec import AgentfnSpec
from tests.runtime.engine.kit import call, new_engine

PACKAGE = "contract_tools"

TOOLS = """
from __future__ import annotations

import asyncio
import dataclasses
import datetime

from pydantic import BaseModel

from runtime.tools.base import ToolError
from runtime.tools.python_tool import CallContext

SEEN: list[object] = []


def add(a: int, b: int = 1) -> int:
    return a + b


class Refund(BaseModel):
    order_id: str
    amount: float


class Receipt(BaseModel):
    refund_id: str
    amount: float


@dataclasses.dataclass
class Stamp:
    at: datetime.date


def refund(refund: Refund, call: CallContext) -> Receipt:
    SEEN.append((refund, call))
    return Receipt(refund_id="RF-" + refund.order_id, amount=refund.amount)


def stamp() -> dict[str, object]:
    return {"stamp": Stamp(datetime.date(2026, 11, 26))}


def text() -> str:
    return "plain words"


def broken(n: int) -> int:
    raise KeyError(f"no item {n}")


def refused() -> str:
    raise ToolError("the order is closed")


async def slow(seconds: float) -> str:
    await asyncio.sleep(seconds)
    return "late"
"""


@pytest.fixture
def tools_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    folder = tmp_path / PACKAGE
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    (folder / "contract.py").write_text(textwrap.dedent(TOOLS))
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [m for m in sys.modules if m.split(".")[0] == PACKAGE]:
        monkeypatch.delitem(sys.modules, name)
    import importlib

    return importlib.import_module(f"{PACKAGE}.contract")


def _spec(script: list[dict[str, Any]], tools: list[str], **agent: Any) -> AgentfnSpec:
    declared = {
        name: {"type": "python", "handler": f"{PACKAGE}.contract:{name}", "description": name}
        for name in tools
    }
    return AgentfnSpec.model_validate(
        {
            "version": 1,
            "tools_package": PACKAGE,
            "models": {"m": {"provider": "scripted", "script": [*script, {"text": "done"}]}},
            "tools": declared,
            "agents": {"a": {"description": "d", "model": "m", "tools": tools, **agent}},
        }
    )


def _calls(spec: AgentfnSpec) -> list[dict[str, Any]]:
    engine = new_engine(spec)
    head = asyncio.run(engine.run("a", "go"))
    assert head.status == "succeeded", engine.result(head.run_id)
    return list(engine.result(head.run_id)["tool_calls"])


def test_keyword_arguments_and_a_schema_from_the_type_hints(tools_package: Any) -> None:
    spec = _spec(
        [{"tool_calls": [call("add", {"a": 2, "b": 3}), call("add", {"a": "two"})]}], ["add"]
    )
    engine = new_engine(spec)
    schema = engine._tools("a")["add"].input_schema
    assert schema["properties"] == {"a": {"type": "integer"}, "b": {"type": "integer"}}
    assert schema["required"] == ["a"] and schema["additionalProperties"] is False
    good, bad = _calls(spec)
    assert good["success"] and good["output"] == 5
    # Arguments that do not match the schema never reach the function.
    assert not bad["success"] and "invalid arguments for add" in bad["output"]["error"]


def test_a_pydantic_parameter_a_model_result_and_the_call_context(tools_package: Any) -> None:
    spec = _spec(
        [{"tool_calls": [call("refund", {"refund": {"order_id": "O-1", "amount": 5.5}})]}],
        ["refund"],
    )
    schema = new_engine(spec)._tools("a")["refund"].input_schema
    assert list(schema["properties"]) == ["refund"]  # the context is not the model's to give
    assert schema["properties"]["refund"]["required"] == ["order_id", "amount"]
    [result] = _calls(spec)
    assert result["output"] == {"refund_id": "RF-O-1", "amount": 5.5}
    [(refund, context)] = tools_package.SEEN
    assert type(refund).__name__ == "Refund" and refund.amount == 5.5
    assert context.agent == "a" and context.call_id == result["tool_call_id"]
    assert context.idempotency_key == f"{context.run_id}:{context.call_id}"


def test_return_values_dataclasses_dates_and_text(tools_package: Any) -> None:
    spec = _spec([{"tool_calls": [call("stamp", {}), call("text", {})]}], ["stamp", "text"])
    stamp, text = _calls(spec)
    assert stamp["output"] == {"stamp": {"at": "2026-11-26"}}
    assert text["output"] == "plain words"


def test_exceptions_are_the_models_to_read_and_the_run_goes_on(tools_package: Any) -> None:
    spec = _spec(
        [{"tool_calls": [call("broken", {"n": 7}), call("refused", {})]}], ["broken", "refused"]
    )
    broken, refused = _calls(spec)
    assert not broken["success"] and broken["output"]["error"] == "KeyError: 'no item 7'"
    assert not refused["success"] and refused["output"]["error"] == "the order is closed"


def test_an_async_tool_over_its_timeout_is_answered_timed_out(tools_package: Any) -> None:
    spec = _spec([{"tool_calls": [call("slow", {"seconds": 5})]}], ["slow"], tool_timeout="200ms")
    [slow] = _calls(spec)
    assert not slow["success"] and "timed out after 0.2s" in slow["output"]["error"]


def test_a_module_that_does_not_import_fails_the_run_tool_import(
    tools_package: Any, tmp_path: Path
) -> None:
    (tmp_path / PACKAGE / "bad.py").write_text("import does_not_exist_anywhere\n")
    spec = AgentfnSpec.model_validate(
        {
            "version": 1,
            "tools_package": PACKAGE,
            "models": {"m": {"provider": "scripted", "script": [{"text": "x"}]}},
            "tools": {"bad": {"type": "python", "handler": f"{PACKAGE}.bad:f", "description": "d"}},
            "agents": {"a": {"description": "d", "model": "m", "tools": ["bad"]}},
        }
    )
    engine = new_engine(spec)
    head = asyncio.run(engine.run("a", "go"))
    result = engine.result(head.run_id)
    assert result["status"] == "failed" and result["error_code"] == "TOOL_IMPORT"
    message = result["error_message"]
    assert f"{PACKAGE}.bad:f" in message and "does_not_exist_anywhere" in message
    assert str(tmp_path / PACKAGE / "bad.py") in message and "line 1" in message
