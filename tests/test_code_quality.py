"""Lint, types and layering: cheap guards that keep the codebase pleasant to live in."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT

SOURCES = ["runtime", "infra", "handlers", "tests", "scripts", "tools"]


def test_ruff_reports_nothing() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", *SOURCES], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_is_clean_on_runtime_infra_and_handlers() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout + result.stderr


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize(
    ("package", "forbidden"),
    [
        ("runtime", {"infra", "handlers", "yaml", "moto", "jsonschema"}),
        ("handlers", {"infra", "yaml", "moto"}),
    ],
)
def test_dependencies_point_one_way(package: str, forbidden: set[str]) -> None:
    offenders = {
        str(path.relative_to(ROOT)): sorted(_imports(path) & forbidden)
        for path in (ROOT / package).rglob("*.py")
        if _imports(path) & forbidden
    }
    assert offenders == {}


def test_modules_stay_small() -> None:
    large = {
        str(p.relative_to(ROOT)): n
        for pkg in ("runtime", "infra", "handlers")
        for p in (ROOT / pkg).rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > 400
    }
    assert large == {}, "split these modules"
