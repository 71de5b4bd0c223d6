"""The spec rules for MCP servers' OAuth and tool counts: a client secret is a secret reference
(resolved at run time, like headers), never plaintext or a reference where it would be sent as
written; a token endpoint is private; and `agentfn validate` warns (exit 0) about an agent
whose named tools are more than a model request may carry."""

from __future__ import annotations

from pathlib import Path

import pytest

from infra.checks.validate import validate_file
from infra.cli.commands import main
from tests.infra.checks.test_validate_bad import _write_project, h

OAUTH = """
secrets:
  lab: {{source: ssm, name: /lab}}
mcp_servers:
  shop:
    transport: http
    url: https://mcp.example.com/mcp
    oauth:
      token_url: {token_url}
      client_id: {client_id}
      client_secret: {client_secret}  #!
      scopes: [tools:read]
{extra}agents:
  a: {{description: d, model: m, tools: ["mcp:shop"]}}
"""


def oauth(
    token_url: str = "https://auth.example.com/oauth2/token",
    client_id: str = "agent-1",
    client_secret: str = '"${secret:lab}"',
    extra: str = "",
) -> str:
    return h(
        OAUTH.format(
            token_url=token_url, client_id=client_id, client_secret=client_secret, extra=extra
        )
    )


def test_an_oauth_client_secret_from_secrets_is_valid(tmp_path: Path) -> None:
    spec, _ = _write_project(tmp_path, oauth())
    result = validate_file(spec)
    assert result.ok, [str(i) for i in result.issues]
    assert result.spec is not None
    shop = result.spec.mcp_servers["shop"]
    assert shop.oauth is not None and shop.oauth.client_secret == "${secret:lab}"


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"client_secret": "plain-text"}, "must be a secret reference"),
        (
            {"client_id": '"${secret:lab}"'},
            "a secret reference here would be sent as written",
        ),
        ({"token_url": "http://auth.example.com/token"}, "token_url must use https"),
        (
            {"extra": "    headers: {Authorization: 'Bearer ${secret:lab}'}\n"},
            "set either oauth or an Authorization header, not both",
        ),
    ],
    ids=["plaintext secret", "secret as client id", "plain http", "two authorizations"],
)
def test_oauth_settings_that_would_leak_or_conflict_are_refused(
    tmp_path: Path, changes: dict[str, str], message: str
) -> None:
    spec, _ = _write_project(tmp_path, oauth(**changes))
    result = validate_file(spec)
    assert not result.ok
    assert any(message in issue.message for issue in result.issues), [str(i) for i in result.issues]


def test_a_loopback_token_endpoint_may_use_http(tmp_path: Path) -> None:
    spec, _ = _write_project(tmp_path, oauth(token_url="http://127.0.0.1:9000/token"))
    assert validate_file(spec).ok


def test_validate_warns_about_an_agent_with_more_tools_than_a_model_request_may_carry(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    picks = ", ".join(f'"mcp:big/t{n}"' for n in range(130))
    text = h(f"""
        mcp_servers:
          big: {{transport: stdio, command: python}}
          more: {{transport: stdio, command: python}}
        agents:
          a:
            description: d
            model: m
            tools: [{picks}, "mcp:more"]  #!
        """)
    spec, line = _write_project(tmp_path, text)
    assert main(["validate", "-f", str(spec)]) == 0  # valid: a warning, not a problem
    err = capsys.readouterr().err
    assert f"agents.yaml:{line}:" in err
    assert "agents.a.tools: warning: this agent offers 133 tools, plus the tools of mcp:more" in err
    assert "select fewer (mcp:SERVER/TOOL picks single tools of a server)" in err
