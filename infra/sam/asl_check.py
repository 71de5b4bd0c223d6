"""A structural check of an Amazon States Language definition: what Step Functions refuses at
deploy time (or a run finds out too late) that cfn-lint, `sam validate` and moto let through.

asl-validator (npm, run by tests/infra/sam/test_asl_validity.py) checks the JSON schema, paths and
duplicate names; this module checks the graph, in plain Python, so `agentfn build` refuses a
broken definition itself (asl.definition and workflow_asl.definition call `checked`):

- every state name is unique across the whole machine, nested Map iterators and Parallel
  branches included (the States Language requires it; moto does not check it);
- names are 1 to 80 characters of `A-Za-z0-9_-` (Step Functions' limit, and the characters its
  CloudWatch logging accepts);
- every `StartAt`, `Next`, `Default`, Choice rule and Catch target names a state of its own
  scope (a nested machine cannot jump out, nor the outer one in);
- every state is reachable from its scope's `StartAt` (the service refuses unreachable ones);
- from every state a terminal state (Succeed, Fail, `End: true`) is reachable, so no state
  leads only into a loop that can never end.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

MAX_STATE_NAME = 80
NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,80}$")


class AslError(ValueError):
    """A generated definition Step Functions would refuse (or could never finish)."""


def _scopes(machine: dict[str, Any], where: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every (state machine or nested machine) of `machine`, itself first, with where it is."""
    yield where, machine
    for name, state in (machine.get("States") or {}).items():
        if not isinstance(state, dict):
            continue
        for key in ("Iterator", "ItemProcessor"):
            if isinstance(state.get(key), dict):
                yield from _scopes(state[key], f"{where} > {name}")
        for i, branch in enumerate(state.get("Branches") or []):
            if isinstance(branch, dict):
                yield from _scopes(branch, f"{where} > {name}[{i}]")


def _targets(state: dict[str, Any]) -> list[tuple[str, Any]]:
    """(where in the state, target) of every transition out of `state`."""
    found: list[tuple[str, Any]] = []
    if "Next" in state:
        found.append(("Next", state["Next"]))
    if "Default" in state:
        found.append(("Default", state["Default"]))
    for i, rule in enumerate(state.get("Choices") or []):
        found.append((f"Choices[{i}].Next", rule.get("Next") if isinstance(rule, dict) else None))
    for i, catcher in enumerate(state.get("Catch") or []):
        found.append(
            (f"Catch[{i}].Next", catcher.get("Next") if isinstance(catcher, dict) else None)
        )
    return found


def _terminal(state: dict[str, Any]) -> bool:
    return state.get("Type") in ("Succeed", "Fail") or state.get("End") is True


def _scope_problems(where: str, machine: dict[str, Any]) -> list[str]:
    states = machine.get("States")
    if not isinstance(states, dict) or not states:
        return [f"{where}: no States"]
    problems: list[str] = []
    start = str(machine.get("StartAt"))
    if start not in states:
        problems.append(f"{where}: StartAt {start!r} is not a state of this scope")
    edges: dict[str, list[str]] = {}
    for name, state in states.items():
        if not isinstance(state, dict):
            problems.append(f"{where} > {name}: not an object")
            continue
        edges[name] = []
        outgoing = _targets(state)
        for field, target in outgoing:
            if target in states:
                edges[name].append(target)
            else:
                problems.append(
                    f"{where} > {name}: {field} {target!r} is not a state of this scope"
                )
        if not outgoing and not _terminal(state):
            problems.append(f"{where} > {name}: no transition and not terminal")
    reached = _reach({start} & set(edges), edges)
    for name in edges:
        if name not in reached:
            problems.append(f"{where} > {name}: unreachable from StartAt {start!r}")
    backwards: dict[str, list[str]] = {name: [] for name in edges}
    for name, targets in edges.items():
        for target in targets:
            if target in backwards:
                backwards[target].append(name)
    ending = _reach({n for n in edges if _terminal(states[n])}, backwards)
    for name in edges:
        if name not in ending:
            problems.append(f"{where} > {name}: no terminal state is reachable from it")
    return problems


def _reach(start: set[str], edges: dict[str, list[str]]) -> set[str]:
    seen, todo = set(start), list(start)
    while todo:
        for target in edges.get(todo.pop(), []):
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def problems(definition: dict[str, Any], label: str = "state machine") -> list[str]:
    """Everything wrong with `definition` by the rules above; empty when it is sound."""
    found: list[str] = []
    owner: dict[str, str] = {}
    for where, machine in _scopes(definition, label):
        for name in machine.get("States") or {}:
            if not NAME_RE.match(str(name)):
                found.append(
                    f"{where} > {name}: a state name is 1-{MAX_STATE_NAME} characters of "
                    f"A-Za-z0-9_- (got {len(str(name))})"
                )
            if name in owner:
                found.append(f"{where} > {name}: the name is used twice (also in {owner[name]})")
            owner.setdefault(name, where)
        found.extend(_scope_problems(where, machine))
    return found


def state_names(definition: dict[str, Any]) -> list[str]:
    """Every state name of the machine, nested ones included, in order (duplicates kept)."""
    return [str(n) for _, machine in _scopes(definition, "") for n in machine.get("States") or {}]


def checked(definition: dict[str, Any], label: str) -> dict[str, Any]:
    """`definition`, or AslError listing its problems (`agentfn build` prints it and exits 1)."""
    found = problems(definition, label)
    if found:
        listed = "; ".join(found[:10]) + (
            f"; and {len(found) - 10} more" if len(found) > 10 else ""
        )
        raise AslError(f"invalid state machine definition: {listed}")
    return definition
