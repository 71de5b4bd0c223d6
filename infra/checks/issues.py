"""A spec problem as the author sees it: file:line:column, key path, message."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from infra.checks.yamlsrc import Path_


def format_path(path: Path_) -> str:
    """`('agents', 'support', 'tools', 2)` → `agents.support.tools[2]`."""
    out = ""
    for element in path:
        if isinstance(element, int):
            out += f"[{element}]"
        else:
            text = str(element)
            plain = text.replace("_", "").replace("-", "").isalnum()
            out += (f".{text}" if out else text) if plain else f"[{text!r}]"
    return out or "(top level)"


def did_you_mean(word: object, candidates: Iterable[str]) -> str:
    """` did you mean 'tools'?` or empty: appended to messages about unknown names."""
    if not isinstance(word, str):
        return ""
    pool = sorted({c for c in candidates if isinstance(c, str)})  # a YAML key may be 1 or True
    lowered = {c.lower(): c for c in pool}
    match = difflib.get_close_matches(word.lower(), list(lowered), n=1, cutoff=0.6)
    return f"; did you mean {lowered[match[0]]!r}?" if match else ""


@dataclass(frozen=True)
class RefProblem:
    """A problem found by a check on the raw data (infra.checks.references and the checks it runs):
    its key path, and whether to report it at the key rather than the value."""

    path: Path_
    message: str
    at_key: bool = False


@dataclass(frozen=True, order=True)
class SpecIssue:
    line: int
    column: int
    path: str
    message: str
    file: str = ""

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}: {self.path}: {self.message}"


def mapping(value: Any) -> dict[str, Any]:
    """`value` when the raw spec has a mapping there, else an empty one: checks of the raw
    data run before (and beside) the model's own validation, so any shape may arrive."""
    return value if isinstance(value, dict) else {}


def unknown_model(name: str, models: dict[str, Any]) -> str:
    """`unknown model 'x'`, with a near name, else the names that exist."""
    hint = did_you_mean(name, models)
    if not hint:
        hint = f" (models defined: {', '.join(models)})" if models else " (no models are defined)"
    return f"unknown model {name!r}{hint}"
