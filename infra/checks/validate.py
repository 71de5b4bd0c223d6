"""`agentfn validate`: every problem of a spec at once, each at file:line:column.

Two passes over the same YAML: pydantic checks structure and field rules; the reference
checks (infra.checks.references) check what spans sections. Pydantic's messages are rewritten
into the author's words (unknown key + "did you mean", missing key, wrong choice).
"""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from infra.checks import environments
from infra.checks.database_checks import check_databases
from infra.checks.hook_checks import check_hooks
from infra.checks.issues import SpecIssue, did_you_mean, format_path
from infra.checks.knowledge_checks import check_knowledge
from infra.checks.prompt_checks import check_prompts_and_llm_steps
from infra.checks.references import check_references
from infra.checks.run_limits import budget_problems, context_problems
from infra.checks.trigger_checks import check_triggers
from infra.checks.union_tags import missing_tag
from infra.checks.workflow_checks import check_workflows
from infra.checks.yamlsrc import (
    Path_,
    Position,
    SourceMap,
    YamlLoadError,
    load_yaml,
    read_spec_text,
)
from infra.sam.prices import with_prices
from runtime.spec import AgentfnSpec
from runtime.spec.environments import Environment, SpecFile
from runtime.spec.shared import SECRET_REF_PATTERN
from runtime.spec.types import NAME_PATTERN, Name

_PATTERN_HINTS = {
    NAME_PATTERN: "names start with a letter and use letters, digits, '_' or '-' (at most 64)",
    f"^{SECRET_REF_PATTERN}$": (
        "must be a secret reference ${secret:NAME} (declared under `secrets`), never a "
        "plaintext value"
    ),
}


_ENVIRONMENTS = TypeAdapter(dict[Name, Environment])


@dataclass
class ValidationResult:
    spec: AgentfnSpec | None
    issues: list[SpecIssue]
    data: Any = None  # the spec's YAML data (an environment's: resolved)
    source: SourceMap | None = None  # where each key path of `data` was written
    environments: list[str] = field(default_factory=list)  # declared, each one checked
    #: A key path of `data` as written in the file (under `environments.NAME` when the
    #: chosen environment supplied it).
    shown: Callable[[Path_], Path_] = field(default=lambda path: path)

    @property
    def ok(self) -> bool:
        return self.spec is not None and not self.issues


def validate_text(
    text: str, file: str, project_dir: Path, env: str | None = None
) -> ValidationResult:
    """Every problem of the file, its environments' included (each resolved and checked as
    the spec it makes); the spec is the base one, or environment `env` resolved."""
    try:
        data, source = load_yaml(text)
    except YamlLoadError as exc:
        return _load_failed(exc, file)
    if not isinstance(data, dict):
        return ValidationResult(
            None,
            [
                SpecIssue(
                    1, 1, "(top level)", "expected a mapping with `version` and `agents`", file
                )
            ],
        )

    base = {k: v for k, v in data.items() if k != environments.SECTION}
    spec, issues = _check(base, source, file, project_dir, _as_written)
    broken = _check_environment_shapes(data, source, file, issues)
    chosen, chosen_data, chosen_source = spec, base, source
    chosen_shown: Callable[[Path_], Path_] = _as_written
    declared = environments.names(data)
    if env is not None and env not in declared:
        where, at = source.locate((environments.SECTION,), key=True)
        known = ", ".join(declared) or "none declared"
        message = f"unknown environment {env!r}{did_you_mean(env, declared)} (known: {known})"
        issues.append(SpecIssue(at.line, at.column, format_path(where), message, file))
    for name in declared:
        if name in broken:
            continue  # its entries' own problems are reported; resolving would repeat them
        resolved, moved_source, moved = environments.resolve(data, source, name)
        shown = partial(environments.shown_path, name=name, moved=moved)
        env_spec, env_issues = _check(resolved, moved_source, file, project_dir, shown)
        seen = set(issues)
        issues += [
            replace(i, message=f"{i.message} (environment {name})")
            for i in env_issues
            if i not in seen
        ]
        if name == env:
            chosen, chosen_data, chosen_source = env_spec, resolved, moved_source
            chosen_shown = shown

    ordered = sorted(set(issues))
    if chosen is not None:
        chosen.at_project(project_dir)  # its relative paths start from the spec's folder
    return ValidationResult(
        chosen if not ordered else None, ordered, chosen_data, chosen_source, declared, chosen_shown
    )


def _as_written(path: Path_) -> Path_:
    return path


def _check(
    data: dict[str, Any],
    source: SourceMap,
    file: str,
    project_dir: Path,
    shown: Callable[[Path_], Path_],
) -> tuple[AgentfnSpec | None, list[SpecIssue]]:
    """One spec (no `environments`): its structure, its references, then on a valid spec
    what needs resolved models (context windows, budgets)."""

    def issue(path: Path_, position: Position, message: str) -> SpecIssue:
        return SpecIssue(position.line, position.column, format_path(shown(path)), message, file)

    issues: list[SpecIssue] = []
    reported: set[Path_] = set()
    spec: AgentfnSpec | None = None
    try:
        spec = AgentfnSpec.model_validate(data)
    except ValidationError as exc:
        for error in exc.errors(include_url=False):
            path, message, at_key = _explain(error, data)
            where, position = source.locate(path, key=at_key)
            reported.add(where)
            issues.append(issue(path, position, message))

    checks = [*check_references(data, project_dir), *check_hooks(data, project_dir)]
    checks += check_prompts_and_llm_steps(data, project_dir)
    checks += check_databases(data, project_dir) + check_knowledge(data, project_dir)
    for problem in [*checks, *check_workflows(data), *check_triggers(data)]:
        where, position = source.locate(problem.path, key=problem.at_key)
        if where in reported and where == problem.path:
            continue  # already explained by the structural pass
        issues.append(issue(problem.path, position, problem.message))

    if spec is not None and not issues:  # on a valid spec: windows need resolved models
        spec = with_prices(spec)
        for problem in [*context_problems(spec), *budget_problems(spec)]:
            _where, position = source.locate(problem.path, key=problem.at_key)
            issues.append(issue(problem.path, position, problem.message))
    return (spec if not issues else None), issues


def _check_environment_shapes(
    data: dict[str, Any], source: SourceMap, file: str, issues: list[SpecIssue]
) -> set[str]:
    """The `environments` section's structure (appended to `issues`); the names of the
    environments that have a problem."""
    if environments.SECTION not in data:
        return set()
    broken: set[str] = set()
    try:
        _ENVIRONMENTS.validate_python(data[environments.SECTION])
    except ValidationError as exc:
        for error in exc.errors(include_url=False):
            error = {**error, "loc": (environments.SECTION, *error["loc"])}
            path, message, at_key = _explain(error, data)
            _where, position = source.locate(path, key=at_key)
            issues.append(
                SpecIssue(position.line, position.column, format_path(path), message, file)
            )
            if len(path) > 1:
                broken.add(str(path[1]))
    return broken


def validate_file(path: Path, env: str | None = None) -> ValidationResult:
    try:
        text = read_spec_text(path)
    except OSError as exc:
        return ValidationResult(
            None, [SpecIssue(0, 0, "(file)", f"cannot read: {exc.strerror or exc}", str(path))]
        )
    except YamlLoadError as exc:
        return _load_failed(exc, str(path))
    return validate_text(text, str(path), path.resolve().parent, env)


def _load_failed(exc: YamlLoadError, file: str) -> ValidationResult:
    return ValidationResult(
        None,
        [
            SpecIssue(p.position.line, p.position.column, format_path(p.path), p.message, file)
            for p in exc.problems
        ],
    )


def _explain(error: Any, data: Any) -> tuple[Path_, str, bool]:
    """(key path in the YAML, message in the author's words, report at the key?)."""
    loc: tuple[Any, ...] = tuple(error["loc"])
    kind = error["type"]
    ctx = error.get("ctx") or {}
    given = error.get("input")
    if loc and loc[-1] == "[key]":
        path = _yaml_path(loc[:-1], data)
        hint = _PATTERN_HINTS.get(ctx.get("pattern", ""), error["msg"])
        return path, f"invalid name {path[-1]!r}: {hint}", True
    path = _yaml_path(loc, data)
    if kind == "extra_forbidden":
        allowed = _allowed_keys(loc[:-1], data)
        return path, f"unknown key {loc[-1]!r}{did_you_mean(loc[-1], allowed)}", True
    if kind == "missing":
        # Reported where the mapping that lacks it is named (its key), not at a sibling.
        return path, f"missing required key {loc[-1]!r}", True
    if kind in {"union_tag_invalid", "union_tag_not_found"}:
        key = ctx.get("discriminator", "").strip("'")
        expected = _quoted(ctx.get("expected_tags", ""))
        if kind == "union_tag_not_found":
            return path, missing_tag(key, loc, given), True
        tag = ctx.get("tag")
        hint = did_you_mean(tag, expected)
        return (*path, key), f"unknown {key} {tag!r}{hint} (one of: {', '.join(expected)})", False
    if kind == "literal_error":
        expected = _quoted(ctx.get("expected", ""))
        return (
            path,
            f"expected one of: {', '.join(expected)}; got {given!r}{did_you_mean(given, expected)}",
            False,
        )
    if kind == "string_pattern_mismatch":
        hint = _PATTERN_HINTS.get(ctx.get("pattern", ""), f"does not match {ctx.get('pattern')}")
        return path, f"{given!r}: {hint}", False
    message = re.sub(r"^(Value error|Assertion failed), ", "", error["msg"])
    if (
        kind not in {"value_error", "assertion_error"}
        and given is not None
        and not isinstance(given, dict | list)
    ):
        message += f" (got {given!r})"
    return path, message[:1].lower() + message[1:], False


def _quoted(text: str) -> list[str]:
    """Choices out of pydantic's "'a', 'b' or 'c'" (numbers come unquoted: "1 or 2")."""
    return re.findall(r"'([^']*)'", text) or [p for p in re.split(r", | or ", text) if p]


def _yaml_path(loc: tuple[Any, ...], data: Any) -> Path_:
    """Drop location elements that are not in the YAML (a discriminated union's tag)."""
    path: list[str | int] = []
    node = data
    for element in loc:
        if (isinstance(node, dict) and element in node) or (
            isinstance(node, list) and isinstance(element, int) and element < len(node)
        ):
            path.append(element)
            node = node[element]
        elif not (isinstance(node, dict) and isinstance(element, str) and _is_tag(node, element)):
            path.append(element)
            node = None
    return tuple(path)


def _is_tag(node: dict[str, Any], element: str) -> bool:
    return element in {node.get("provider"), node.get("type"), node.get("transport")}


def _allowed_keys(loc: tuple[Any, ...], data: Any) -> list[str]:
    """The keys a model accepts at `loc`, found by walking the file's type annotations."""
    annotation: Any = SpecFile
    for element in loc:
        annotation = _step(annotation, element)
        if annotation is None:
            return []
    annotation = _unwrap(annotation, None)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [f.alias or n for n, f in annotation.model_fields.items()]
    return []


def _unwrap(annotation: Any, element: Any) -> Any:
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin in {typing.Union, types.UnionType}:
            members = [a for a in typing.get_args(annotation) if a is not type(None)]
            tagged = [m for m in members if _tag_of(m) == element]
            annotation = tagged[0] if tagged else members[0]
        else:
            return annotation


def _tag_of(model: Any) -> Any:
    if isinstance(model, type) and issubclass(model, BaseModel):
        for key in ("provider", "type", "transport"):
            field = model.model_fields.get(key)
            if field is not None:
                args = typing.get_args(field.annotation)
                return args[0] if args else None
    return None


def _step(annotation: Any, element: Any) -> Any:
    annotation = _unwrap(annotation, element)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        if _tag_of(annotation) == element:
            return annotation  # a union tag in the location: stay on this model
        for name, field in annotation.model_fields.items():
            if element in {name, field.alias}:
                return field.annotation
        return None
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is dict:
        return args[1]
    if origin is list:
        return args[0]
    return None
