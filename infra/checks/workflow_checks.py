"""Workflow checks on the raw data: every agent named exists, every template and condition
parses, and every reference names something that will be there when the step runs — the
workflow's input (its schema's properties), an earlier step (or the loop's own previous
result), `item` inside a map — down to a property of the step agent's `output_schema`.

Like infra.checks.references they read the data defensively and report with key paths, so the
author sees file:line errors for all of them at once.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from infra.checks.issues import RefProblem, did_you_mean
from infra.checks.issues import mapping as _mapping
from infra.checks.yamlsrc import Path_
from runtime.workflows.template import (
    REF_RE,
    Compare,
    Junction,
    TemplateError,
    condition_references,
    parse_condition,
    references,
)

RESERVED = ("input", "item")
DEFAULT_MAX_TURNS = 25  # runtime.spec.root.Defaults.max_turns


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def check_workflows(data: Any) -> list[RefProblem]:
    root = _mapping(data)
    agents = _mapping(root.get("agents"))
    models = _mapping(root.get("models"))
    problems: list[RefProblem] = []
    for name, raw in _mapping(root.get("workflows")).items():
        if name in agents:
            problems.append(
                RefProblem(
                    ("workflows", name),
                    f"{name!r} is also an agent's name; `agentfn run {name}` must mean one",
                    at_key=True,
                )
            )
        default_turns = _mapping(root.get("defaults")).get("max_turns")
        turns = default_turns if isinstance(default_turns, int) else DEFAULT_MAX_TURNS
        problems += _check_workflow(_mapping(raw), ("workflows", name), agents, models, turns)
    return problems


class _Scope:
    """What a reference may name at one point of a workflow."""

    def __init__(
        self,
        input_schema: Any,
        agents: dict[str, Any],
        models: dict[str, Any],
        max_turns: int = 25,
    ):
        self.input_schema = _mapping(input_schema) if input_schema is not None else None
        self.agents = agents
        self.models = models
        self.max_turns = max_turns  # the spec's default turn limit
        self.steps: dict[str, dict[str, Any]] = {}  # earlier steps: id → raw step

    def input_properties(self) -> dict[str, Any]:
        return _mapping(_mapping(self.input_schema).get("properties"))

    def problem(self, path: str, own: str | None = None, item: bool = False) -> str | None:
        head, *rest = path.split(".")
        if head == "item":
            return None if item else "`{item}` is only defined in a map step's input"
        if head == "input":
            return None
        if head in self.input_properties():
            return _schema_path_problem(self.input_properties()[head], rest, f"input {head!r}")
        if head in self.steps or head == own:
            step = self.steps.get(head) or {}
            return self._step_path_problem(head, step, rest)
        known = [*self.steps, *self.input_properties(), *RESERVED]
        hint = did_you_mean(head, known)
        if self.input_schema is None and head not in self.steps:
            hint = hint or " (a workflow without `input_schema` takes text: use {input})"
        return f"{{{path}}} names no input property or earlier step{hint}"

    def value_type(
        self, path: str, own: str | None = None, loop: dict[str, Any] | None = None
    ) -> str | None:
        """What the value at `path` is known to be, as a JSON type (`"text"`: a text
        result or input); None when the spec does not say."""
        head, *rest = path.split(".")
        schema: Any = None
        if head == "input" and not rest:
            return "text" if self.input_schema is None else _json_type(self.input_schema)
        if head in self.input_properties():
            schema = self.input_properties()[head]
        elif head in self.steps or head == own:
            step = (loop if head == own else None) or self.steps.get(head) or {}
            if "parallel" in step or "map" in step:
                if not rest:
                    return "array"
                branches = _list(step.get("parallel"))
                index = int(rest[0]) if rest[0].isdigit() else -1
                agent = (
                    _mapping(branches[index]).get("agent")
                    if 0 <= index < len(branches)
                    else _mapping(step.get("map")).get("agent")
                )
                rest = rest[1:]
            elif "llm" in step:
                schema = _mapping(step.get("llm")).get("output_schema")
                if schema is None:
                    return None if rest else "text"
                return _json_type(_schema_at(schema, rest))
            else:
                agent = step.get("agent") or _mapping(step.get("loop")).get("agent")
            schema = _mapping(self.agents.get(agent)).get("output_schema") if agent else None
            if schema is None and agent in self.agents:
                return None if rest else "text"
        for part in rest:
            schema = _mapping(schema)
            schema = (
                schema.get("items")
                if part.isdigit()
                else _mapping(schema.get("properties")).get(part)
            )
        return _json_type(schema)

    def _step_path_problem(self, step_id: str, step: dict[str, Any], rest: list[str]) -> str | None:
        if not rest:
            return None
        if "parallel" in step or "map" in step:  # a list of results
            if not rest[0].isdigit():
                return f"step {step_id!r} gives a list of results: index it, e.g. {{{step_id}.0}}"
            branches = _list(step.get("parallel"))
            index = int(rest[0])
            if branches and index >= len(branches):
                return f"step {step_id!r} has {len(branches)} branches"
            agent = (
                _mapping(branches[index]).get("agent")
                if branches
                else _mapping(step.get("map")).get("agent")
            )
            return self._agent_path_problem(agent, rest[1:], step_id)
        if "llm" in step:
            schema = _mapping(step.get("llm")).get("output_schema")
            if schema is None:
                return (
                    f"step {step_id!r} is an llm step without output_schema, so its result is "
                    "text: refer to the whole result, or give it an output_schema"
                )
            return _schema_path_problem(schema, rest, f"the output_schema of step {step_id!r}")
        agent = step.get("agent") or _mapping(step.get("loop")).get("agent")
        return self._agent_path_problem(agent, rest, step_id)

    def _agent_path_problem(self, agent: Any, rest: list[str], step_id: str) -> str | None:
        if not rest or not isinstance(agent, str):
            return None
        schema = _mapping(self.agents.get(agent)).get("output_schema")
        if schema is None:
            return (
                f"step {step_id!r}'s agent {agent!r} has no output_schema, so its result is "
                "text: refer to the whole result, or give the agent an output_schema"
            )
        return _schema_path_problem(schema, rest, f"the output_schema of {agent!r}")


def _json_type(schema: Any) -> str | None:
    """The schema's one JSON type, or None (no type, several, not a schema)."""
    kind = _mapping(schema).get("type")
    if isinstance(kind, list):
        return None if "boolean" in kind or len(kind) != 1 else str(kind[0])
    return kind if isinstance(kind, str) else None


def _schema_at(schema: Any, rest: list[str]) -> Any:
    for part in rest:
        schema = _mapping(schema)
        schema = (
            schema.get("items") if part.isdigit() else _mapping(schema.get("properties")).get(part)
        )
    return schema


def _lone_references(tree: Any) -> Iterator[str]:
    """The references a condition tests alone (`{ref}`, `not {ref}`)."""
    if isinstance(tree, Junction):
        for part in tree.parts:
            yield from _lone_references(part)
    elif isinstance(tree, Compare) and tree.op is None:
        yield tree.left.path


def _schema_path_problem(schema: Any, rest: list[str], what: str) -> str | None:
    for part in rest:
        schema = _mapping(schema)
        if part.isdigit() and "items" in schema:
            schema = schema["items"]
            continue
        properties = _mapping(schema.get("properties"))
        if not properties:
            return None  # nothing declared below here: anything may be there
        if part not in properties:
            return f"{what} has no property {part!r}{did_you_mean(part, properties)}"
        schema = properties[part]
        what = f"{what} property {part!r}"
    return None


def _check_workflow(
    workflow: dict[str, Any],
    base: Path_,
    agents: dict[str, Any],
    models: dict[str, Any],
    max_turns: int,
) -> Iterator[RefProblem]:
    scope = _Scope(workflow.get("input_schema"), agents, models, max_turns)
    for prop in scope.input_properties():
        if prop in RESERVED:
            yield RefProblem(
                (*base, "input_schema", "properties", prop),
                f"{prop!r} is reserved: rename the property",
                at_key=True,
            )
    for i, raw in enumerate(_list(workflow.get("steps"))):
        step = _mapping(raw)
        path: Path_ = (*base, "steps", i)
        step_id = step.get("id")
        if isinstance(step_id, str) and (
            step_id in RESERVED or step_id in scope.input_properties()
        ):
            yield RefProblem(
                (*path, "id"), f"step id {step_id!r} is also an input name; rename the step"
            )
        yield from _check_step(step, path, scope, step_id if isinstance(step_id, str) else None)
        if isinstance(step_id, str):
            scope.steps[step_id] = step


def _check_step(
    step: dict[str, Any], path: Path_, scope: _Scope, step_id: str | None
) -> Iterator[RefProblem]:
    if "agent" in step:
        yield from _agent_ref(step.get("agent"), (*path, "agent"), scope)
        yield from _template(step.get("input"), (*path, "input"), scope)
    for j, raw in enumerate(_list(step.get("parallel"))):
        branch = _mapping(raw)
        bpath = (*path, "parallel", j)
        yield from _agent_ref(branch.get("agent"), (*bpath, "agent"), scope)
        yield from _template(branch.get("input"), (*bpath, "input"), scope)
        yield from _condition(branch.get("when"), (*bpath, "when"), scope)
    if "map" in step:
        mapped = _mapping(step.get("map"))
        mpath = (*path, "map")
        yield from _agent_ref(mapped.get("agent"), (*mpath, "agent"), scope)
        yield from _template(mapped.get("input"), (*mpath, "input"), scope, item=True)
        over = mapped.get("over")
        if isinstance(over, str):
            match = REF_RE.fullmatch(over.strip())
            if match is None:
                yield RefProblem(
                    (*mpath, "over"), "`over` is one reference to a list, e.g. {plan.tasks}"
                )
            else:
                yield from _reference(match.group(1), (*mpath, "over"), scope)
    if "llm" in step:
        llm = _mapping(step.get("llm"))
        model = llm.get("model")
        if isinstance(model, str) and model not in scope.models:
            yield RefProblem(
                (*path, "llm", "model"),
                f"unknown model {model!r}{did_you_mean(model, scope.models)}",
            )
        yield from _template(llm.get("prompt"), (*path, "llm", "prompt"), scope)
    if "loop" in step:
        loop = _mapping(step.get("loop"))
        lpath = (*path, "loop")
        yield from _agent_ref(loop.get("agent"), (*lpath, "agent"), scope)
        yield from _template(loop.get("input"), (*lpath, "input"), scope, own=step_id, loop=step)
        yield from _condition(loop.get("until"), (*lpath, "until"), scope, own=step_id, loop=step)
    yield from _condition(step.get("when"), (*path, "when"), scope)
    yield from _step_turns(step, path, scope)


def _step_turns(step: dict[str, Any], path: Path_, scope: _Scope) -> Iterator[RefProblem]:
    """A step's `max_turns` lowers its runs' limit; each agent's own stays the ceiling."""
    turns = step.get("max_turns")
    if not isinstance(turns, int) or isinstance(turns, bool):
        return
    named = [step.get("agent")]
    named += [_mapping(b).get("agent") for b in _list(step.get("parallel"))]
    named += [_mapping(step.get(kind)).get("agent") for kind in ("map", "loop")]
    for agent in dict.fromkeys(a for a in named if isinstance(a, str) and a in scope.agents):
        own = _mapping(scope.agents[agent]).get("max_turns")
        ceiling = own if isinstance(own, int) else scope.max_turns
        if turns > ceiling:
            yield RefProblem(
                (*path, "max_turns"),
                f"{turns} is over the max_turns of agent {agent!r} ({ceiling}), the ceiling",
            )


def _agent_ref(agent: Any, path: Path_, scope: _Scope) -> Iterator[RefProblem]:
    if isinstance(agent, str) and agent not in scope.agents:
        yield RefProblem(path, f"unknown agent {agent!r}{did_you_mean(agent, scope.agents)}")


def _reference(
    ref: str,
    path: Path_,
    scope: _Scope,
    *,
    own: str | None = None,
    item: bool = False,
    loop: dict[str, Any] | None = None,
) -> Iterator[RefProblem]:
    if own is not None and loop is not None:
        scope.steps.setdefault(own, loop)
    try:
        message = scope.problem(ref, own=own, item=item)
    finally:
        if own is not None and loop is not None and scope.steps.get(own) is loop:
            del scope.steps[own]  # the loop's own id is in scope only inside it
    if message:
        yield RefProblem(path, message)


def _template(
    template: Any,
    path: Path_,
    scope: _Scope,
    *,
    own: str | None = None,
    item: bool = False,
    loop: dict[str, Any] | None = None,
) -> Iterator[RefProblem]:
    if not isinstance(template, str):
        return
    for ref in references(template):
        yield from _reference(ref, path, scope, own=own, item=item, loop=loop)


def _condition(
    condition: Any,
    path: Path_,
    scope: _Scope,
    *,
    own: str | None = None,
    loop: dict[str, Any] | None = None,
) -> Iterator[RefProblem]:
    if not isinstance(condition, str):
        return
    try:
        tree = parse_condition(condition)
    except TemplateError as exc:
        yield RefProblem(path, str(exc))
        return
    for ref in condition_references(tree):
        yield from _reference(ref, path, scope, own=own, loop=loop)
    for ref in _lone_references(tree):
        kind = scope.value_type(ref, own, loop)
        if kind not in (None, "boolean"):
            yield RefProblem(
                path,
                f"a lone {{{ref}}} holds only when the value is true, and it is "
                f"{'text' if kind == 'text' else f'of type {kind}'}: compare it instead, "
                f"e.g. {{{ref}}} == 'yes' or {{{ref}}} != null",
            )
