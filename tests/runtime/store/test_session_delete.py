"""Deleting a session on the memory store (the DynamoDB store is exercised through the API
on moto, tests/handlers/test_run_behaviours_api.py): every item of its runs and its
offloaded bodies go, another session's stay."""

from __future__ import annotations

import asyncio

from runtime.store.memory import MemoryStore
from tests.runtime.engine.kit import call, make_spec, new_engine

SCRIPT = [{"tool_calls": [call("big", {"size": 30_000})]}, {"text": "done " + "x" * 20_000}]


def test_delete_session_removes_its_runs_items_and_objects() -> None:
    store = MemoryStore()
    engine = new_engine(make_spec(SCRIPT * 2), store)
    gone = asyncio.run(engine.run("a", "one", "s-gone"))
    kept = asyncio.run(engine.run("a", "two", "s-kept"))
    assert gone.status == kept.status == "succeeded"
    assert store.latest_session_run("a", "s-gone") == gone.run_id
    assert any(k.startswith(f"bodies/{gone.run_id}/") for k in store.blobs.objects)

    assert store.delete_session("a", "s-gone") == [gone.run_id]
    assert not [k for k in store.items if gone.run_id in k[0] or "s-gone" in k[0]]
    assert not [k for k in store.blobs.objects if gone.run_id in k or "/s-gone/" in k]
    assert store.latest_session_run("a", "s-gone") is None
    assert store.load_head(kept.run_id).status == "succeeded"
    assert any(kept.run_id in k for k in store.blobs.objects)
