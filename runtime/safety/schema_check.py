"""Validate data against a JSON Schema at run time (tool arguments, structured output).

fastjsonschema compiles each schema once into Python code: fast per call, small to ship,
and imported only when a run first needs it.

Schemas are not all the author's: an MCP server sends its tools' schemas at run time. So a
schema is used only after runtime.safety.schema_safety finds nothing wrong with it (no remote or
file `$ref`, no reference loop, no pattern that backtracks catastrophically), and it is
compiled with a resolver that refuses every fetch, whatever the reference looks like. A
schema that still cannot be used raises SchemaUnusable, saying why: the caller fails that
one tool (or answer), never the run.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from functools import lru_cache
from typing import Any

from runtime.safety.schema_safety import schema_problems


class SchemaViolation(ValueError):
    """The data does not satisfy the schema; the message says where and why."""


class SchemaUnusable(SchemaViolation):
    """The schema itself cannot be used (unsafe, or does not compile); the message says why.

    A SchemaViolation too, so a caller that only knows about bad data still turns it into
    an error result instead of a crash."""


class _Refused(Exception):
    pass


def _refuse(uri: str) -> Any:
    raise _Refused(f"it refers to {uri!r}, and agentfn never fetches schemas")


class _NoFetching(Mapping[str, Callable[[str], Any]]):
    """fastjsonschema's handlers by URI scheme; any scheme it has no handler for is fetched
    with urlopen (http, https, ftp, file, data). This one has a refusal for every scheme."""

    def __getitem__(self, scheme: str) -> Callable[[str], Any]:
        return _refuse

    def __contains__(self, scheme: object) -> bool:
        return True

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


def _compile(schema: dict[str, Any]) -> Callable[[Any], Any]:
    import fastjsonschema

    compiled: Callable[[Any], Any] = fastjsonschema.compile(schema, handlers=_NoFetching())
    return compiled


@lru_cache(maxsize=256)
def _compiled(schema_json: str) -> Callable[[Any], Any] | str:
    """The validator of a schema (as canonical JSON), or why there can be none."""
    schema = json.loads(schema_json)
    try:
        problems = schema_problems(schema)
    except RecursionError:
        return "it is nested too deeply to check"
    except Exception as exc:  # a schema nobody foresaw: refused, never a failed run
        return f"it cannot be checked ({type(exc).__name__}: {exc})"
    if problems:
        return problems[0].describe()
    return _compile_or_reason(schema)


def _compile_or_reason(schema: dict[str, Any]) -> Callable[[Any], Any] | str:
    try:
        return _compile(schema)
    except _Refused as exc:
        return str(exc)
    except Exception as exc:  # a definition error, a bad regex, generated code too deep…
        return f"it does not compile ({type(exc).__name__}: {exc})"


def compile_problem(schema: dict[str, Any]) -> str | None:
    """Why the validator cannot compile `schema` (it never fetches), or None. For a schema
    that schema_problems already found nothing wrong with (the build does that first)."""
    try:
        compiled = _compile_or_reason(json.loads(json.dumps(schema)))
    except (TypeError, ValueError, RecursionError) as exc:
        return f"it is not JSON ({exc})"
    return compiled if isinstance(compiled, str) else None


# Schemas come from the spec and live as long as it does: remember each one's compiled
# validator by identity, so the per-call cost is a dict lookup (the schema is kept alive
# alongside, so its id cannot be reused).
_BY_ID: dict[int, tuple[dict[str, Any], Callable[[Any], Any] | str]] = {}


def _validator(schema: dict[str, Any]) -> Callable[[Any], Any] | str:
    known = _BY_ID.get(id(schema))
    if known is not None and known[0] is schema:
        return known[1]
    try:
        canonical = json.dumps(schema, sort_keys=True, default=str)
    except (TypeError, ValueError, RecursionError) as exc:
        validate: Callable[[Any], Any] | str = f"it is not JSON ({exc})"
    else:
        validate = _compiled(canonical)
    if len(_BY_ID) < 1024:
        _BY_ID[id(schema)] = (schema, validate)
    return validate


def unusable(schema: dict[str, Any]) -> str | None:
    """Why `schema` cannot be used to check anything, or None when it can."""
    validate = _validator(schema)
    return validate if isinstance(validate, str) else None


def check(schema: dict[str, Any], data: Any) -> None:
    """Raise SchemaViolation when `data` does not satisfy `schema`, SchemaUnusable when the
    schema cannot be used."""
    import fastjsonschema

    validate = _validator(schema)
    if isinstance(validate, str):
        raise SchemaUnusable(f"the schema cannot be used: {validate}")
    try:
        validate(data)
    except fastjsonschema.JsonSchemaValueException as exc:
        name = exc.name or "data"
        where = name.replace("data", "", 1).lstrip(".") or "(root)"
        message = (exc.message or "invalid").replace(name + " ", "", 1)
        raise SchemaViolation(f"{where}: {message}") from None
    except RecursionError:  # a recursive schema and a value nested deeper than Python goes
        raise SchemaViolation("(root): the value is nested too deeply to check") from None
