"""Small value types shared by the spec models: durations, names, secret references.

Each type validates *and* documents itself in the JSON Schema, so an editor using
`schema/agents.schema.json` offers the same rules `agentfn validate` enforces.
"""

import math
import re
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, StringConstraints, WithJsonSchema

from runtime.spec.shared import SECRET_REF_PATTERN

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
DURATION_PATTERN = r"^(\d+(\.\d+)?(ms|s|m|h|d))+$"


def parse_duration(value: Any) -> Any:
    """Turn `30s`, `5m`, `1h30m`, `250ms`, `2d` or a bare number of seconds into seconds.

    Anything else is handed on unchanged so pydantic reports it with its own location.
    """
    if isinstance(value, bool):
        raise ValueError("expected a duration like 30s, 5m, 1h or a number of seconds")
    if isinstance(value, int | float):
        return _bounded(float(min(value, MAX_DURATION + 1)), value)  # no float(10**400)
    if isinstance(value, str):
        text = value.strip().replace(" ", "")
        if text and re.fullmatch(DURATION_PATTERN, text):
            seconds = sum(float(n) * _DURATION_UNITS[u] for n, u in _DURATION_PART.findall(text))
            return _bounded(seconds, value)
        raise ValueError(
            f"{value!r} is not a duration; expected a number of seconds or a value like "
            "30s, 5m, 1h, 1h30m, 250ms, 2d"
        )
    return value


#: No duration in a spec means more than ten years; anything longer is a typo, and a number
#: that large (or infinite) breaks the timers, timeouts and templates it ends up in.
MAX_DURATION = 10 * 365 * 86_400.0


def _bounded(seconds: float, written: Any) -> float:
    if not math.isfinite(seconds) or seconds > MAX_DURATION:
        raise ValueError(
            f"{written!r} is not a usable duration: durations are finite and at most 10 years"
        )
    return seconds


_DURATION_JSON_SCHEMA = {
    "anyOf": [
        {"type": "number", "minimum": 0, "maximum": MAX_DURATION, "description": "seconds"},
        {"type": "string", "pattern": DURATION_PATTERN, "examples": ["30s", "5m", "1h"]},
    ]
}

#: Seconds, written in YAML as `30s`, `5m`, `1h`, `2d` (or a bare number of seconds).
Duration = Annotated[
    float,
    BeforeValidator(parse_duration),
    Field(gt=0),
    WithJsonSchema(_DURATION_JSON_SCHEMA),
]

NAME_PATTERN = r"^[A-Za-z][A-Za-z0-9_-]{0,63}$"
#: A key that names a model, tool, MCP server, agent or secret. Letters first, so it is also
#: safe inside CloudFormation logical ids and tool names sent to every model provider.
Name = Annotated[str, StringConstraints(pattern=NAME_PATTERN)]

#: A value that must be exactly one secret reference, e.g. an `api_key`.
SecretRef = Annotated[
    str,
    StringConstraints(pattern=f"^{SECRET_REF_PATTERN}$"),
    WithJsonSchema(
        {
            "type": "string",
            "pattern": f"^{SECRET_REF_PATTERN}$",
            "description": "A secret reference: ${secret:NAME}, NAME declared under `secrets`.",
        }
    ),
]
