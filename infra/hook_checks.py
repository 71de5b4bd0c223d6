"""`agentfn validate` checks of hooks that the models alone cannot make: a python hook's
handler lives in the project's tools package, a rule's regex is safe to run on any text,
`match` patterns name tools an agent has, and credential headers are secret references.

Like infra.references, they read the raw YAML data defensively, so each problem is reported
at its line even when the structure has errors elsewhere.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from infra.issues import RefProblem, did_you_mean
from infra.issues import mapping as _mapping
from infra.schema_checks import SPEC_REGEX_WORK
from infra.yamlsrc import Path_
from runtime.regex_safety import Budget, regex_problem
from runtime.spec.types import SECRET_REF_RE


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def hook_lists(root: dict[str, Any]) -> Iterator[tuple[Path_, list[Any], str | None]]:
    """(where, the hooks declared there, the agent they belong to or None for all)."""
    yield ("hooks",), _list(root.get("hooks")), None
    yield ("defaults", "hooks"), _list(_mapping(root.get("defaults")).get("hooks")), None
    for name, agent in _mapping(root.get("agents")).items():
        yield ("agents", name, "hooks"), _list(_mapping(agent).get("hooks")), name


def is_hook_header(path: Path_) -> bool:
    """Is `path` a header value of a hook (where `${secret:NAME}` is resolved)?"""
    for start in ((), ("defaults",)):
        n = len(start)
        if path[:n] == start and len(path) == n + 4 and path[n] == "hooks":
            return path[n + 2] == "headers"
    return len(path) == 6 and path[0] == "agents" and path[2] == "hooks" and path[4] == "headers"


def check_hooks(root: dict[str, Any], project_dir: Path) -> Iterator[RefProblem]:
    from infra.references import SENSITIVE_HEADER, _check_python_handler

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
                yield from _check_python_handler(handler, package, project_dir, (*path, "handler"))
            yield from _check_rules(_list(hook.get("rules")), (*path, "rules"), budget)
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
    from infra.references import _approval_matches

    patterns = match if isinstance(match, list) else [match]
    for position, pattern in enumerate(patterns):
        if not isinstance(pattern, str) or any(_approval_matches(pattern, r) for r in offered):
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
