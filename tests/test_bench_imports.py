"""The benchmarks in bench/ run on demand, not in CI, so nothing else notices when a move
leaves one importing a name that is gone (bench/cold_start.py and bench/speed.py did, after
MotoServer moved): every import of agentfn's own modules in them, lazy ones included, must
resolve."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
OWN = ("runtime", "infra", "handlers")
SCRIPTS = sorted((ROOT / "bench").rglob("*.py"))


def _own_imports(path: Path) -> list[tuple[str, str | None, int]]:
    """(module, name or None, line) for each import of runtime/infra/handlers in `path`."""
    found: list[tuple[str, str | None, int]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] in OWN:
                found += [(node.module, alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [
                (a.name, None, node.lineno) for a in node.names if a.name.split(".")[0] in OWN
            ]
    return found


def test_there_are_benchmarks_importing_agentfn() -> None:
    assert sum(len(_own_imports(p)) for p in SCRIPTS) > 10


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_import_of_agentfn_in_a_benchmark_resolves(script: Path) -> None:
    missing = []
    for module, name, line in _own_imports(script):
        try:
            imported = importlib.import_module(module)
        except ImportError as error:
            missing.append(f"line {line}: import {module}: {error}")
            continue
        if name is not None and name != "*" and not hasattr(imported, name):
            try:
                importlib.import_module(f"{module}.{name}")
            except ImportError:
                missing.append(f"line {line}: {name} is not in {module}")
    assert not missing, f"{script.name}: " + "; ".join(missing)
