"""Rebuild a spec from its compiled JSON without running pydantic's validation.

Why: a Lambda cold start pays for every pydantic class it *builds* (each model's validator
and serializer are generated from its annotations: ~40 ms for the spec's 58 models) and the
function only ever reads the compiled spec `agentfn build` wrote from a validated model.
The spec models are declared with `defer_build`, and this module walks the compiled JSON
along the models' field annotations, making each instance with `model_construct`. A model
is built only if something later validates or dumps it; `spec_hash`, which dumps the whole
spec, is read from the same JSON instead (runtime.spec.root.load_compiled).

It trusts its input: a value of the wrong shape is not reported, it is kept as it is. The
trust is earned at build time (`infra.checks.validate`) and checked by the tests: every spec any
test validates is loaded this way too and must equal what validation gave (tests/conftest.py),
and one spec holds every kind of section (tests/runtime/spec/test_trusted_load.py). A union
of models is decided by the members' `Literal` fields (every spec union is discriminated by
one); a value it cannot decide is handed to pydantic.
"""

import types
from functools import cache
from typing import Annotated, Any, Literal, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, HttpUrl, TypeAdapter

_NONE = type(None)
M = TypeVar("M", bound=BaseModel)


def construct(cls: type[M], data: dict[str, Any]) -> M:
    """An instance of `cls` from the JSON `cls.model_dump(mode="json", by_alias=True)` gave."""
    values: dict[str, Any] = {}
    for name, key, annotation in _fields(cls):
        if key in data:
            values[name] = _value(annotation, data[key])
    return cls.model_construct(**values)


@cache
def _fields(cls: type[BaseModel]) -> tuple[tuple[str, str, Any], ...]:
    """(attribute, JSON key, annotation) of each field: the key is the alias when it has one."""
    return tuple(
        (name, info.alias or name, info.annotation) for name, info in cls.model_fields.items()
    )


def _value(annotation: Any, value: Any) -> Any:
    if value is None:
        return None
    origin = get_origin(annotation)
    if origin is Annotated:
        return _value(get_args(annotation)[0], value)
    if origin is Union or origin is types.UnionType:
        members = [m for m in get_args(annotation) if m is not _NONE]
        models = [m for m in members if isinstance(m, type) and issubclass(m, BaseModel)]
        if not models:
            return _value(members[0], value) if len(members) == 1 else value
        if len(models) == 1 and len(members) == 1:
            return _value(models[0], value)
        chosen = _member(tuple(models), value)
        return (
            construct(chosen, value) if chosen else TypeAdapter(annotation).validate_python(value)
        )
    if origin is list:
        (item,) = get_args(annotation)
        return [_value(item, v) for v in value]
    if origin is dict:
        _, item = get_args(annotation)
        return {k: _value(item, v) for k, v in value.items()}
    if isinstance(annotation, type):
        if issubclass(annotation, BaseModel):
            return construct(annotation, value)
        if issubclass(annotation, HttpUrl):
            return annotation(value)
    return value  # str, int, float, bool, Literal, Any: JSON gives them as they are


def _member(models: tuple[type[BaseModel], ...], value: Any) -> type[BaseModel] | None:
    """The one model whose `Literal` fields all accept `value` (the discriminated union's
    choice), or None when not exactly one does."""
    if not isinstance(value, dict):
        return None
    fits = [m for m in models if all(value.get(k, d) in ok for k, ok, d in _literals(m))]
    return fits[0] if len(fits) == 1 else None


@cache
def _literals(cls: type[BaseModel]) -> tuple[tuple[str, tuple[Any, ...], Any], ...]:
    """(JSON key, the values it allows, its default) of each `Literal` field of `cls`."""
    found = []
    for name, key, annotation in _fields(cls):
        if get_origin(annotation) is Literal:
            info = cls.model_fields[name]
            found.append((key, get_args(annotation), None if info.is_required() else info.default))
    return tuple(found)
