"""What a spec section of several kinds (a discriminated union: `transport`, `provider`,
`kind`, `type`) says when its kind is missing: the kinds there are, and the keys that belong
to none of them, so a block pasted under the wrong section shows itself."""

from __future__ import annotations

from typing import Any


def missing_tag(key: str, loc: tuple[Any, ...], given: Any) -> str:
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
