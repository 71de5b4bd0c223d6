"""The database tools inside a run: a model's query and write reach the SQLite file through
the loop, a refused statement or a missing file is answered to the model (never a crash),
and a write is `at_most_once`."""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
import sys
from pathlib import Path

import pytest

from runtime.spec import AgentfnSpec
from tests.helpers import ROOT
from tests.runtime.engine.kit import call, new_engine


def _spec(script: list[dict[str, object]], path: str) -> AgentfnSpec:
    return AgentfnSpec.model_validate(
        {
            "version": 1,
            "tools_package": "db_project_tools",
            "models": {"m": {"provider": "scripted", "script": script}},
            "databases": {"shop": {"kind": "sqlite", "path": path}},
            "agents": {
                "a": {
                    "description": "d",
                    "model": "m",
                    "tools": ["builtin:database_query", "builtin:database_write"],
                    "databases": {"shop": {"read": ["orders", "customers"], "write": ["orders"]}},
                }
            },
        }
    )


@pytest.fixture
def shop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project of its own: a tools package (where relative paths start) and a copy of the
    demo database."""
    (tmp_path / "db_project_tools").mkdir()
    (tmp_path / "db_project_tools" / "__init__.py").write_text("")
    (tmp_path / "data").mkdir()
    shutil.copy(ROOT / "data" / "shop.db", tmp_path / "data" / "shop.db")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "db_project_tools", raising=False)  # this project's
    return tmp_path / "data" / "shop.db"


def test_a_query_and_a_write_through_the_loop(shop: Path) -> None:
    script = [
        {
            "tool_calls": [
                call(
                    "database_query", {"sql": "SELECT id, status FROM orders WHERE id = 'ORD-1002'"}
                )
            ]
        },
        {"tool_calls": [call("database_query", {"sql": "SELECT * FROM staff_notes"})]},
        {
            "tool_calls": [
                call(
                    "database_write",
                    {
                        "operation": "update",
                        "table": "orders",
                        "values": {"status": "refunded"},
                        "where": {"id": "ORD-1002"},
                    },
                )
            ]
        },
        {"text": "done"},
    ]
    engine = new_engine(_spec(script, "data/shop.db"))
    head = asyncio.run(engine.run("a", "go"))
    assert head.status == "succeeded"
    calls = engine.result(head.run_id)["tool_calls"]
    assert calls[0]["success"] and calls[0]["output"]["rows"] == [["ORD-1002", "shipped"]]
    assert not calls[1]["success"] and "staff_notes" in str(calls[1]["output"])
    assert calls[2]["success"] and calls[2]["output"]["rows"] == 1
    with sqlite3.connect(shop) as db:
        assert db.execute("SELECT status FROM orders WHERE id = 'ORD-1002'").fetchone() == (
            "refunded",
        )
    tools = engine._tools("a")
    assert tools["database_write"].effect == "at_most_once"
    assert tools["database_query"].effect == "read_only"


def test_a_missing_database_file_is_answered_not_crashed_on(shop: Path) -> None:
    script = [
        {"tool_calls": [call("database_query", {"sql": "SELECT * FROM orders"})]},
        {"text": "sorry"},
    ]
    engine = new_engine(_spec(script, "data/gone.db"))
    head = asyncio.run(engine.run("a", "go"))
    assert head.status == "succeeded"
    (only,) = engine.result(head.run_id)["tool_calls"]
    assert not only["success"] and "missing" in str(only["output"])
