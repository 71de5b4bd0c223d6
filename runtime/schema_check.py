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


def check(schema: dict[str, Any], data: Any) -> None:
    """Raise SchemaViolation when `data` does not satisfy `schema`."""
    import fastjsonschema

    validate = _compiled(json.dumps(schema, sort_keys=True))
    try:
        validate(data)
    except fastjsonschema.JsonSchemaValueException as exc:
        name = exc.name or "data"
        where = name.replace("data", "", 1).lstrip(".") or "(root)"
        message = (exc.message or "invalid").replace(name + " ", "", 1)
        raise SchemaViolation(f"{where}: {message}") from None
