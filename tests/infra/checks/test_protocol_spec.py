"""`protocols` and `remote_agents` in a spec: what validate refuses (at the line, naming the
key), and what the template then holds (routes behind the stage's auth, SDK layers only for
the functions that import them)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from infra.checks.validate import validate_file
from infra.sam.template import build_template
from runtime.spec import AgentfnSpec

BASE = """\
version: 1
models:
  m: {provider: scripted, script: [{text: hi}]}
secrets:
  partner-token: {source: secretsmanager}
remote_agents:
  partner: {a2a: "https://partner.example.com/a2a/orders", auth: {headers: {Authorization: "Bearer ${secret:partner-token}"}}}
agents:
  a:
    description: d
    model: m
    system_prompt: p
"""


def spec_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "agents.yaml"
    path.write_text(textwrap.dedent(text))
    return path


@pytest.mark.parametrize(
    ("extra", "line", "message"),
    [
        (
            "    sub_agents: [partner]\n",
            13,
            "'partner' is a remote A2A agent: it can only be asked",
        ),
        ("    sub_agents: [{agent: partnr, as: tool}]\n", 13, "unknown agent 'partnr'"),
        (
            "  partner: {description: d, model: m, system_prompt: p}\n",
            7,
            "'partner' is also a local",
        ),
        ("    protocols: {a2a: yes please}\n", 13, "protocols.a2a"),
    ],
)
def test_validate_refuses_at_the_line(tmp_path: Path, extra: str, line: int, message: str) -> None:
    result = validate_file(spec_file(tmp_path, BASE + extra))
    rendered = [str(i) for i in result.issues]
    found = [i for i in result.issues if message in str(i)]
    assert found, rendered
    assert found[0].line == line, rendered


def test_a_remote_url_must_be_http(tmp_path: Path) -> None:
    text = BASE.replace("https://partner.example.com/a2a/orders", "file:///etc/passwd")
    result = validate_file(spec_file(tmp_path, text))
    assert any(
        "a2a must be an absolute http(s) URL" in str(i) and i.line == 7 for i in result.issues
    ), [str(i) for i in result.issues]


def test_a_secret_in_the_remote_auth_headers_is_allowed_and_valid(tmp_path: Path) -> None:
    result = validate_file(
        spec_file(tmp_path, BASE + "    sub_agents: [{agent: partner, as: tool}]\n")
    )
    assert result.ok, [str(i) for i in result.issues]


def _template(tmp_path: Path, text: str) -> dict[str, object]:
    result = validate_file(spec_file(tmp_path, text))
    assert result.ok and isinstance(result.spec, AgentfnSpec), [str(i) for i in result.issues]
    template: dict[str, object] = build_template(result.spec)
    return template


def test_routes_and_layers_follow_the_opt_in(tmp_path: Path) -> None:
    plain = _template(tmp_path, BASE)
    resources = plain["Resources"]
    assert isinstance(resources, dict)
    events = resources["ApiFunction"]["Properties"]["Events"]
    assert not {"A2aAgentCard", "A2aRpc", "McpServer"} & set(events)
    assert "A2aLayer" not in resources and "McpLayer" not in resources

    served = _template(
        tmp_path,
        BASE.replace("models:", "defaults: {protocols: {a2a: true, mcp: true}}\nmodels:", 1),
    )
    resources = served["Resources"]
    assert isinstance(resources, dict)
    api = resources["ApiFunction"]["Properties"]
    assert {
        e["Properties"]["Path"] for n, e in api["Events"].items() if n.startswith(("A2a", "Mcp"))
    } == {
        "/a2a/{agent}/.well-known/agent-card.json",
        "/a2a/{agent}",
        "/mcp",
    }
    assert {"Ref": "A2aLayer"} in api["Layers"] and {"Ref": "McpLayer"} in api["Layers"]
    assert resources["Api"]["Properties"]["Auth"] == {"DefaultAuthorizer": "AWS_IAM"}  # all routes

    asking = _template(tmp_path, BASE + "    sub_agents: [{agent: partner, as: tool}]\n")
    resources = asking["Resources"]
    assert isinstance(resources, dict)
    agent_function = next(
        r
        for name, r in resources.items()
        if r["Type"] == "AWS::Serverless::Function" and name.startswith("AgentA")
    )
    assert {"Ref": "A2aLayer"} in agent_function["Properties"]["Layers"]
    api = resources["ApiFunction"]["Properties"]
    assert {"Ref": "A2aLayer"} in api["Layers"]  # it forwards a decision to the remote task
    api_grants = str(resources["ApiFunctionRole"]["Properties"]["Policies"])
    assert "ReadRemoteAgentSecrets" in api_grants and "partner-token" in api_grants
    assert "partner-token" in str(resources["AgentAFunctionRole"]["Properties"]["Policies"])
