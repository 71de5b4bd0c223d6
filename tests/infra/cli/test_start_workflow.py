"""`agentfn start` of a workflow over `agentfn dev`, the API's hint when a workflow is started
as an agent, and what `agentfn dev` and `agentfn events` say about themselves."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import httpx
import pytest

from tests.helpers import ROOT
from tests.infra.local.test_dev_server import Dev, serve_dev


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dev]:
    yield from serve_dev(tmp_path_factory)


def test_start_finds_a_workflow_by_its_name(dev: Dev) -> None:
    done = dev.agentfn("start", "damaged_order", '{"order_id": "ORD-1001"}')
    assert done.returncode == 0, done.stderr
    first = done.stdout.splitlines()[0]
    assert first.startswith("workflow run ") and " · damaged_order · " in first
    explicit = dev.agentfn("start", "--workflow", "damaged_order", '{"order_id": "ORD-1002"}')
    assert explicit.returncode == 0, explicit.stderr
    assert " · damaged_order · " in explicit.stdout


def test_starting_a_workflow_as_an_agent_is_a_404_that_says_what_it_is(dev: Dev) -> None:
    answer = httpx.post(f"{dev.api}/agents/damaged_order/runs", json={"input": "x"}, timeout=10)
    assert answer.status_code == 404
    assert "'damaged_order' is a workflow: POST /workflows/damaged_order/runs" in answer.text


def test_the_banner_suggests_the_first_agent_with_its_own_description(dev: Dev) -> None:
    banner = dev.stdout.read_text() + dev.stderr.read_text()
    assert "try (support: Resolves order problems" in banner
    assert "Refund ORD-1001" not in banner


def test_events_json_help_says_json_lines() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "infra.cli", "events", "--help"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert "one JSON object a line (JSON Lines)" in " ".join(done.stdout.split())


def test_a_workflows_bad_input_gets_an_example_from_its_own_schema() -> None:
    from tests.helpers import run_agentfn

    done = run_agentfn("run", "damaged_order", "hello")
    assert done.returncode == 2
    assert """takes a JSON object matching its input_schema, e.g. '{"order_id": "…"}'""" in (
        done.stderr
    )
    from infra.cli.run_workflow import schema_example

    schema = {
        "type": "object",
        "required": ["n", "tags", "mode"],
        "properties": {
            "n": {"type": "integer"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "mode": {"enum": ["fast", "slow"]},
            "extra": {"type": "boolean"},
        },
    }
    assert schema_example(schema) == {"n": 1, "tags": ["…"], "mode": "fast"}


def test_a_waiting_workflow_names_the_tool_and_trace_shows_every_step_run() -> None:
    from tests.helpers import run_agentfn

    waiting = run_agentfn("run", "damaged_order", '{"order_id": "ORD-1001"}')
    assert waiting.returncode == 3
    assert '(billing) waits for approval of issue_refund {"order_id": "ORD-1001"' in waiting.stderr
    traced = run_agentfn("run", "damaged_order", '{"order_id": "ORD-1001"}', "--approve", "--trace")
    assert traced.returncode == 0, traced.stderr
    for step, agent in (("check", "orders"), ("check", "researcher"), ("refund", "billing")):
        assert f"\n{step} · {agent}\n" in traced.stderr
    assert traced.stderr.count("waterfall · run ") >= 3
