"""Knowledge base checks on the raw data: `knowledge_search` has knowledge bases to search
and they exist, a listed knowledge base has the tool, and a local one is a folder inside the
project with something to index."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

from infra.checks.issues import RefProblem, did_you_mean
from infra.checks.issues import mapping as _mapping
from runtime.tools.knowledge.local import SUFFIXES

TOOL = "builtin:knowledge_search"


def check_knowledge(data: Any, project_dir: Path) -> list[RefProblem]:
    root = _mapping(data)
    bases = _mapping(root.get("knowledge_bases"))
    problems = list(_check_folders(bases, project_dir))
    for name, raw in _mapping(root.get("agents")).items():
        problems += _check_agent(_mapping(raw), ("agents", name), bases)
    return problems


def _check_folders(bases: dict[str, Any], project_dir: Path) -> Iterator[RefProblem]:
    for name, raw in bases.items():
        config = _mapping(raw)
        path = config.get("path")
        if config.get("kind") != "local" or not isinstance(path, str):
            continue
        where = ("knowledge_bases", name, "path")
        pure = PurePosixPath(path)
        folder = project_dir / path
        if pure.is_absolute() or ".." in pure.parts or "\\" in path:
            yield RefProblem(where, "a relative folder inside the project")
        elif not folder.is_dir():
            yield RefProblem(where, f"no folder {path!r} in the spec's folder ({project_dir})")
        elif not any(p.suffix.lower() in SUFFIXES for p in folder.rglob("*")):
            yield RefProblem(where, f"no {', '.join(SUFFIXES)} files in {path!r} to index")


def _check_agent(
    agent: dict[str, Any], base: tuple[str, ...], bases: dict[str, Any]
) -> Iterator[RefProblem]:
    tools = [t for t in agent.get("tools") or [] if isinstance(t, str)]
    listed = [n for n in agent.get("knowledge_bases") or [] if isinstance(n, str)]
    for i, name in enumerate(listed):
        if name not in bases:
            yield RefProblem(
                (*base, "knowledge_bases", i),
                f"unknown knowledge base {name!r}{did_you_mean(name, bases)}",
            )
    if listed and TOOL not in tools:
        yield RefProblem(
            (*base, "knowledge_bases"),
            f"list {TOOL!r} in tools, or remove knowledge_bases",
            at_key=True,
        )
    if TOOL in tools and not listed:
        yield RefProblem(
            (*base, "tools", tools.index(TOOL)),
            "knowledge_search needs `knowledge_bases:` on the agent",
        )
