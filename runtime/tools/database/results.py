"""Query results as the model sees them: columns and rows, capped at MAX_RESULT_CHARS."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

MAX_RESULT_CHARS = 50_000


def capped_rows(columns: list[str], rows: Iterable[Any]) -> dict[str, Any]:
    """As many whole rows as fit in MAX_RESULT_CHARS of JSON; `truncated` says when more
    rows were left out (ask for fewer columns, or add a WHERE / LIMIT)."""
    kept: list[list[Any]] = []
    size = len(json.dumps(columns))
    truncated = False
    for row in rows:
        values = [_plain(v) for v in row]
        size += len(json.dumps(values, default=str)) + 1
        if size > MAX_RESULT_CHARS:
            truncated = True
            break
        kept.append(values)
    return {"columns": columns, "rows": kept, "row_count": len(kept), "truncated": truncated}


def _plain(value: Any) -> Any:
    if isinstance(value, bytes):
        return f"<{len(value)} bytes>"
    return value
