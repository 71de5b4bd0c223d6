"""Validate data against a JSON Schema at run time (tool arguments, structured output).

fastjsonschema compiles each schema once into Python code: fast per call, small to ship,
and imported only when a run first needs it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import lru_cache
from typing import Any


class SchemaViolation(ValueError):
    """The data does not satisfy the schema; the message says where and why."""


@lru_cache(maxsize=256)
def _compiled(schema_json: str) -> Callable[[Any], Any]:
    import fastjsonschema

    compiled: Callable[[Any], Any] = fastjsonschema.compile(json.loads(schema_json))
    return compiled


# Schemas come from the spec and live as long as it does: remember each one's compiled
# validator by identity, so the per-call cost is a dict lookup (the schema is kept alive
# alongside, so its id cannot be reused).
_BY_ID: dict[int, tuple[dict[str, Any], Callable[[Any], Any]]] = {}


def _validator(schema: dict[str, Any]) -> Callable[[Any], Any]:
    known = _BY_ID.get(id(schema))
    if known is not None and known[0] is schema:
        return known[1]
    validate = _compiled(json.dumps(schema, sort_keys=True))
    if len(_BY_ID) < 1024:
        _BY_ID[id(schema)] = (schema, validate)
    return validate


def check(schema: dict[str, Any], data: Any) -> None:
    """Raise SchemaViolation when `data` does not satisfy `schema`."""
    import fastjsonschema

    validate = _validator(schema)
    try:
        validate(data)
    except fastjsonschema.JsonSchemaValueException as exc:
        name = exc.name or "data"
        where = name.replace("data", "", 1).lstrip(".") or "(root)"
        message = (exc.message or "invalid").replace(name + " ", "", 1)
        raise SchemaViolation(f"{where}: {message}") from None
