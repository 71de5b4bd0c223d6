"""Specs that used to validate and then break at run time (or crash `validate` itself) are
rejected at validation, each at its line. Same convention as test_validate_bad: the line
the error must be reported on ends with `#!`."""

from __future__ import annotations

from pathlib import Path

import pytest

from infra.checks.validate import validate_file
from tests.infra.checks.test_validate_bad import _write_project, h

CASES: dict[str, tuple[str, str]] = {
    # --- JSON Schemas: references and patterns the run time would choke on ---
    "input_schema referring to itself": (
        h("""
        tools:
          t:
            type: python
            handler: "tools.billing:refund"
            description: d
            input_schema:
              type: object
              $ref: "#"  #!
        agents:
          a: {description: d, model: m, tools: [t]}
        """),
        "leads back to itself without passing through a property or an item",
    ),
    "output_schema with a reference loop through allOf": (
        h("""
        agents:
          a:
            description: d
            model: m
            output_schema:
              definitions:
                x:
                  allOf:
                    - $ref: "#/definitions/x"  #!
              $ref: "#/definitions/x"
        """),
        "leads back to itself",
    ),
    "output_schema with a remote reference": (
        h("""
        agents:
          a:
            description: d
            model: m
            output_schema:
              type: object
              properties:
                r: {$ref: "https://schemas.example.com/r.json"}  #!
        """),
        "$ref 'https://schemas.example.com/r.json' points outside this schema",
    ),
    "input_schema with a file reference": (
        h("""
        tools:
          t:
            type: python
            handler: "tools.billing:refund"
            description: d
            input_schema:
              type: object
              properties:
                p:
                  $ref: file:///etc/passwd  #!
        agents:
          a: {description: d, model: m, tools: [t]}
        """),
        "$ref 'file:///etc/passwd' points outside this schema",
    ),
    "reference to nothing": (
        h("""
        agents:
          a:
            description: d
            model: m
            output_schema:
              $ref: "#/definitions/missing"  #!
        """),
        "$ref '#/definitions/missing' points to nothing",
    ),
    "nested quantifier pattern": (
        h("""
        tools:
          t:
            type: python
            handler: "tools.billing:refund"
            description: d
            input_schema:
              type: object
              properties:
                id: {type: string, pattern: "^(a+)+$"}  #!
        agents:
          a: {description: d, model: m, tools: [t]}
        """),
        "pattern '^(a+)+$' can backtrack catastrophically: '(a+)+' can match the same text",
    ),
    "overlapping alternation pattern": (
        h("""
        agents:
          a:
            description: d
            model: m
            output_schema:
              type: string
              pattern: "^(a|a)*$"  #!
        """),
        "'(a|a)*' can match the same text in more than one way",
    ),
    "patternProperties key that backtracks": (
        h("""
        agents:
          a:
            description: d
            model: m
            output_schema:
              type: object
              patternProperties:
                "^(\\\\w+\\\\s?)*$": {type: string}  #!
        """),
        "can backtrack catastrophically: '(\\\\w+\\\\s?)*'",
    ),
    "schema the run time cannot compile": (
        h("""
        agents:
          a:
            description: d
            model: m
            output_schema:  #!
              type: object
              properties: {total: {type: number}}
              required: [totl]
              additionalProperties: false
        """),
        "cannot be used at run time: it does not compile",
    ),
    # --- prompts ---
    "prompt variable with a format spec": (
        h("""
        agents:
          a:
            description: d
            model: m
            system_prompt: "Today is {date:>1500000000}."  #!
        """),
        "prompt variable {date:>1500000000} has a format spec",
    ),
    "prompt variable with a conversion": (
        h("""
        agents:
          a:
            description: d
            model: m
            system_prompt: "Today is {date!r}."  #!
        """),
        "prompt variable {date!r} has a conversion",
    ),
    # --- storage prefixes inside the engine's own ---
    "storage_prefix inside tool-cache/": (
        h("""
        agents:
          a:
            description: d
            model: m
            storage_prefix: tool-cache/a/  #!
        """),
        "storage_prefix 'tool-cache/a/' overlaps the engine's own 'tool-cache/' prefix",
    ),
    "storage_prefix that is results/ once {agent} is filled": (
        h("""
        agents:
          results:
            description: d
            model: m
            storage_prefix: "{agent}/"  #!
        """),
        "storage_prefix 'results/' overlaps the engine's own 'results/' prefix",
    ),
    # --- secrets where they would be sent as written ---
    "secret in an HTTP tool url": (
        h("""
        secrets:
          k: {source: ssm, name: /k}
        tools:
          t:
            type: http
            url: "https://api.example.com/v1?key=${secret:k}"  #!
            description: d
        agents:
          a: {description: d, model: m, tools: [t]}
        """),
        "a secret reference here would be sent as written",
    ),
    "secret in an MCP server's arguments": (
        h("""
        secrets:
          k: {source: ssm, name: /k}
        mcp_servers:
          local:
            transport: stdio
            command: python
            args: ["-m", "server", "--token=${secret:k}"]  #!
        agents:
          a: {description: d, model: m, tools: ["mcp:local"]}
        """),
        "resolved only in HTTP tool and MCP server `headers`, MCP server `env` and model "
        "`api_key` values",
    ),
    # --- URL placeholders in the host part ---
    "placeholder right after the host": (
        h("""
        tools:
          t:
            type: http
            url: "https://api.example.com{path}"  #!
            description: d
            input_schema: {type: object, properties: {path: {type: string}}}
        agents:
          a: {description: d, model: m, tools: [t]}
        """),
        "has a placeholder in its host part",
    ),
    "placeholder as the host": (
        h("""
        tools:
          t:
            type: http
            url: "https://{host}/x"  #!
            description: d
            input_schema: {type: object, properties: {host: {type: string}}}
        agents:
          a: {description: d, model: m, tools: [t]}
        """),
        "placeholders may fill only the path",
    ),
    # --- version ---
    "version 1.0": (
        """
        version: 1.0  #!
        models:
          m: {provider: scripted, script: [{text: hi}]}
        agents:
          a: {description: d, model: m}
        """,
        "version must be the whole number 1, unquoted (got 1.0)",
    ),
    "version quoted": (
        """
        version: "1"  #!
        models:
          m: {provider: scripted, script: [{text: hi}]}
        agents:
          a: {description: d, model: m}
        """,
        "version must be the whole number 1, unquoted (got '1')",
    ),
    "version true": (
        """
        version: true  #!
        models:
          m: {provider: scripted, script: [{text: hi}]}
        agents:
          a: {description: d, model: m}
        """,
        "version must be the whole number 1, unquoted (got true)",
    ),
    # --- waits and ttl against retention and Step Functions ---
    "approval wait longer than the retention": (
        h("""
        deployment: {retention: 7d}
        tools:
          refund: {type: python, handler: "tools.billing:refund", description: d}
        agents:
          a:
            description: d
            model: m
            tools: [refund]
            approval:
              - tools: [refund]
                timeout: 10d  #!
        """),
        "a wait of 10d is longer than deployment.retention (7d)",
    ),
    "default input wait longer than the default retention": (
        h("""
        defaults:
          input_timeout: 40d  #!
        agents:
          a: {description: d, model: m}
        """),
        "a wait of 40d is longer than deployment.retention (30d, the default)",
    ),
    "agent input wait beyond Step Functions": (
        h("""
        deployment: {retention: 800d}
        agents:
          a:
            description: d
            model: m
            input_timeout: 400d  #!
        """),
        "longer than a Step Functions execution may run (1 year)",
    ),
    "retention shorter than the default waits": (
        h("""
        deployment:
          retention: 12h  #!
        agents:
          a: {description: d, model: m}
        """),
        "retention 12h is shorter than defaults.approval_timeout (24h, the default)",
    ),
    "session ttl longer than the retention": (
        h("""
        agents:
          a:
            description: d
            model: m
            session:
              ttl: 60d  #!
        """),
        "session ttl 60d is longer than deployment.retention (30d, the default)",
    ),
    # --- names YAML reads as something else ---
    "agent named on": (
        h("""
        agents:
          on: {description: d, model: m}  #!
        """),
        "key 'on' is read by YAML as the boolean true, not a name; quote it: 'on'",
    ),
    "agent named no": (
        h("""
        agents:
          no: {description: d, model: m}  #!
        """),
        "key 'no' is read by YAML as the boolean false",
    ),
    "tool named 1": (
        h("""
        tools:
          1: {type: python, handler: "tools.billing:refund", description: d}  #!
        agents:
          a: {description: d, model: m}
        """),
        "key '1' is read by YAML as a number, not a name; quote it: '1'",
    ),
    "model named null": (
        """
        version: 1
        models:
          null: {provider: scripted, script: [{text: hi}]}  #!
        agents:
          a: {description: d, model: m}
        """,
        "key 'null' is read by YAML as null (no value)",
    ),
}


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_a_spec_that_would_break_at_run_time_is_rejected_at_its_line(
    case: str, tmp_path: Path
) -> None:
    text, message = CASES[case]
    spec, line = _write_project(tmp_path, text)
    result = validate_file(spec)
    assert not result.ok
    rendered = [str(issue) for issue in result.issues]
    matching = [issue for issue in result.issues if message in issue.message]
    assert matching, f"no issue says {message!r}; got:\n" + "\n".join(rendered)
    assert matching[0].line == line, rendered
    assert matching[0].file == str(spec)


def test_a_syntax_error_names_the_line_where_the_unclosed_construct_opened(
    tmp_path: Path,
) -> None:
    spec, opened = _write_project(
        tmp_path,
        h("""
        agents:
          a: {description: d,  #!
            model: m
          b: {description: d, model: m}
        """),
    )
    result = validate_file(spec)
    (issue,) = result.issues
    assert issue.message.startswith("YAML syntax error: ")
    assert issue.message.endswith(f"; the flow mapping opened at line {opened}"), issue.message
    assert issue.line > opened  # reported where the parser noticed, naming where it began


def test_secrets_in_the_places_they_are_resolved_stay_valid(tmp_path: Path) -> None:
    spec, _ = _write_project(
        tmp_path,
        h("""
        secrets:
          k: {source: ssm, name: /k}
        mcp_servers:
          web: {transport: http, url: "https://mcp.example.com/mcp", headers: {Authorization: "Bearer ${secret:k}"}}
          local: {transport: stdio, command: python, env: {TOKEN: "${secret:k}"}}
        tools:
          t:
            type: http
            url: "https://api.example.com/v1/{id}?q={q}"
            description: d
            headers: {X-Api-Key: "${secret:k}"}
            input_schema: {type: object, properties: {id: {type: string}, q: {type: string}}}
        agents:
          a:  #!
            description: d
            model: m
            tools: [t, "mcp:web", "mcp:local"]
            storage_prefix: "storage/{agent}/"
            output_schema: {type: string, pattern: "^[a-z0-9]+(-[a-z0-9]+)*$"}
        """),
    )
    result = validate_file(spec)
    assert result.ok, [str(i) for i in result.issues]
