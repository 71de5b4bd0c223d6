"""The official MCP conformance suite's *server* scenarios, run against agentfn's MCP server
(`POST /mcp` on `agentfn dev`, the same handler the deployed API serves; issue #29).

agentfn's MCP server offers tools only (one per agent and per workflow, docs/spec.md "Open
protocols"). Every scenario either passes, or exercises what the server does not offer, with
the reason below; the suite's own scenario list is pinned, so a new scenario must be
classified. The suite's fixture-tool scenarios (`tools-call-image`, …) call tools of its
reference server (`test_image_content`, …) that a spec's agents are not.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conformance.test_conformance import ROOT, _suite
from tests.infra.local.test_dev_server import Dev, serve_dev

#: What the server must pass: the protocol's own mechanics, its tools, and its guard.
PASSING = {
    "server-initialize",
    "ping",
    "tools-list",
    "tools-call-error",
    "dns-rebinding-protection",
}
_FIXTURE_TOOLS = "calls a tool of the suite's reference server; agentfn's tools are agents"
OUT_OF_SCOPE = {
    "logging-set-level": "no logging capability: a run's log is its events (REST, SSE)",
    "completion-complete": "no prompts or resource templates to complete",
    "tools-call-simple-text": _FIXTURE_TOOLS,  # the suite accepts an error text here
    "tools-call-image": _FIXTURE_TOOLS,
    "tools-call-audio": _FIXTURE_TOOLS,
    "tools-call-embedded-resource": _FIXTURE_TOOLS,
    "tools-call-mixed-content": _FIXTURE_TOOLS,
    "tools-call-with-logging": _FIXTURE_TOOLS,
    "tools-call-with-progress": _FIXTURE_TOOLS,
    "tools-call-sampling": "stateless server: no request back to the client (and a fixture tool)",
    "tools-call-elicitation": "stateless server: a run waiting for a person is a result naming "
    "how to decide, not an elicitation (it may wait for days)",
    "elicitation-sep1034-defaults": "no elicitation (above)",
    "elicitation-sep1330-enums": "no elicitation (above)",
    "json-schema-2020-12": _FIXTURE_TOOLS,
    "server-sse-polling": "JSON-response mode: API Gateway REST returns whole answers",
    "server-sse-multiple-streams": "JSON-response mode (above)",
    "resources-list": "no resources: an agent's knowledge is reached by the agent",
    "resources-read-text": "no resources (above)",
    "resources-read-binary": "no resources (above)",
    "resources-templates-read": "no resources (above)",
    "resources-subscribe": "no resources (above)",
    "resources-unsubscribe": "no resources (above)",
    "prompts-list": "no prompts: an agent's prompt is its own",
    "prompts-get-simple": "no prompts (above)",
    "prompts-get-with-args": "no prompts (above)",
    "prompts-get-embedded-resource": "no prompts (above)",
    "prompts-get-with-image": "no prompts (above)",
}


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dev]:
    yield from serve_dev(tmp_path_factory, "--no-reload")


def _listed(node: str, entry: str) -> set[str]:
    listing = subprocess.run(
        [node, entry, "list", "--server"], capture_output=True, text=True, timeout=60
    ).stdout
    return {line.strip()[2:] for line in listing.splitlines() if line.strip().startswith("- ")}


def _checks(node: str, entry: str, url: str, scenario: str, out: Path) -> list[dict[str, Any]]:
    subprocess.run(
        [node, entry, "server", "--url", url, "--scenario", scenario, "-o", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    (checks,) = out.rglob("checks.json")
    result: list[dict[str, Any]] = json.loads(checks.read_text())
    return result


def test_every_conformance_server_scenario_passes_or_is_out_of_scope(
    dev: Dev, tmp_path: Path
) -> None:
    node, entry = _suite()
    assert _listed(node, entry) == PASSING | set(OUT_OF_SCOPE), (
        "the suite's server scenarios changed: classify each (PASSING or OUT_OF_SCOPE)"
    )
    failed = {}
    for number, scenario in enumerate(sorted(PASSING)):
        checks = _checks(node, entry, f"{dev.api}/mcp", scenario, tmp_path / str(number))
        bad = [c for c in checks if c["status"] != "SUCCESS"]
        if bad or not checks:
            failed[scenario] = [c.get("errorMessage") or c["description"] for c in bad]
    assert failed == {}
