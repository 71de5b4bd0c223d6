"""Bad specs: each is reported with its message at the right line.

Every case is a complete agents.yaml. The line the error must be reported on ends with
`#!`, so the expected line number comes from the case text itself.
"""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from infra.checks.validate import validate_file

FIXTURE_TOOLS = Path(__file__).resolve().parents[2] / "fixtures" / "full" / "tools"

HEAD = """\
version: 1
models:
  m: {provider: scripted, script: [{text: hi}]}
"""


def h(body: str) -> str:
    """A case that starts with the shared HEAD (one scripted model named `m`)."""
    return HEAD + textwrap.dedent(body).lstrip("\n")


CASES: dict[str, tuple[str, str]] = {
    "unknown top-level key": (
        """
        version: 1
        models:
          m: {provider: scripted, script: [{text: hi}]}
        agent:  #!
          a: {description: d, model: m}
        """,
        "unknown key 'agent'; did you mean 'agents'?",
    ),
    "misspelt agent key": (
        h("""
        agents:
          a:
            description: d
            model: m
            tols: [x]  #!
        """),
        "unknown key 'tols'; did you mean 'tools'?",
    ),
    "missing description": (
        h("""
        agents:
          a:  #!
            model: m
        """),
        "missing required key 'description'",
    ),
    "unknown provider": (
        """
        version: 1
        models:
          m: {provider: opnai, model_id: gpt-4.1}  #!
        agents:
          a: {description: d, model: m}
        """,
        "unknown provider 'opnai'; did you mean 'openai'?",
    ),
    "misspelt key inside a provider model": (
        """
        version: 1
        models:
          m:
            provider: bedrock
            model_id: x
            tempreture: 0.2  #!
        agents:
          a: {description: d, model: m}
        """,
        "unknown key 'tempreture'; did you mean 'temperature'?",
    ),
    "plaintext api key": (
        """
        version: 1
        models:
          m:
            provider: openai
            model_id: gpt-4.1
            api_key: sk-live-123  #!
        agents:
          a: {description: d, model: m}
        """,
        "must be a secret reference ${secret:NAME}",
    ),
    "undeclared secret": (
        """
        version: 1
        models:
          m:
            provider: anthropic
            model_id: claude
            api_key: ${secret:anthropic}  #!
        agents:
          a: {description: d, model: m}
        """,
        "secret 'anthropic' is not declared under `secrets`",
    ),
    "bad duration": (
        h("""
        defaults:
          tool_timeout: 30x  #!
        agents:
          a: {description: d, model: m}
        """),
        "'30x' is not a duration",
    ),
    "unknown tool": (
        h("""
        tools:
          lookup_order: {type: python, handler: "tools.billing:refund", description: d}
        agents:
          a:
            description: d
            model: m
            tools:
              - lookup_ordr  #!
        """),
        "unknown tool 'lookup_ordr'; did you mean 'lookup_order'?",
    ),
    "unknown MCP server": (
        h("""
        mcp_servers:
          orders: {transport: http, url: "https://mcp.example.com/mcp"}
        agents:
          a:
            description: d
            model: m
            tools:
              - mcp:ordrs  #!
        """),
        "unknown MCP server 'ordrs'; did you mean 'orders'?",
    ),
    "unknown builtin": (
        h("""
        agents:
          a:
            description: d
            model: m
            tools: ["builtin:get_time"]  #!
        """),
        "unknown built-in tool 'get_time'; did you mean 'get_time_date'?",
    ),
    "unknown model reference": (
        h("""
        agents:
          a:
            description: d
            model: mm  #!
        """),
        "unknown model 'mm'; did you mean 'm'?",
    ),
    "no model anywhere": (
        h("""
        agents:
          a:  #!
            description: d
        """),
        "no model: set `model` here or `defaults.model`",
    ),
    "sub-agent cycle": (
        h("""
        agents:
          a:
            description: d
            model: m
            sub_agents: [b]  #!
          b:
            description: d
            model: m
            sub_agents: [a]
        """),
        "sub-agent cycle: a → b → a",
    ),
    "unknown sub-agent": (
        h("""
        agents:
          a:
            description: d
            model: m
            sub_agents:
              - biling  #!
          billing: {description: d, model: m}
        """),
        "unknown agent 'biling'; did you mean 'billing'?",
    ),
    "python tool outside the tools package": (
        h("""
        tools:
          shell:
            type: python
            handler: os:system  #!
            description: run anything
        agents:
          a: {description: d, model: m, tools: [shell]}
        """),
        "python tools must live in the project's tools package",
    ),
    "python tool function missing": (
        h("""
        tools:
          refund:
            type: python
            handler: tools.billing:refnd  #!
            description: refund
        agents:
          a: {description: d, model: m, tools: [refund]}
        """),
        "no public function 'refnd' in tools.billing; did you mean 'refund'?",
    ),
    "computed system prompt's function missing": (
        h("""
        agents:
          a:
            description: d
            model: m
            system_prompt: {python: "tools.billing:prompt"}  #!
        """),
        "no public function 'prompt' in tools.billing",
    ),
    "computed system prompt outside the tools package": (
        h("""
        agents:
          a:
            description: d
            model: m
            system_prompt: {python: "os:getcwd"}  #!
        """),
        "expected 'tools.MODULE:FUNCTION', got 'os:getcwd'",
    ),
    "python tool module missing": (
        h("""
        tools:
          refund:
            type: python
            handler: tools.payments:refund  #!
            description: refund
        agents:
          a: {description: d, model: m, tools: [refund]}
        """),
        "module 'tools.payments' not found",
    ),
    "invalid output schema": (
        h("""
        agents:
          a:
            description: d
            model: m
            output_schema:
              type: object
              properties:
                n: {type: integr}  #!
        """),
        "not a valid JSON Schema",
    ),
    "unknown prompt variable": (
        h("""
        agents:
          a:
            description: d
            model: m
            system_prompt: "Today is {dat}."  #!
        """),
        "unknown prompt variable {dat}; did you mean {date}?",
    ),
    "approval rule matching nothing": (
        h("""
        tools:
          refund: {type: python, handler: "tools.billing:refund", description: d}
        agents:
          a:
            description: d
            model: m
            tools: [refund]
            approval:
              - tools: [refnd]  #!
        """),
        "'refnd' matches none of this agent's tools; did you mean 'refund'?",
    ),
    "wrong effect": (
        h("""
        tools:
          refund:
            type: python
            handler: "tools.billing:refund"
            description: d
            effect: readonly  #!
        agents:
          a: {description: d, model: m, tools: [refund]}
        """),
        "expected one of: read_only, idempotent, at_most_once; got 'readonly'; did you mean 'read_only'?",
    ),
    "duplicate key": (
        h("""
        agents:
          a: {description: d, model: m}
          a: {description: e, model: m}  #!
        """),
        "duplicate key 'a' (first written at line",
    ),
    "yaml syntax error": (
        h("""
        agents:
          a:
            description: "unterminated
            model: m
        #!
        """),
        "YAML syntax error",
    ),
    "invalid agent name": (
        h("""
        agents:
          bad name:  #!
            description: d
            model: m
        """),
        "invalid name 'bad name'",
    ),
    "URL parameter not in schema": (
        h("""
        tools:
          account:
            type: http
            url: "https://crm.example.com/accounts/{customer}"  #!
            description: d
            input_schema: {type: object, properties: {customer_id: {type: string}}}
        agents:
          a: {description: d, model: m, tools: [account]}
        """),
        "URL parameter {customer} is not a property of input_schema; did you mean 'customer_id'?",
    ),
    "plaintext credential header": (
        h("""
        mcp_servers:
          orders:
            transport: http
            url: https://mcp.example.com/mcp
            headers:
              Authorization: Bearer abc123  #!
        agents:
          a: {description: d, model: m, tools: ["mcp:orders"]}
        """),
        "looks like a credential written in plaintext",
    ),
    "lambda memory out of range": (
        h("""
        agents:
          a:
            description: d
            model: m
            lambda:
              memory: 99999  #!
        """),
        "less than or equal to 10240",
    ),
    "unsupported version": (
        """
        version: 2  #!
        models:
          m: {provider: scripted, script: [{text: hi}]}
        agents:
          a: {description: d, model: m}
        """,
        "expected one of: 1; got 2",
    ),
    "unknown fallback": (
        """
        version: 1
        models:
          m:
            provider: bedrock
            model_id: x
            fallbacks: [gtp]  #!
          gpt: {provider: bedrock, model_id: y}
        agents:
          a: {description: d, model: m}
        """,
        "unknown model 'gtp'; did you mean 'gpt'?",
    ),
    "empty script entry": (
        """
        version: 1
        models:
          m:
            provider: scripted
            script:
              - usage: {input_tokens: 1}  #!
        agents:
          a: {description: d, model: m}
        """,
        "a script entry needs `text`, `tool_calls` or `error`",
    ),
    "invalid lambda ARN": (
        h("""
        tools:
          charge:
            type: lambda
            function_arn: charge-function  #!
            description: d
        agents:
          a: {description: d, model: m, tools: [charge]}
        """),
        "'charge-function'",
    ),
    "agent names that collide as resource names": (
        h("""
        agents:
          order-bot: {description: d, model: m}
          order_bot: {description: d, model: m}  #!
        """),
        "map to the same resource name 'OrderBot'",
    ),
    "tool listed twice": (
        h("""
        agents:
          a:
            description: d
            model: m
            tools:
              - builtin:get_time_date
              - builtin:get_time_date  #!
        """),
        "tool 'builtin:get_time_date' is listed twice",
    ),
}


def _write_project(tmp_path: Path, text: str) -> tuple[Path, int]:
    shutil.copytree(FIXTURE_TOOLS, tmp_path / "tools")
    body = textwrap.dedent(text).lstrip("\n")
    lines = body.splitlines()
    marked = [i + 1 for i, line in enumerate(lines) if line.rstrip().endswith("#!")]
    assert len(marked) == 1, "each case marks exactly one line"
    spec = tmp_path / "agents.yaml"
    spec.write_text(body, encoding="utf-8")
    return spec, marked[0]


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_bad_spec_is_reported_at_its_line(case: str, tmp_path: Path) -> None:
    text, message = CASES[case]
    spec, line = _write_project(tmp_path, text)
    result = validate_file(spec)
    assert not result.ok
    rendered = [str(issue) for issue in result.issues]
    matching = [issue for issue in result.issues if message in issue.message]
    assert matching, f"no issue says {message!r}; got:\n" + "\n".join(rendered)
    if case == "yaml syntax error":
        # The scanner notices the unterminated string where the document ends.
        assert matching[0].line >= line - 1, rendered
    else:
        assert matching[0].line == line, rendered
    assert matching[0].file == str(spec)


def test_there_are_at_least_fifteen_distinct_bad_specs() -> None:
    assert len(CASES) >= 15
    assert len({message for _, message in CASES.values()}) == len(CASES)


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    spec, _ = _write_project(
        tmp_path,
        h(
            """
        defaults: {tool_timeout: soon}
        agents:
          a:
            description: d
            model: mm
            tols: []
            tools: ["builtin:nope"]  #!
        """
        ),
    )
    result = validate_file(spec)
    messages = " | ".join(issue.message for issue in result.issues)
    assert len(result.issues) == 4, messages
    for expected in (
        "not a duration",
        "unknown model 'mm'",
        "unknown key 'tols'",
        "unknown built-in tool 'nope'",
    ):
        assert expected in messages
    # Sorted by position, each with a key path.
    assert [i.line for i in result.issues] == sorted(i.line for i in result.issues)
    assert {i.path for i in result.issues} == {
        "defaults.tool_timeout",
        "agents.a.model",
        "agents.a.tols",
        "agents.a.tools[0]",
    }
