"""JSON text exactly as the standard library's `json.dumps` writes it, at a third of the cost
for the small values a turn encodes (a call's arguments, a tool's output).

`JSONEncoder.encode` builds its C encoder again on every call, which costs twice what
encoding `{"i": 5}` does; `writer` builds it once. The one difference: no check for
circular references (the C encoder then stops at the recursion limit with RecursionError,
where `json.dumps` raised ValueError); the values encoded here come from JSON, or from a
tool, whose output runtime.tools.python_tool has already copied as plain data.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from json.encoder import encode_basestring, encode_basestring_ascii
from typing import Any

#: The C encoder behind json.dumps (None on an interpreter without it: the encoder as it is).
make_encoder: Any = getattr(json.encoder, "c_make_encoder", None)


def writer(encoder: json.JSONEncoder) -> Callable[[Any], str]:
    """`encoder.encode` (its options: ensure_ascii, separators, sort_keys, default, …), made
    once. Needs `indent=None`, as the C encoder does."""
    if make_encoder is None or encoder.indent is not None:
        return encoder.encode
    strings = encode_basestring_ascii if encoder.ensure_ascii else encode_basestring
    chunks = make_encoder(
        None,  # no circular check (see above)
        encoder.default,
        strings,
        None,
        encoder.key_separator,
        encoder.item_separator,
        encoder.sort_keys,
        encoder.skipkeys,
        encoder.allow_nan,
    )

    def write(value: Any) -> str:
        if isinstance(value, str):
            return str(strings(value))
        return "".join(chunks(value, 0))

    return write
