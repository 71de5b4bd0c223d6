"""The base of the run-time spec structs, and the two ways they are written out.

The structs (msgspec, generated from the pydantic models: runtime.spec.plain) are immutable
and refuse keys they do not know, as the models do; unlike the models they check only the
JSON types of what they are given, not the spec's rules, which `agentfn build` checked.
"""

from functools import cache
from typing import Any

import msgspec


class SpecStruct(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Every run-time spec section."""

    def to_compiled(self) -> dict[str, Any]:
        """Every field, by its key in agents.yaml: what the pydantic model's JSON dump gives."""
        out: dict[str, Any] = msgspec.to_builtins(self)
        return out


def set_values(value: Any) -> Any:
    """What `value` sets, fields left at their defaults out, by their keys in agents.yaml (tags
    such as `provider` are kept): the pydantic models' `model_dump(mode="json",
    by_alias=True, exclude_defaults=True)`, which run hashes were made of (runtime.engine.
    compat), so the hash of an agent does not change with the form of the spec."""
    if isinstance(value, msgspec.Struct):
        tag, fields = _shape(type(value))
        out = dict(tag)
        for name, key, default in fields:
            field = getattr(value, name)
            if default is _REQUIRED or field != default():
                out[key] = set_values(field)
        return out
    if isinstance(value, list):
        return [set_values(v) for v in value]
    if isinstance(value, dict):
        return {k: set_values(v) for k, v in value.items()}
    return value


def _REQUIRED() -> Any:
    raise AssertionError("a required field has no default")


@cache
def _shape(cls: type[msgspec.Struct]) -> tuple[dict[str, Any], tuple[tuple[str, str, Any], ...]]:
    """The tag of `cls` ({} or {tag_field: tag}), and (name, key, default maker) per field."""
    config = cls.__struct_config__
    tag = {config.tag_field: config.tag} if config.tag_field is not None else {}
    fields = []
    for field in msgspec.structs.fields(cls):
        if field.default is not msgspec.NODEFAULT:
            default: Any = (lambda value: lambda: value)(field.default)
        elif field.default_factory is not msgspec.NODEFAULT:
            default = field.default_factory
        else:
            default = _REQUIRED
        fields.append((field.name, field.encode_name, default))
    return tag, tuple(fields)
