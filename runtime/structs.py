"""The run-time records' base class (msgspec Structs) and the few helpers they need.

Why msgspec and not pydantic for the engine's own values (messages, events, the run head,
workflow records): a turn builds, copies and serialises a dozen of them, and pydantic's
construction, copying and import were most of a turn's framework time and a third of a cold
start (issue 26). A Struct is built, copied (`replace`) and compared in C without
validating: the engine's own values are of the fields' types already. What comes from
outside is still validated, with `load` / `load_json` (stored records read back, provider
answers, request bodies). Pydantic stays where it earns its cost: the spec at build time
and requests at the API's edge.

Stored documents keep the bytes pydantic wrote, so runs in flight and stored runs stay
readable with no migration (bench/stored_bytes.py): the head is written without the fields
at their defaults (`dump_changed`, pydantic's `exclude_defaults`) and messages without
their unset optional fields (`dump_set`, `exclude_none`). msgspec's own `omit_defaults`
cannot stand in for either: it compares with the default by identity (a float 0.0 computed
or read back is not the default's 0.0 object, a nested default never is) and it would also
drop a message's fields at non-None defaults (`"turn":0`), which pydantic wrote.
"""

from __future__ import annotations

import operator
import threading
import typing
from collections.abc import Callable
from functools import cache
from itertools import compress, repeat
from typing import Any, TypeVar

import msgspec

T = TypeVar("T")
S = TypeVar("S", bound="Record")


class Record(msgspec.Struct, forbid_unknown_fields=True):
    """A run-time record: unknown fields refused when read back (pydantic's `extra="forbid"`).
    Each record class also says `kw_only=True` (msgspec does not inherit it): fields by
    keyword only, so required ones may follow defaulted ones, in the order pydantic declared
    and wrote them."""


#: A copy with some fields changed, in C and without validation (pydantic's `model_copy`):
#: only for values of the fields' types, as the engine's own are.
replace = msgspec.structs.replace

_REQUIRED: Any = object()  # a field without a default: always written
_json_encode = msgspec.json.encode


def encode(value: Any) -> str:
    """JSON text, compact and in UTF-8 as pydantic wrote it (one difference: a float of
    1e16 or more is written `1e16`, where pydantic wrote `1e+16`; both read back the same)."""
    return _json_encode(value).decode()


def dump(record: Record) -> dict[str, Any]:
    """Every field as JSON-able data (pydantic's `model_dump(mode="json")`)."""
    data: dict[str, Any] = msgspec.to_builtins(record)
    return data


def dump_changed(record: Record) -> dict[str, Any]:
    """The fields not equal to their defaults, nested records (also in lists and dicts)
    alike: pydantic's `model_dump(exclude_defaults=True)`, which compares by equality.

    Every commit writes a head of some 60 fields: they are compared and picked in C
    (`map`, `compress`); only the few fields records can nest in are looked at again."""
    plan = _PLANS.get(type(record)) or _plan(type(record))
    values = msgspec.structs.astuple(record)
    kept = list(map(operator.ne, values, plan.defaults))
    out = dict(zip(compress(plan.names, kept), compress(values, kept), strict=False))
    for name in plan.nested:
        if name in out:
            out[name] = _nested(out[name], dump_changed)
    return out


def dump_set(record: Record) -> dict[str, Any]:
    """The fields that are not None, nested records (also in lists and dicts) alike, after
    the tag of a tagged record: pydantic's `model_dump(exclude_none=True)` (None inside a
    field's own data, a dict's values say, is kept, as pydantic kept it). A nested record
    with no field that can be None (Usage, ImagePart) is left for the encoder as it is."""
    plan = _PLANS.get(type(record)) or _plan(type(record))
    values = msgspec.structs.astuple(record)
    kept = list(map(operator.is_not, values, repeat(None)))
    out = dict(plan.tag)
    out.update(zip(compress(plan.names, kept), compress(values, kept), strict=False))
    for name in plan.nested_set:
        if name in out:
            out[name] = _nested(out[name], dump_set)
    return out


def _nested(value: Any, dump: Callable[[Any], dict[str, Any]]) -> Any:
    """`value` with each record in it (itself, or in its lists and dicts) dumped by `dump`."""
    if isinstance(value, Record):
        return dump(value)
    if isinstance(value, list):
        return [_nested(v, dump) for v in value]
    if isinstance(value, dict):
        return {k: _nested(v, dump) for k, v in value.items()}
    return value


class _Plan:
    """What the dumps need of a record class, worked out once: its field names and defaults
    (a factory's value: a default record compares equal to a new one), the fields records
    can nest in, those of them that can hold a None to leave out, its tag."""

    def __init__(self, cls: type[Record]) -> None:
        hints = typing.get_type_hints(cls)
        fields = msgspec.structs.fields(cls)
        self.names = tuple(f.name for f in fields)
        self.defaults = tuple(_default(f) for f in fields)
        self.nested = tuple(f.name for f in fields if _nests(hints[f.name]))
        self.nested_set = tuple(f.name for f in fields if _nests(hints[f.name], optional=True))
        config = cls.__struct_config__
        self.tag = {config.tag_field: config.tag} if config.tag_field else {}


_PLANS: dict[type[Record], _Plan] = {}


def _plan(cls: type[Record]) -> _Plan:
    plan = _PLANS[cls] = _Plan(cls)
    return plan


def _default(field: msgspec.structs.FieldInfo) -> Any:
    if field.default is not msgspec.NODEFAULT:
        return field.default
    if field.default_factory is not msgspec.NODEFAULT:
        return field.default_factory()
    return _REQUIRED


def _nests(hint: Any, *, optional: bool = False) -> bool:
    """Whether a record can be in a value of type `hint` (`optional`: a record that has a
    field that can be None, itself or in a record nested in it)."""
    if isinstance(hint, type) and issubclass(hint, Record):
        if not optional:
            return True
        hints = typing.get_type_hints(hint).values()
        return any(_can_be_none(h) or _nests(h, optional=True) for h in hints)
    return any(_nests(arg, optional=optional) for arg in typing.get_args(hint))


def _can_be_none(hint: Any) -> bool:
    return hint is Any or hint is type(None) or type(None) in typing.get_args(hint)


def prepare(*types: Any) -> None:
    """The work of the first dump and load of these types (and of the records they nest),
    done now: their plans, the decoders of `load_json` and msgspec's own type information.
    pydantic did its share when the classes were made; a SnapStart snapshot holds this one
    if it is done at init (handlers.snapshot), not in each restored copy's first step."""
    seen: set[Any] = set()
    pending = list(types)
    while pending:
        hint = pending.pop()
        if hint in seen:
            continue
        seen.add(hint)
        if isinstance(hint, type) and issubclass(hint, Record):
            _PLANS.get(hint) or _plan(hint)
            pending += typing.get_type_hints(hint).values()
        else:
            pending += typing.get_args(hint)
    for hint in types:
        _decoder(hint, False)  # the stores read lax, as pydantic's lax mode did


def load(cls: type[T], data: Any, *, strict: bool = True) -> T:
    """`data` (JSON-able Python) validated as `cls`; msgspec.ValidationError (a ValueError,
    as pydantic's was) says what and where. `strict=False` coerces as pydantic's lax mode
    did for what was read that way ("3" for an int, 3.0 for an int)."""
    _ready(cls)
    loaded: T = msgspec.convert(data, cls, strict=strict)
    return loaded


def load_json(cls: type[T], text: str | bytes, *, strict: bool = True) -> T:
    """JSON text validated as `cls` (one decoder per type, made once)."""
    loaded: T = _decoder(cls, strict).decode(text)  # type: ignore[arg-type]
    return loaded


@cache
def _decoder(cls: Any, strict: bool) -> msgspec.json.Decoder[Any]:
    _ready(cls)
    return msgspec.json.Decoder(cls, strict=strict)


_known: set[Any] = set()
_first_use = threading.Lock()


def _ready(cls: Any) -> None:
    """Make msgspec's information about `cls` (and every type it nests) under one lock, once.

    msgspec works it out at a type's first decode or convert and keeps it on the class; two
    threads doing that at once for the same types crashed the process (a segfault in
    `agentfn dev`, two workflow steps starting runs together: msgspec 0.22, faulthandler's
    stacks in both threads at `msgspec.convert(…, RunHead)`). Every decode and convert of
    agentfn's goes through `load`, `load_json` or this, so the first use of each type is
    serialised and every later one takes no lock."""
    if cls in _known:
        return
    with _first_use:
        if cls not in _known:
            msgspec.json.Decoder(cls)  # builds the type information, nested types included
            _known.add(cls)
