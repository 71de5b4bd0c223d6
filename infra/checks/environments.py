"""Resolving an environment of agents.yaml (runtime.spec.environments) on the raw YAML data,
with its source map: every problem of the resolved spec is still reported at the line where
it was written, in the environment's entry when it comes from one.

Why on the raw data, before validation: the resolved spec is then validated, checked and
hashed exactly like a spec without environments, and the compiled spec a function ships
with is that one.
"""

from __future__ import annotations

import os
from typing import Any

from infra.checks.yamlsrc import Path_, SourceMap
from runtime.spec.environments import OVERRIDABLE

ENV_VAR = "AGENTFN_ENV"
SECTION = "environments"


def selected(flag: str | None) -> str | None:
    """The environment asked for: `--env NAME`, else AGENTFN_ENV, else none (the base)."""
    return flag or os.environ.get(ENV_VAR) or None


def names(data: Any) -> list[str]:
    """The environments declared (those whose value is a mapping: the rest is reported by
    the structural check)."""
    section = data.get(SECTION) if isinstance(data, dict) else None
    if not isinstance(section, dict):
        return []
    return [k for k, v in section.items() if isinstance(k, str) and isinstance(v, dict)]


def overrides(data: dict[str, Any], name: str) -> list[tuple[str, str]]:
    """(section, entry) of every entry environment `name` replaces or adds."""
    environment = data[SECTION][name]
    found = []
    for section in OVERRIDABLE:
        entries = environment.get(section)
        if isinstance(entries, dict):
            found += [(section, entry) for entry in entries if isinstance(entry, str)]
    return found


def resolve(
    data: dict[str, Any], source: SourceMap, name: str
) -> tuple[dict[str, Any], SourceMap, list[tuple[str, str]]]:
    """The spec with environment `name` applied and no `environments`, its source map, and
    the entries that came from the environment."""
    moved = overrides(data, name)
    resolved = {k: v for k, v in data.items() if k != SECTION}
    for section, entry in moved:
        current = resolved.get(section)
        merged = dict(current) if isinstance(current, dict) else {}
        merged[entry] = data[SECTION][name][section][entry]
        resolved[section] = merged
    return resolved, _moved_source(source, name, moved), moved


def _moved_source(source: SourceMap, name: str, moved: list[tuple[str, str]]) -> SourceMap:
    out = SourceMap()
    replaced = {(section, entry) for section, entry in moved}
    for table, new in ((source.keys, out.keys), (source.values, out.values)):
        for path, position in table.items():
            if path[:1] == (SECTION,) or path[:2] in replaced:
                continue
            new[path] = position
        for path, position in table.items():
            if path[:2] != (SECTION, name) or len(path) < 4:
                continue
            inner = path[2:]
            if inner[:2] in replaced:
                new[inner] = position
        for section in {section for section, _ in moved}:
            if (section,) not in new and (SECTION, name, section) in table:
                new[(section,)] = table[(SECTION, name, section)]
    return out


def shown_path(path: Path_, name: str, moved: list[tuple[str, str]]) -> Path_:
    """Where a problem of the resolved spec was written: under `environments.NAME` when it
    is in an entry the environment supplied."""
    if tuple(path[:2]) in set(moved):
        return (SECTION, name, *path)
    return path
