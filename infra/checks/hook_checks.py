"""`agentfn validate` checks of hooks that the models alone cannot make: a python hook's
handler lives in the project's tools package, a rule's regex is safe to run on any text,
a rule's `arg` is in what it will test, `match` patterns name tools an agent has, and
credential headers are secret references.

Like infra.checks.references, they read the raw YAML data defensively, so each problem is reported
at its line even when the structure has errors elsewhere.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from infra.checks.issues import RefProblem, did_you_mean
from infra.checks.issues import mapping as _mapping
from infra.checks.schema_checks import SPEC_REGEX_WORK
from infra.checks.tool_refs import SENSITIVE_HEADER, approval_matches, check_python_handler
from infra.checks.yamlsrc import Path_
from runtime.engine.hook_rules import parse_path
from runtime.safety.regex_safety import Budget, regex_problem
from runtime.spec.hooks import ARG_PATH_PATTERN
from runtime.spec.shared import SECRET_REF_RE

ARG_PATH = re.compile(ARG_PATH_PATTERN)


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def hook_lists(root: dict[str, Any]) -> Iterator[tuple[Path_, list[Any], str | None]]:
    """(where, the hooks declared there, the agent they belong to or None for all)."""
    yield ("hooks",), _list(root.get("hooks")), None
    yield ("defaults", "hooks"), _list(_mapping(root.get("defaults")).get("hooks")), None
    for name, agent in _mapping(root.get("agents")).items():
        yield ("agents", name, "hooks"), _list(_mapping(agent).get("hooks")), name


def check_hooks(root: dict[str, Any], project_dir: Path) -> Iterator[RefProblem]:
    package = root.get("tools_package", "tools")
    budget = Budget(SPEC_REGEX_WORK)  # shared by every rule's patterns
    agents = _mapping(root.get("agents"))
    everyone = sorted(
        {r for a in agents.values() for r in _list(_mapping(a).get("tools")) if isinstance(r, str)}
    )
    for base, hooks, agent in hook_lists(root):
        offered = everyone
        if agent is not None:
            offered = [r for r in _list(_mapping(agents[agent]).get("tools")) if isinstance(r, str)]
        for index, raw in enumerate(hooks):
            hook = _mapping(raw)
            path: Path_ = (*base, index)
            handler = hook.get("handler")
            if hook.get("type") == "python" and isinstance(handler, str):
                yield from check_python_handler(handler, package, project_dir, (*path, "handler"))
            yield from _check_rules(_list(hook.get("rules")), (*path, "rules"), budget)
            yield from _check_args(root, hook, (*path, "rules"), agent)
            yield from _check_match(hook.get("match"), (*path, "match"), offered, agent)
            for header, value in _mapping(hook.get("headers")).items():
                if (
                    isinstance(header, str)
                    and isinstance(value, str)
                    and SENSITIVE_HEADER.search(header)
                    and not SECRET_REF_RE.search(value)
                ):
                    yield RefProblem(
                        (*path, "headers", header),
                        f"header {header!r} looks like a credential written in plaintext; "
                        "declare it under `secrets` and write ${secret:NAME}",
                    )


def _check_match(
    match: Any, path: Path_, offered: list[str], agent: str | None
) -> Iterator[RefProblem]:
    """Every `match` pattern selects a tool (a typo is an error, not a hook that never
    fires): of the agent for its own hooks, of some agent for top-level and defaults ones."""
    patterns = match if isinstance(match, list) else [match]
    for position, pattern in enumerate(patterns):
        if not isinstance(pattern, str) or any(approval_matches(pattern, r) for r in offered):
            continue
        whose = "this agent's" if agent is not None else "any agent's"
        yield RefProblem(
            (*path, position) if isinstance(match, list) else path,
            f"{pattern!r} matches none of {whose} tools{did_you_mean(pattern, offered)}",
        )


def _check_rules(rules: list[Any], path: Path_, budget: Budget) -> Iterator[RefProblem]:
    """A `matches` pattern runs on text a model (or a caller) chose: refuse the ones that
    can backtrack catastrophically. Invalid ones are reported by the model already."""
    for index, raw in enumerate(rules):
        rule = _mapping(raw)
        value = rule.get("value")
        if str(rule.get("op", "")).removeprefix("not_") != "matches" or not isinstance(value, str):
            continue
        try:
            re.compile(value)
        except (re.error, OverflowError, RecursionError):
            continue
        problem = regex_problem(value, budget)
        if problem:
            yield RefProblem((*path, index, "value"), problem)


def _check_args(
    root: dict[str, Any], hook: dict[str, Any], path: Path_, agent: str | None
) -> Iterator[RefProblem]:
    """A rule's `arg` must be in what the rule tests: an argument of every tool the hook
    applies to whose `input_schema` the spec declares (`pre_tool_use`), a key of the
    agent's `output_schema` (`pre_response`; without one the answer is text and has no
    keys). Otherwise the rule could never be evaluated: a typo would deny (or, with
    `on_error: allow`, pass) every call instead of checking it. Tools whose schema is
    known only at run time (MCP, built-ins, a python tool's signature) are checked then."""
    if hook.get("type") != "rule" or hook.get("event") not in ("pre_tool_use", "pre_response"):
        return
    targets = _targets(root, hook, agent)
    for index, raw in enumerate(_list(hook.get("rules"))):
        arg = _mapping(raw).get("arg")
        if not isinstance(arg, str) or not ARG_PATH.match(arg):
            continue  # no arg, or one the model reports as malformed
        steps = parse_path(arg)
        for name, schema, kind in targets:
            problem = _arg_problem(arg, steps, name, schema, kind)
            if problem is not None:
                yield RefProblem((*path, index, "arg"), problem)
                break


def _targets(
    root: dict[str, Any], hook: dict[str, Any], agent: str | None
) -> list[tuple[str, Any, str]]:
    """(name, schema, "tool" or "agent") for what the hook's rules will read."""
    agents = _mapping(root.get("agents"))
    names = [agent] if agent is not None else [a for a in agents if isinstance(a, str)]
    if hook.get("event") == "pre_response":
        return [(a, _mapping(agents[a]).get("output_schema"), "agent") for a in names]
    tools = _mapping(root.get("tools"))
    match = hook.get("match")
    patterns = [match] if isinstance(match, str) else _list(match) if match else ["*"]
    found: dict[str, Any] = {}
    for name in names:
        for ref in _list(_mapping(agents[name]).get("tools")):
            if not isinstance(ref, str) or ref in found or not isinstance(tools.get(ref), dict):
                continue
            if any(isinstance(p, str) and fnmatch.fnmatchcase(ref, p) for p in patterns):
                schema = tools[ref].get("input_schema")
                if isinstance(schema, dict):
                    found[ref] = schema
    return [(ref, schema, "tool") for ref, schema in found.items()]


def _arg_problem(
    arg: str, steps: tuple[str | int, ...], name: str, schema: Any, kind: str
) -> str | None:
    if kind == "agent" and not isinstance(schema, dict):
        return (
            f"agent {name} answers in text (it has no output_schema): a pre_response rule "
            f"cannot read `{arg}` in it; leave out `arg` to test the whole answer"
        )
    if resolves(schema, steps) is not False:
        return None
    if kind == "agent":
        return f"`{arg}` is not in agent {name}'s output_schema"
    declared = sorted(k for k in _mapping(schema.get("properties")) if isinstance(k, str))
    has = f" (its input_schema has {', '.join(declared)})" if declared else ""
    hint = did_you_mean(steps[0], declared) if len(steps) == 1 else ""
    return f"`{arg}` is not an argument of {name}{has}{hint}"


def resolves(schema: Any, steps: tuple[str | int, ...]) -> bool | None:
    """Whether a JSON Schema has a value at `steps`: True, False, or None when the schema
    cannot say (a `$ref`, a free-form object or array)."""
    if not isinstance(schema, dict) or "$ref" in schema:
        return None
    branches = [b for key in ("anyOf", "oneOf", "allOf") for b in _list(schema.get(key))]
    answers = [resolves(b, steps) for b in branches]
    if True in answers:
        return True
    if not steps:
        return True
    own = _own_step(schema, steps)
    if own is not False or not branches:
        return own
    return None if None in answers else False


def _own_step(schema: dict[str, Any], steps: tuple[str | int, ...]) -> bool | None:
    step, rest = steps[0], steps[1:]
    if isinstance(step, int):
        items = schema.get("items")
        prefix = _list(schema.get("prefixItems"))
        if step < len(prefix):
            return resolves(prefix[step], rest)
        if isinstance(items, dict):
            return resolves(items, rest)
        kind = schema.get("type")
        return (
            False if kind is not None and kind != "array" and "array" not in _list(kind) else None
        )
    properties = schema.get("properties")
    if isinstance(properties, dict) and step in properties:
        return resolves(properties[step], rest)
    for pattern, sub in _mapping(schema.get("patternProperties")).items():
        if isinstance(pattern, str) and re.search(pattern, step):
            return resolves(sub, rest)
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        return resolves(extra, rest)
    if isinstance(properties, dict) or extra is False:
        return False  # the schema lists its keys, and this is not one of them
    kind = schema.get("type")
    if kind is not None and kind != "object" and "object" not in _list(kind):
        return False
    return None
