"""Database checks on the raw data: an agent's database tools have tables to reach, its
`databases:` name configured databases, and a SQLite file is a file inside the project.
A `databases:` entry without the tools, or the tools without tables, would be a setting that
does nothing: both are errors."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

from infra.checks.issues import RefProblem, did_you_mean
from infra.checks.issues import mapping as _mapping

QUERY, WRITE = "builtin:database_query", "builtin:database_write"


def check_databases(data: Any, project_dir: Path) -> list[RefProblem]:
    root = _mapping(data)
    databases = _mapping(root.get("databases"))
    problems = list(_check_files(databases, project_dir))
    for name, raw in _mapping(root.get("agents")).items():
        problems += _check_agent(_mapping(raw), ("agents", name), databases)
    return problems


def _check_files(databases: dict[str, Any], project_dir: Path) -> Iterator[RefProblem]:
    for name, raw in databases.items():
        config = _mapping(raw)
        path = config.get("path")
        if config.get("kind") != "sqlite" or not isinstance(path, str):
            continue
        where = ("databases", name, "path")
        pure = PurePosixPath(path)
        if pure.is_absolute() or ".." in pure.parts or "\\" in path:
            yield RefProblem(where, "a relative path inside the project (it ships in the package)")
        elif not (project_dir / path).is_file():
            yield RefProblem(where, f"no file {path!r} in the spec's folder ({project_dir})")


def _check_agent(
    agent: dict[str, Any], base: tuple[str, ...], databases: dict[str, Any]
) -> Iterator[RefProblem]:
    tools = [t for t in agent.get("tools") or [] if isinstance(t, str)]
    access = _mapping(agent.get("databases"))
    for name in access:
        if name not in databases:
            hint = did_you_mean(name, databases)
            yield RefProblem(
                (*base, "databases", name), f"unknown database {name!r}{hint}", at_key=True
            )
    if access and QUERY not in tools and WRITE not in tools:
        yield RefProblem(
            (*base, "databases"),
            f"list {QUERY!r} (and {WRITE!r} to write) in tools, or remove databases",
            at_key=True,
        )
    for i, ref in enumerate(tools):
        if ref == QUERY and not access:
            yield RefProblem(
                (*base, "tools", i),
                "database_query needs `databases:` on the agent (the tables it may read)",
            )
        if ref == WRITE and not any(_mapping(a).get("write") for a in access.values()):
            yield RefProblem(
                (*base, "tools", i),
                "database_write needs `write:` tables in the agent's `databases:`",
            )
