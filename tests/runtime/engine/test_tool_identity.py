"""Approval rules match a tool's identity (server + its own tool name, or the declared
name), never a name parsed back from what the model sent: sanitised, `__`-laden and hashed
names are all gated."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

from runtime.spec import AgentfnSpec
from runtime.tools.mcp import tool_name
from tests.runtime.engine.kit import CALLS, TOOLS, new_engine

SERVER = str(Path(__file__).resolve().parents[2] / "fixtures" / "mcp" / "odd_names_server.py")
LONG_NAME = "delete_every_record_in_the_production_database_without_asking_anyone"


def _spec(
    server: str, rule: str, called: str, *, declared: dict[str, Any] | None = None
) -> AgentfnSpec:
    script = [{"tool_calls": [{"name": called, "arguments": _args(called)}]}, {"text": "done"}]
    tools = [f"mcp:{server}", *(declared or {})]
    return AgentfnSpec.model_validate(
        {
            "version": 1,
            "tools_package": "engine_tools",
            "models": {"m": {"provider": "scripted", "script": script}},
            "mcp_servers": {
                server: {"transport": "stdio", "command": sys.executable, "args": [SERVER]}
            },
            "tools": declared or {},
            "agents": {
                "a": {
                    "description": "d",
                    "model": "m",
                    "tools": tools,
                    "approval": [{"tools": [rule]}],
                }
            },
        }
    )


def _args(called: str) -> dict[str, Any]:
    if "files" in called:
        return {"path": "/etc/x"}
    return {"text": "hi"} if called == "mcp__odd__wipe" else {}


@pytest.mark.parametrize(
    ("server", "rule", "called"),
    [
        # A server name with `__`: reverse-parsing `mcp__ops__prod__wipe` found server "ops".
        ("ops__prod", "mcp:ops__prod/wipe", "mcp__ops__prod__wipe"),
        # A tool name with a character the model-facing name replaces.
        ("danger", "mcp:danger/files.delete", "mcp__danger__files_delete"),
        # A name long enough to be shortened with a hash.
        ("danger", f"mcp:danger/{LONG_NAME}", tool_name("danger", LONG_NAME)),
        # Globs match identities too.
        ("danger", "mcp:danger/files.*", "mcp__danger__files_delete"),
    ],
)
def test_approval_rules_gate_mcp_tools_by_their_real_identity(
    server: str, rule: str, called: str
) -> None:
    engine = new_engine(_spec(server, rule, called))
    head = asyncio.run(engine.run("a", "clean up"))
    assert head.status == "awaiting_approval", engine.result(head.run_id)
    assert [p.tool_name for p in head.pending_approval] == [called]
    assert engine.result(head.run_id)["tool_calls"] == []  # nothing ran unapproved


def test_a_declared_tool_named_like_an_mcp_tool_neither_shadows_nor_is_gated_by_it() -> None:
    declared = {"mcp__odd__wipe": {**TOOLS["echo"], "description": "A harmless echo."}}
    spec = _spec("odd", "mcp:odd/wipe", "mcp__odd__wipe", declared=declared)
    engine = new_engine(spec)
    CALLS.clear()
    head = asyncio.run(engine.run("a", "echo please", None))
    # The model's `mcp__odd__wipe` is the declared echo: it runs, ungated.
    assert head.status == "succeeded"
    assert [c[0] for c in CALLS] == ["echo"]
    offered = {name: tool.reference for name, tool in engine._tools("a").items()}
    assert offered["mcp__odd__wipe"] == "mcp__odd__wipe"
    renamed = [name for name, ref in offered.items() if ref == "mcp:odd/wipe"]
    assert renamed and renamed[0] != "mcp__odd__wipe"  # the MCP tool got its own name
