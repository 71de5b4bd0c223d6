"""The eval file: `evals/*.yaml` beside the spec, each case validated at file:line:column.

Eval files are separate from agents.yaml on purpose: they are never deployed (the spec is
what `agentfn build` packages), they grow with every behaviour pinned down while a spec
stays small, and their cassettes (recorded model traffic) live beside them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)

from runtime.spec.models import ModelConfig
from runtime.spec.types import Name

MATCHERS = ("equals", "contains", "regex", "subset")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class Match(_Strict):
    """One argument matcher: exactly one of equals / contains / regex / subset (a JSON
    subset: every key and list item given must be in the actual value)."""

    equals: Any = None
    contains: str | None = None
    regex: str | None = None
    subset: Any = None

    @model_validator(mode="before")
    @classmethod
    def _bare(cls, value: Any) -> Any:
        """A bare value means `equals`; a mapping must use the matchers' keys only."""
        if not isinstance(value, dict):
            return {"equals": value}
        unknown = [key for key in value if key not in MATCHERS]
        if unknown:
            raise ValueError(
                f"an argument matcher has exactly one of {', '.join(MATCHERS)}; got "
                f"{', '.join(map(repr, unknown))} (to compare an object, write {{equals: …}} "
                "or {subset: …})"
            )
        return value

    @model_validator(mode="after")
    def _one(self) -> Match:
        given = [name for name in MATCHERS if name in self.model_fields_set]
        if len(given) != 1:
            raise ValueError(
                f"an argument matcher has exactly one of {', '.join(MATCHERS)}; got "
                f"{', '.join(given) or 'none'} (to compare an object, write {{equals: …}} "
                "or {subset: …})"
            )
        return self

    @field_validator("regex")
    @classmethod
    def _regex(cls, value: str | None) -> str | None:
        if value is not None:
            _compiles(value)
        return value

    @property
    def kind(self) -> str:
        return next(name for name in MATCHERS if name in self.model_fields_set)

    @property
    def value(self) -> Any:
        return getattr(self, self.kind)


def _compiles(pattern: str) -> None:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"invalid regular expression {pattern!r}: {exc}") from None


class ToolCallExpect(_Strict):
    tool: str = Field(min_length=1, description="The model-facing tool name.")
    agent: Name | None = Field(None, description="Only calls made by this agent.")
    args: dict[str, Match] = Field(default_factory=dict)
    success: bool | None = None


class ToolsExpect(_Strict):
    """`in_order`: exactly these calls in this order; `any_order`: exactly these calls in
    any order; `subset`: at least these calls, others allowed."""

    order: Literal["in_order", "any_order", "subset"] = "in_order"
    calls: list[ToolCallExpect] = Field(default_factory=list)


OneOrMany = str | list[str]


class AnswerExpect(_Strict):
    contains: OneOrMany | None = None
    not_contains: OneOrMany | None = None
    matches: str | None = None
    equals: Any = None

    @field_validator("matches")
    @classmethod
    def _regex(cls, value: str | None) -> str | None:
        if value is not None:
            _compiles(value)
        return value


class ResultExpect(_Strict):
    json_schema: dict[str, Any] | None = Field(None, alias="schema")
    subset: Any = None

    @field_validator("json_schema")
    @classmethod
    def _schema(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is not None:
            from jsonschema import Draft202012Validator
            from jsonschema.exceptions import SchemaError

            try:
                Draft202012Validator.check_schema(value)
            except SchemaError as exc:
                raise ValueError(f"not a valid JSON Schema: {exc.message}") from None
        return value


class JudgeExpect(_Strict):
    rubric: str = Field(min_length=1)
    model: Name | None = Field(None, description="Default: the file's `judge`.")
    threshold: float = Field(0.7, ge=0, le=1)


class Expect(_Strict):
    status: (
        Literal["succeeded", "failed", "cancelled", "awaiting_approval", "awaiting_input"] | None
    ) = None
    error_code: str | None = None
    max_turns: int | None = Field(None, ge=0)
    max_tokens: int | None = Field(None, ge=0)
    max_cost_usd: float | None = Field(None, ge=0)
    handoff: Name | None = Field(None, description="An agent that took the conversation over.")
    approval_asked: str | None = Field(None, description="A tool whose call waited for approval.")
    tools: ToolsExpect | None = None
    answer: AnswerExpect | None = None
    result: ResultExpect | None = None
    judge: JudgeExpect | None = None


class Approval(_Strict):
    tool: str = Field(min_length=1, description="The tool whose call this decides; * for any.")
    decision: Literal["approve", "reject"] = "approve"
    reason: str | None = None
    edit: dict[str, Any] | None = Field(None, description="Approve with these arguments.")


class Case(_Strict):
    name: Name
    agent: Name | None = None
    workflow: Name | None = None
    input: str | dict[str, Any] | None = None
    turns: list[str] | None = Field(None, min_length=1, description="One session, in order.")
    approvals: list[Approval] = Field(default_factory=list)
    replies: list[str] = Field(default_factory=list)
    repeat: int = Field(1, ge=1, le=100)
    pass_ratio: float = Field(1.0, ge=0, le=1)
    expect: Expect = Field(default_factory=Expect)

    @model_validator(mode="after")
    def _shape(self) -> Case:
        if (self.agent is None) == (self.workflow is None):
            raise ValueError("a case names exactly one of `agent` or `workflow`")
        if (self.input is None) == (self.turns is None):
            raise ValueError("a case has exactly one of `input` or `turns` (a conversation)")
        if self.workflow is not None and self.turns is not None:
            raise ValueError("`turns` is a conversation with an agent; a workflow takes `input`")
        if self.agent is not None and not isinstance(self.input, str | None):
            raise ValueError("an agent's `input` is text")
        return self

    @property
    def target(self) -> str:
        return self.agent or self.workflow or ""

    @property
    def messages(self) -> list[str]:
        return list(self.turns) if self.turns is not None else [str(self.input)]


class EvalFile(_Strict):
    version: Literal[1] = 1
    spec: str | None = Field(None, description="The spec, relative to this file.")
    models: dict[Name, ModelConfig] = Field(
        default_factory=dict, description="Models only the judges use (not deployed)."
    )
    judge: Name | None = Field(None, description="The judge model of cases that name none.")
    cases: list[Case] = Field(min_length=1)


_FILE = TypeAdapter(EvalFile)


@dataclass(frozen=True)
class EvalProblem:
    file: str
    line: int
    column: int
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}: {self.path}: {self.message}"


@dataclass
class LoadedEvals:
    path: Path
    spec_path: Path
    evals: EvalFile | None
    problems: list[EvalProblem] = field(default_factory=list)
    source: Any = None

    def cassette_dir(self) -> Path:
        return self.path.parent / "cassettes" / self.path.stem


def default_spec(eval_path: Path) -> Path:
    """agents.yaml beside the eval file, else in its parent (evals/ sits beside the spec)."""
    here = eval_path.parent / "agents.yaml"
    return here if here.exists() else eval_path.parent.parent / "agents.yaml"


def load_eval_file(path: Path, spec_override: Path | None = None) -> LoadedEvals:
    """Parse and validate one eval file; every problem located at file:line:column."""
    from infra.checks.issues import format_path
    from infra.checks.yamlsrc import YamlLoadError, read_yaml_file

    file = str(path)
    loaded = LoadedEvals(path, spec_override or default_spec(path), None)
    try:
        data, source = read_yaml_file(path)
    except OSError as exc:
        loaded.problems.append(EvalProblem(file, 0, 0, "(file)", f"cannot read: {exc.strerror}"))
        return loaded
    except YamlLoadError as exc:
        for p in exc.problems:
            loaded.problems.append(
                EvalProblem(
                    file, p.position.line, p.position.column, format_path(p.path), p.message
                )
            )
        return loaded
    loaded.source = source
    try:
        evals = _FILE.validate_python(data)
    except ValidationError as exc:
        for error in exc.errors():
            loc = tuple(e for e in error["loc"] if not _is_union_noise(e))
            if error["type"] == "union_tag_invalid":  # at the tag's own value
                loc = (*loc, str((error.get("ctx") or {}).get("discriminator", "")).strip("'"))
            message, at_key = _message(error)
            _, at = source.locate(loc, key=at_key)
            loaded.problems.append(EvalProblem(file, at.line, at.column, format_path(loc), message))
        loaded.problems = _dedupe(loaded.problems)
        return loaded
    if spec_override is None and evals.spec is not None:
        loaded.spec_path = (path.parent / evals.spec).resolve()
    loaded.evals = evals
    return loaded


def _is_union_noise(element: Any) -> bool:
    """Pydantic's union branch names in a location (`Match`, `str`, `list[any]`…)."""
    return isinstance(element, str) and (
        element in {"Match", "str", "int", "float", "bool", "none", "list[any]"}
        or element.startswith(("function-", "dict[", "list["))
        or element in {"scripted", "bedrock", "openai", "anthropic", "gemini", "ollama"}
        or element in {"azure_openai", "openai_compatible", "ai_gateway"}
    )


def _message(error: Any) -> tuple[str, bool]:
    kind, ctx, given = error["type"], error.get("ctx") or {}, error.get("input")
    if kind == "extra_forbidden":
        return f"unknown key {error['loc'][-1]!r}", True
    if kind == "missing":
        return f"missing required key {error['loc'][-1]!r}", True
    if kind == "string_pattern_mismatch":
        return f"{given!r} is not a name (letters, digits, '_' or '-', a letter first)", False
    if kind == "union_tag_invalid":
        from infra.checks.issues import did_you_mean

        expected = re.findall(r"'([^']*)'", str(ctx.get("expected_tags", "")))
        tag, key = ctx.get("tag"), str(ctx.get("discriminator", "")).strip("'")
        hint = did_you_mean(tag, expected)
        return f"unknown {key} {tag!r}{hint} (one of: {', '.join(expected)})", False
    message = re.sub(r"^(Value error|Assertion failed), ", "", error["msg"])
    if kind == "literal_error":
        message = f"expected {ctx.get('expected')}; got {given!r}"
    return message[:1].lower() + message[1:], False


def _dedupe(problems: list[EvalProblem]) -> list[EvalProblem]:
    """A union's branches each report at the same place: "input should be a valid string"
    and "… a valid list" become one line, "input should be a valid string or list"."""
    seen: dict[tuple[int, int, str], EvalProblem] = {}
    kinds: dict[tuple[int, int, str], list[str]] = {}
    prefix = "input should be a valid "
    for problem in problems:
        place = (problem.line, problem.column, problem.path)
        if problem.message.startswith(prefix) and place in kinds:
            kinds[place].append(problem.message.removeprefix(prefix))
            continue
        if problem.message.startswith(prefix):
            kinds[place] = [problem.message.removeprefix(prefix)]
        seen.setdefault((*place[:2], problem.message), problem)
    merged = []
    for problem in seen.values():
        place = (problem.line, problem.column, problem.path)
        if problem.message.startswith(prefix) and len(kinds.get(place, [])) > 1:
            problem = replace(problem, message=prefix + " or ".join(kinds[place]))
        merged.append(problem)
    return sorted(merged, key=lambda p: (p.line, p.column))


def reference_problems(loaded: LoadedEvals, spec: Any) -> list[EvalProblem]:
    """What names the spec must know: each case's agent or workflow, the agents a handoff
    names, each judge's model (the spec's or the eval file's own `models`)."""
    from infra.checks.issues import did_you_mean, format_path

    evals = loaded.evals
    assert evals is not None
    found: list[EvalProblem] = []

    def at(path: tuple[str | int, ...], message: str) -> None:
        _, where = loaded.source.locate(path)
        found.append(
            EvalProblem(str(loaded.path), where.line, where.column, format_path(path), message)
        )

    judges = {**spec.models, **evals.models}
    if evals.judge is not None and evals.judge not in judges:
        at(("judge",), f"unknown model {evals.judge!r}{did_you_mean(evals.judge, judges)}")
    clash = sorted(set(evals.models) & set(spec.models))
    for name in clash:
        at(("models", name), f"model {name!r} is already in {loaded.spec_path.name}")
    names: set[str] = set()
    for index, case in enumerate(evals.cases):
        here: tuple[str | int, ...] = ("cases", index)
        if case.name in names:
            at((*here, "name"), f"case {case.name!r} is named twice in this file")
        names.add(case.name)
        if case.agent is not None and case.agent not in spec.agents:
            hint = did_you_mean(case.agent, spec.agents)
            at((*here, "agent"), f"unknown agent {case.agent!r}{hint}")
        if case.workflow is not None and case.workflow not in spec.workflows:
            hint = did_you_mean(case.workflow, spec.workflows)
            at((*here, "workflow"), f"unknown workflow {case.workflow!r}{hint}")
        expect = case.expect
        if expect.handoff is not None and expect.handoff not in spec.agents:
            at((*here, "expect", "handoff"), f"unknown agent {expect.handoff!r}")
        if expect.judge is not None:
            model = expect.judge.model or evals.judge
            if model is None:
                at((*here, "expect", "judge"), "no judge model: set `model:` here or `judge:`")
            elif model not in judges:
                hint = did_you_mean(model, judges)
                at((*here, "expect", "judge", "model"), f"unknown model {model!r}{hint}")
    return found
