"""Hooks in agents.yaml: a good spec validates (and so does its JSON Schema), each mistake
is reported at its line, and Lambda hooks and hook secrets are granted to exactly the
agents whose hooks name them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from infra.checks.validate import validate_file
from infra.cli.commands import json_schema
from infra.sam.naming import agent_function_id
from infra.sam.template import build_template
from runtime.spec import AgentfnSpec
from runtime.spec.graph import agent_hooks
from runtime.spec.hooks import HttpHook, LambdaHook, RuleHook
from tests.infra.cfn import allowed, function_statements, role_statements, sam_transform
from tests.infra.checks.test_validate_bad import _write_project, h

ARN = "arn:aws:lambda:us-east-1:123456789012:function:"

GOOD = h(
    """
    secrets:
      policy-token: {source: ssm, name: /policy/token}
    tools:
      refund: {type: python, handler: tools.billing:refund, description: Refund.}
    hooks:
      - event: pre_tool_use
        match: refund
        type: rule
        rules:
          - {arg: order_id, op: matches, value: "^ORD-\\\\d+$", else: deny, reason: bad id}
          - {arg: amount, op: not_in, value: [0], else: deny}
    defaults:
      hooks:
        - event: post_tool_use
          type: http
          url: https://policy.example.com/hook
          headers: {Authorization: "Bearer ${secret:policy-token}"}
          timeout: 2s
    agents:
      a:
        description: d
        model: m
        tools: [refund]
        hooks:
          - {event: pre_response, type: python, handler: tools.billing:quote}
          - {event: pre_tool_use, type: lambda, function_arn: "ARNguard", on_error: deny}
          - {event: on_run_start, type: rule, rules: [{op: contains, value: DROP, then: deny}]}
          - {event: on_run_complete, type: http, url: "https://hooks.example.com/done"}
      b:
        description: d
        model: m
    """
).replace("ARN", ARN)


def test_a_spec_with_hooks_at_every_level_validates_in_order(tmp_path: Path) -> None:
    spec_file, _ = _write_project(tmp_path, GOOD.replace("  a:\n", "  a:  #!\n", 1))
    result = validate_file(spec_file)
    assert result.ok, "\n".join(map(str, result.issues))
    assert result.spec is not None
    hooks = agent_hooks(result.spec, "a")
    assert [i for i, _ in hooks] == [
        "hooks[0]",
        "defaults.hooks[0]",
        "agents.a.hooks[0]",
        "agents.a.hooks[1]",
        "agents.a.hooks[2]",
        "agents.a.hooks[3]",
    ]
    first, second = hooks[0][1], hooks[1][1]
    assert isinstance(first, RuleHook) and first.match == ["refund"]
    assert first.rules[0].else_ == "deny" and first.rules[1].op == "not_in"
    assert isinstance(second, HttpHook) and second.timeout == 2 and second.on_error == "allow"
    assert isinstance(hooks[3][1], LambdaHook) and hooks[3][1].on_error == "deny"
    assert [i for i, _ in agent_hooks(result.spec, "b")] == ["hooks[0]", "defaults.hooks[0]"]
    again = AgentfnSpec.model_validate(result.spec.to_compiled())  # the compiled form reloads
    assert again == result.spec
    data = yaml.safe_load(GOOD)
    jsonschema.Draft202012Validator(json.loads(json_schema())).validate(data)


HOOK_CASES: dict[str, tuple[str, str]] = {
    "unknown event": (
        """
        hooks:
          - event: pre_tool_usage  #!
            type: rule
            rules: [{arg: x, op: equals, value: 1, then: deny}]
        """,
        "did you mean 'pre_tool_use'?",
    ),
    "unknown type": (
        """
        hooks:
          - event: pre_tool_use
            type: webhook  #!
        """,
        "unknown type 'webhook'",
    ),
    "bad operator": (
        """
        hooks:
          - event: pre_tool_use
            type: rule
            rules:
              - arg: x
                op: containz  #!
                value: a
                then: deny
        """,
        "did you mean 'contains'?",
    ),
    "catastrophic regex": (
        """
        hooks:
          - event: pre_tool_use
            type: rule
            rules:
              - arg: x
                op: not_matches
                value: "^(a+)+$"  #!
                else: deny
        """,
        "can backtrack catastrophically",
    ),
    "invalid regex": (
        """
        hooks:
          - event: pre_tool_use
            type: rule
            rules:
              - arg: x
                op: matches
                value: "([a-z"  #!
                else: deny
        """,
        "is not a valid regular expression",
    ),
    "in needs a list": (
        """
        hooks:
          - event: pre_tool_use
            type: rule
            rules:
              - arg: x
                op: in
                value: abc  #!
                else: deny
        """,
        "`in` needs a list of values",
    ),
    "rule without an action": (
        """
        hooks:
          - event: pre_tool_use
            type: rule
            rules:
              - {arg: x, op: equals, value: 1}  #!
        """,
        "exactly one of `then: deny`",
    ),
    "bad json path": (
        """
        hooks:
          - event: pre_tool_use
            type: rule
            rules:
              - arg: "items[x]"  #!
                op: equals
                value: 1
                then: deny
        """,
        "does not match",
    ),
    "rule on an event that cannot block": (
        """
        hooks:
          - event: post_tool_use  #!
            type: rule
            rules: [{arg: x, op: equals, value: 1, then: deny}]
        """,
        "a rule hook can only deny",
    ),
    "match on an event without tools": (
        """
        hooks:
          - event: on_run_start  #!
            match: refund
            type: python
            handler: tools.billing:refund
        """,
        "`match` selects tools",
    ),
    "on_error deny where nothing can be denied": (
        """
        hooks:
          - event: on_run_complete  #!
            type: python
            handler: tools.billing:refund
            on_error: deny
        """,
        "cannot block, so `on_error: deny` cannot apply",
    ),
    "python handler outside the tools package": (
        """
        hooks:
          - event: pre_response
            type: python
            handler: os:system  #!
        """,
        "must live in the project's tools package",
    ),
    "python handler that does not exist": (
        """
        hooks:
          - event: pre_response
            type: python
            handler: tools.billing:refnd  #!
        """,
        "no public function 'refnd' in tools.billing; did you mean 'refund'?",
    ),
    "placeholder in the host of an http hook": (
        """
        hooks:
          - event: pre_response
            type: http
            url: "https://{tenant}.example.com/hook"  #!
        """,
        "has a placeholder in its host part",
    ),
    "secret in an http hook's url": (
        """
        secrets:
          tok: {}
        hooks:
          - event: pre_response
            type: http
            url: "https://example.com/hook?key=${secret:tok}"  #!
        """,
        "a secret reference here would be sent as written",
    ),
    "plaintext credential header": (
        """
        defaults:
          hooks:
            - event: pre_response
              type: http
              url: https://example.com/hook
              headers:
                X-Api-Key: abc123  #!
        """,
        "looks like a credential written in plaintext",
    ),
    "undeclared secret in a hook header": (
        """
        hooks:
          - event: pre_response
            type: http
            url: https://example.com/hook
            headers:
              Authorization: "Bearer ${secret:policy}"  #!
        """,
        "secret 'policy' is not declared",
    ),
    "match naming none of the agent's tools": (
        """
        agents:
          a:
            description: d
            model: m
            tools: [refund]
            hooks:
              - event: pre_tool_use
                match: refnd  #!
                type: rule
                rules: [{arg: x, op: equals, value: 1, then: deny}]
        """,
        "'refnd' matches none of this agent's tools; did you mean 'refund'?",
    ),
    "invalid lambda arn": (
        """
        hooks:
          - event: pre_tool_use
            type: lambda
            function_arn: guard  #!
        """,
        "'guard'",
    ),
    "timeout beyond 15 minutes": (
        """
        hooks:
          - event: pre_response
            type: python
            handler: tools.billing:refund
            timeout: 1h  #!
        """,
        "less than or equal to 900",
    ),
    "rule arg that is not an argument of the matched tool": (
        """
        tools:
          charge:
            type: python
            handler: tools.billing:refund
            description: Charge.
            input_schema: {type: object, properties: {amount: {type: number}}}
        agents:
          a:
            description: d
            model: m
            tools: [charge]
            hooks:
              - event: pre_tool_use
                match: charge
                type: rule
                rules:
                  - arg: ammount  #!
                    op: not_in
                    value: [1, 2, 3]
                    then: deny
        """,
        "`ammount` is not an argument of charge (its input_schema has amount); "
        "did you mean 'amount'?",
    ),
    "rule arg missing from one of the tools a top-level hook applies to": (
        """
        tools:
          charge:
            type: python
            handler: tools.billing:refund
            description: Charge.
            input_schema: {type: object, properties: {amount: {type: number}}}
          note:
            type: python
            handler: tools.billing:quote
            description: Note.
            input_schema: {type: object, properties: {text: {type: string}}}
        hooks:
          - event: pre_tool_use
            type: rule
            rules: [{arg: amount, op: in, value: [1], else: deny}]  #!
        agents:
          a: {description: d, model: m, tools: [charge, note]}
        """,
        "`amount` is not an argument of note",
    ),
    "rule arg on a text answer": (
        """
        agents:
          a:
            description: d
            model: m
            hooks:
              - event: pre_response
                type: rule
                rules: [{arg: secret, op: contains, value: x, then: deny}]  #!
        """,
        "agent a answers in text (it has no output_schema)",
    ),
    "rule arg that is not in the output schema": (
        """
        agents:
          a:
            description: d
            model: m
            output_schema:
              type: object
              properties: {answer: {type: string}, items: {type: array, items: {type: object, properties: {sku: {type: string}}}}}
            hooks:
              - event: pre_response
                type: rule
                rules: [{arg: "items[0].skus", op: contains, value: x, then: deny}]  #!
        """,
        "`items[0].skus` is not in agent a's output_schema",
    ),
}

TAIL = """
tools:
  refund: {type: python, handler: tools.billing:refund, description: Refund.}
agents:
  a: {description: d, model: m, tools: [refund]}
"""


@pytest.mark.parametrize("case", list(HOOK_CASES), ids=list(HOOK_CASES))
def test_a_bad_hook_is_reported_at_its_line(case: str, tmp_path: Path) -> None:
    body, message = HOOK_CASES[case]
    text = h(body)
    if "\nagents:" not in text:
        text += TAIL.lstrip("\n")
    elif "\ntools:" not in text:
        text = text.replace("\nagents:", TAIL.split("agents:")[0].rstrip("\n") + "\nagents:", 1)
    spec_file, line = _write_project(tmp_path, text)
    result = validate_file(spec_file)
    rendered = "\n".join(map(str, result.issues))
    assert not result.ok
    matching = [i for i in result.issues if message in i.message]
    assert matching, f"no issue says {message!r}; got:\n{rendered}"
    assert matching[0].line == line, rendered
    assert len(result.issues) == 1, rendered  # reported once, nothing else is wrong


# ---- the template ---------------------------------------------------------------------


def _grants_spec() -> AgentfnSpec:
    return AgentfnSpec.model_validate(
        {
            "version": 1,
            "secrets": {"policy-token": {}, "audit-token": {"source": "ssm", "name": "/audit"}},
            "models": {"m": {"provider": "scripted", "script": [{"text": "hi"}]}},
            "hooks": [
                {
                    "event": "on_run_complete",
                    "type": "lambda",
                    "function_arn": ARN + "audit",
                }
            ],
            "agents": {
                "a": {
                    "description": "d",
                    "model": "m",
                    "hooks": [
                        {"event": "pre_tool_use", "type": "lambda", "function_arn": ARN + "guard"},
                        {
                            "event": "pre_response",
                            "type": "http",
                            "url": "https://policy.example.com/hook",
                            "headers": {"Authorization": "Bearer ${secret:policy-token}"},
                        },
                    ],
                },
                "b": {"description": "d", "model": "m", "sub_agents": ["a"]},
            },
        }
    )


def _statements(template: dict[str, Any], agent: str) -> list[dict[str, Any]]:
    return function_statements(template["Resources"], agent_function_id(agent))


def test_rule_args_that_the_schemas_declare_validate(tmp_path: Path) -> None:
    text = h(
        """
        tools:
          charge:
            type: python
            handler: tools.billing:refund
            description: Charge.
            input_schema:
              type: object
              properties:
                amount: {type: number}
                order: {type: object, properties: {items: {type: array, items: {type: object, properties: {sku: {type: string}}}}}}
          free: {type: python, handler: tools.billing:quote, description: No schema.}
        hooks:
          - event: pre_tool_use
            match: [charge, free]
            type: rule
            rules:
              - {arg: amount, op: in, value: [1, 2, 3], else: deny}
              - {arg: "order.items[0].sku", op: starts_with, value: A, then: deny}
        agents:
          a:  #!
            description: d
            model: m
            tools: [charge, free]
            output_schema: {type: object, properties: {answer: {type: string}}}
            hooks:
              - {event: pre_response, type: rule, rules: [{arg: answer, op: contains, value: x, then: deny}]}
        """
    )
    spec_file, _ = _write_project(tmp_path, text)
    result = validate_file(spec_file)
    assert result.ok, "\n".join(map(str, result.issues))


def test_lambda_hooks_and_hook_secrets_are_granted_to_their_agents_only() -> None:
    template = build_template(_grants_spec())
    a, b = _statements(template, "a"), _statements(template, "b")
    hooks_a = next(s for s in a if s["Sid"] == "InvokeLambdaHooks")
    assert hooks_a["Resource"] == [ARN + "audit", ARN + "guard"]  # top level first
    hooks_b = next(s for s in b if s["Sid"] == "InvokeLambdaHooks")
    assert hooks_b["Resource"] == [ARN + "audit"]  # b hands off to a: a's own function asks
    secrets_a = json.dumps(next(s for s in a if s["Sid"] == "ReadReferencedSecrets"))
    assert "secret:policy-token-??????" in secrets_a
    assert not any(s["Sid"] == "ReadReferencedSecrets" for s in b)
    assert "Bearer" not in json.dumps(template)  # the reference never reaches the template


@pytest.mark.slow
def test_deployed_roles_invoke_exactly_their_agents_hook_functions() -> None:
    deployed = sam_transform(build_template(_grants_spec()))
    role_a = role_statements(deployed, f"{agent_function_id('a')}Role")
    role_b = role_statements(deployed, f"{agent_function_id('b')}Role")
    assert allowed(role_a, "lambda:InvokeFunction", ARN + "guard")
    assert allowed(role_a, "lambda:InvokeFunction", ARN + "audit")
    assert not allowed(role_b, "lambda:InvokeFunction", ARN + "guard")
    assert allowed(role_b, "lambda:InvokeFunction", ARN + "audit")
    assert not allowed(role_a, "lambda:InvokeFunction", ARN + "guard2")
    api = role_statements(deployed, "ApiFunctionRole")
    assert not allowed(api, "lambda:InvokeFunction", ARN + "guard")


def test_the_cli_shows_denials_and_failures_not_every_allow() -> None:
    import io

    from infra.local.progress import Progress
    from runtime.events import Event

    stream = io.StringIO()
    show = Progress(stream, enabled=True)
    base = {"hook": "hooks[0]", "type": "rule", "event": "pre_tool_use", "tool_name": "refund"}
    for data in (
        {**base, "decision": "allow", "reason": None},
        {**base, "decision": "deny", "reason": "bad id"},
        {**base, "type": "http", "decision": "allow", "reason": None, "error": "timed out"},
    ):
        show(Event(seq=0, type="hook_decision", at=0.0, run_id="r", data=data))
    assert stream.getvalue().splitlines() == [
        "    ⚑ pre_tool_use refund: deny (rule hook hooks[0]) · bad id",
        "    ⚑ pre_tool_use refund: allow (http hook hooks[0]) · timed out",
    ]
