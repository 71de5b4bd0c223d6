"""Pydantic models from values the engine made itself, without validating them again.

A turn builds and copies a dozen models (its events, the head of each commit); validation
and pydantic's generic `model_construct` / `model_copy` loops were a large share of a
turn's framework time (bench/turn_cost.py). These do what `model_construct` and
`model_copy` do for models with neither extra nor private attributes, and nothing else:
only for values that already have the fields' types (what validation would produce), so
the result is equal to the validated model and serialises byte for byte alike
(tests/runtime/test_trusted.py checks each use).
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)

_set = object.__setattr__


def made(cls: type[M], values: dict[str, Any]) -> M:
    """`cls.model_construct(**values)`, faster when `values` names every field of `cls` (a
    field added to the model later, and not named here, gets its default all the same)."""
    if len(values) != len(cls.__pydantic_fields__):
        return cls.model_construct(**values)
    model = cls.__new__(cls)
    _set(model, "__dict__", values)
    _set(model, "__pydantic_fields_set__", set(values))
    _set(model, "__pydantic_extra__", None)
    _set(model, "__pydantic_private__", None)
    return model


def copied(model: M, update: dict[str, Any]) -> M:
    """`model.model_copy(update=update)`: a shallow copy with `update` applied (and marked
    set, as model_copy marks it)."""
    copy = model.__class__.__new__(model.__class__)
    values = model.__dict__.copy()
    values.update(update)
    _set(copy, "__dict__", values)
    _set(copy, "__pydantic_fields_set__", model.__pydantic_fields_set__ | update.keys())
    _set(copy, "__pydantic_extra__", None)
    _set(copy, "__pydantic_private__", None)
    return copy


def same_fields(model: BaseModel, other: object) -> bool:
    """`model == other` as pydantic answers it, for a model with neither extra nor private
    attributes nor cached properties: two of one class are equal when their fields are.
    A head is serialised with its defaults left out on every commit, and pydantic compares
    each of its models (Usage, ContextState, Spend) with a new default one: its generic
    `__eq__` made that a third of the serialisation."""
    if other.__class__ is model.__class__:
        return model.__dict__ == other.__dict__
    return BaseModel.__eq__(model, other)
