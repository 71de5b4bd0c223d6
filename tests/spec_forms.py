"""The two forms of a spec, compared: a validated pydantic spec, and the run-time structs
(runtime.spec.plain) a function loads from its compiled JSON. Used by the guard in
tests/conftest.py on every spec any test validates, and by tests/runtime/spec."""

from __future__ import annotations

import json
from typing import Any

import msgspec
from pydantic import BaseModel, HttpUrl

from runtime.spec import AgentfnSpec, plain
from runtime.spec.plain.base import set_values


def differences(validated: Any, loaded: Any, path: str = "spec") -> list[str]:
    """Where `loaded` (structs) says something else than `validated` (models): a class, an
    attribute missing or extra, a value or its type."""
    if isinstance(validated, BaseModel):
        name = type(validated).__name__
        if not isinstance(loaded, msgspec.Struct) or type(loaded).__name__ != name:
            return [f"{path}: a {name} became {type(loaded).__name__}"]
        fields = type(validated).model_fields
        found = [
            f"{path}.{n}: not a field of the model" for n in _struct_fields(loaded) - set(fields)
        ]
        for field in fields:
            if not hasattr(loaded, field):
                found.append(f"{path}.{field}: missing")
            else:
                found += differences(
                    getattr(validated, field), getattr(loaded, field), f"{path}.{field}"
                )
        return found
    if isinstance(validated, HttpUrl):
        return [] if loaded == str(validated) else [f"{path}: {validated} became {loaded!r}"]
    if isinstance(validated, list) and isinstance(loaded, list) and len(validated) == len(loaded):
        return [d for i, (a, b) in enumerate(zip(validated, loaded, strict=True))
                for d in differences(a, b, f"{path}[{i}]")]  # fmt: skip
    if (
        isinstance(validated, dict)
        and isinstance(loaded, dict)
        and validated.keys() == loaded.keys()
    ):
        return [d for k in validated for d in differences(validated[k], loaded[k], f"{path}.{k}")]
    if validated == loaded and type(validated) is type(loaded):
        return []
    return [f"{path}: {validated!r} became {loaded!r}"]


def _struct_fields(value: msgspec.Struct) -> set[str]:
    return {f.name for f in msgspec.structs.fields(value)}


def loaded_as_deployed(spec: AgentfnSpec) -> plain.AgentfnSpec:
    """What a function loads from this spec's compiled JSON (through a JSON text, as shipped)."""
    return plain.load(json.loads(json.dumps(spec.to_compiled())))


def form_problems(spec: AgentfnSpec) -> list[str]:
    """Every way the run-time form of `spec` differs from it: attributes and values, the full
    JSON (so the hash), the JSON without defaults (so run compatibility), the hash."""
    compiled = json.loads(json.dumps(spec.to_compiled()))
    loaded = plain.load(compiled)
    problems = differences(spec, loaded)
    if loaded.to_compiled() != compiled:
        problems.append("its full JSON differs from the model's (to_compiled)")
    unset = spec.model_dump(mode="json", by_alias=True, exclude_defaults=True)
    if set_values(loaded) != unset:
        problems.append("its JSON without defaults differs from the model's (a default differs)")
    if loaded.spec_hash() != spec.spec_hash():
        problems.append("its spec hash differs")
    return problems
