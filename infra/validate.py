"""`agentfn validate`: every problem of a spec at once, each at file:line:column.

Two passes over the same YAML: pydantic checks structure and field rules; the reference
checks (infra.references) check what spans sections. Pydantic's messages are rewritten
into the author's words (unknown key + "did you mean", missing key, wrong choice).
"""

from __future__ import annotations

import re
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from infra.database_checks import check_databases
from infra.hook_checks import check_hooks
from infra.issues import SpecIssue, did_you_mean, format_path
from infra.knowledge_checks import check_knowledge
from infra.prices import with_prices
from infra.prompt_checks import check_prompts_and_llm_steps
from infra.references import check_references
from infra.run_limits import budget_problems, context_problems
from infra.workflow_checks import check_workflows
from infra.yamlsrc import Path_, YamlLoadError, load_yaml, read_spec_text
from runtime.spec import AgentfnSpec
from runtime.spec.types import NAME_PATTERN, SECRET_REF_PATTERN

_PATTERN_HINTS = {
    NAME_PATTERN: "names start with a letter and use letters, digits, '_' or '-' (at most 64)",
    f"^{SECRET_REF_PATTERN}$": (
        "must be a secret reference ${secret:NAME} (declared under `secrets`), never a "
        "plaintext value"
    ),
}


@dataclass
class ValidationResult:
    spec: AgentfnSpec | None
    issues: list[SpecIssue]
    data: Any = None

    @property
    def ok(self) -> bool:
        return self.spec is not None and not self.issues


def validate_text(text: str, file: str, project_dir: Path) -> ValidationResult:
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
            issues.append(
                SpecIssue(position.line, position.column, format_path(path), message, file)
            )

    checks = [*check_references(data, project_dir), *check_hooks(data, project_dir)]
    checks += check_prompts_and_llm_steps(data, project_dir)
    checks += check_databases(data, project_dir) + check_knowledge(data, project_dir)
    for problem in [*checks, *check_workflows(data)]:
        where, position = source.locate(problem.path, key=problem.at_key)
        if where in reported and where == problem.path:
            continue  # already explained by the structural pass
        issues.append(
            SpecIssue(
                position.line, position.column, format_path(problem.path), problem.message, file
            )
        )

    if spec is not None and not issues:  # on a valid spec: windows need resolved models
        spec = with_prices(spec)
        for problem in [*context_problems(spec), *budget_problems(spec)]:
            _where, position = source.locate(problem.path, key=problem.at_key)
            issues.append(
                SpecIssue(
                    position.line, position.column, format_path(problem.path), problem.message, file
                )
            )

    ordered = sorted(set(issues))
    if spec is not None:
        spec.at_project(project_dir)
    return ValidationResult(spec if not ordered else None, ordered, data)


def validate_file(path: Path) -> ValidationResult:
    try:
        text = read_spec_text(path)
    except OSError as exc:
        return ValidationResult(
            None, [SpecIssue(0, 0, "(file)", f"cannot read: {exc.strerror or exc}", str(path))]
        )
    except YamlLoadError as exc:
        return _load_failed(exc, str(path))
    return validate_text(text, str(path), path.resolve().parent)


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
            return path, _missing_tag(key, loc, given), True
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


def _missing_tag(key: str, loc: tuple[Any, ...], given: Any) -> str:
    """`missing required key 'transport' ('stdio' or 'http')`, and the keys that belong to
    none of the kinds (a block pasted under the wrong section shows itself)."""
    members = _union_members(loc)
    tags = [t for m in members for t in _literal_values(m, key)]
    known = {
        name
        for m in members
        for name, field in m.model_fields.items()
        for name in (name, field.alias)
        if name
    }
    message = f"missing required key {key!r}"
    if tags:
        message += f" (one of: {', '.join(repr(t) for t in tags)})"
    unknown = [k for k in given if k not in known] if isinstance(given, dict) else []
    if unknown:
        message += f"; {', '.join(repr(k) for k in unknown)} {'is' if len(unknown) == 1 else 'are'}"
        message += f" not {'a key' if len(unknown) == 1 else 'keys'} of this section"
    return message


def _union_members(loc: tuple[Any, ...]) -> list[Any]:
    """The models of the discriminated union at `loc` of the spec (for its tags and keys)."""
    import typing

    from pydantic import BaseModel

    from runtime.spec import AgentfnSpec

    annotation: Any = AgentfnSpec
    for element in loc:
        annotation = _inner_type(annotation)
        origin = typing.get_origin(annotation)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            field = annotation.model_fields.get(str(element))
            if field is None:
                field = next(
                    (f for f in annotation.model_fields.values() if f.alias == element), None
                )
            if field is None:
                return []
            annotation = field.annotation
        elif origin in (dict, list):
            annotation = typing.get_args(annotation)[-1]
        else:
            return []
    annotation = _inner_type(annotation)
    return [m for m in typing.get_args(annotation) if isinstance(m, type)]


def _inner_type(annotation: Any) -> Any:
    """Through Annotated[…] and Optional[…] to the type inside."""
    import types
    import typing

    while True:
        if typing.get_origin(annotation) is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
            continue
        args = typing.get_args(annotation)
        if isinstance(annotation, types.UnionType) and type(None) in args and len(args) == 2:
            annotation = next(a for a in args if a is not type(None))
            continue
        return annotation


def _literal_values(model: Any, key: str) -> list[Any]:
    import typing

    field = model.model_fields.get(key)
    if field is None:
        return []
    annotation = _inner_type(field.annotation)
    return (
        list(typing.get_args(annotation)) if typing.get_origin(annotation) is typing.Literal else []
    )


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
    """The keys a model accepts at `loc`, found by walking the spec's type annotations."""
    annotation: Any = AgentfnSpec
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
