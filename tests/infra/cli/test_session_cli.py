"""Over `agentfn dev`: `agentfn start --max-turns N` and `agentfn session delete ID --agent A`
(issue 25)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.infra.local.test_dev_server import Dev, serve_dev


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dev]:
    yield from serve_dev(tmp_path_factory)


def test_start_max_turns_and_session_delete(dev: Dev) -> None:
    limited = dev.agentfn(
        "start", "orders", "damaged ORD-1001", "--wait", "10", "--max-turns", "1", "--json"
    )
    assert limited.returncode == 0, limited.stderr
    assert json.loads(limited.stdout)["error_code"] == "MAX_TURNS_EXCEEDED"
    over = dev.agentfn("start", "orders", "hi", "--max-turns", "999")
    assert over.returncode != 0 and "max_turns" in over.stderr

    done = dev.agentfn(
        "start", "orders", "damaged ORD-1001", "--session", "cli-9", "--wait", "10", "--json"
    )
    assert done.returncode == 0, done.stderr
    run_id = json.loads(done.stdout)["run_id"]
    deleted = dev.agentfn("session", "delete", "cli-9", "--agent", "orders")
    assert deleted.returncode == 0, deleted.stderr
    assert "session cli-9 of orders: 1 run(s) deleted" in deleted.stdout
    gone = dev.agentfn("status", run_id)
    assert gone.returncode != 0 and "404" in gone.stderr
