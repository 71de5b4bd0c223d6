"""Tool input schemas in the form Gemini accepts.

Gemini's `parameters` field is an OpenAPI 3.0 subset: `additionalProperties`, `$schema`,
`const`, a property without `type` (the default schema of Python tools, the built-in
`http_request`'s `body`, most MCP servers' schemas) are rejected with 400 INVALID_ARGUMENT.
Its `parametersJsonSchema` field takes JSON Schema instead ("This field is mutually
exclusive with parameters", https://ai.google.dev/api/caching#FunctionDeclaration), so
every tool kind is sent there, nearly as is.

A few keywords are still removed or rewritten, as pydantic-ai's Google profile does for
the same field against the real API (pydantic_ai/profiles/google.py): `$schema`,
`discriminator`, `examples`, `title` (googleapis/python-genai#1732); a `const` becomes a
one-value `enum`; a string `format` and the exclusive bounds move into the description.
What a keyword meant is kept wherever the field can say it.
"""

from __future__ import annotations

from typing import Any

_DROPPED = ("$schema", "discriminator", "examples", "title")
#: Keywords said in the description instead: (keyword, how the description names it).
_DESCRIBED = (
    ("exclusiveMinimum", "exclusive minimum"),
    ("exclusiveMaximum", "exclusive maximum"),
)
#: Keywords whose value is a map of name → subschema.
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
#: Keywords whose value is one subschema (`items` and `additionalProperties` may also be a
#: list or a boolean; those are handled by type).
_SCHEMAS = (
    "items",
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
)
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")


def _const_type(value: Any) -> str | None:
    if isinstance(value, bool):  # before int: bool is an int
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return None


def _node(schema: Any) -> Any:
    if not isinstance(schema, dict):
        return schema  # a boolean schema, or something that is not a schema at all
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _DROPPED or key == "const":
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: _node(sub) for name, sub in value.items()}
        elif key in _SCHEMAS:
            out[key] = [_node(s) for s in value] if isinstance(value, list) else _node(value)
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [_node(sub) for sub in value]
        else:
            out[key] = value
    if "const" in schema:
        out["enum"] = [schema["const"]]
        inferred = _const_type(schema["const"])
        if "type" not in out and inferred:
            out["type"] = inferred
    notes = [(name, out.pop(key)) for key, name in _DESCRIBED if key in out]
    if out.get("type") == "string" and isinstance(out.get("format"), str):
        notes.insert(0, ("format", out.pop("format")))
    notes = [(name, value) for name, value in notes if not isinstance(value, bool)]
    if notes:
        said = ", ".join(f"{name}: {value}" for name, value in notes)
        description = out.get("description")
        out["description"] = (
            f"{description} ({said})" if description else said[0].upper() + said[1:]
        )
    return out


def gemini_parameters(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` as a `parametersJsonSchema` value: an object schema (the field requires
    one; an MCP schema may omit the root `type`) with the keywords above adjusted."""
    converted = _node(schema or {})
    if not isinstance(converted, dict):
        converted = {}
    converted.setdefault("type", "object")
    return converted
