"""The layering of issue #27, enforced: import-linter's contracts (pyproject.toml
[tool.importlinter]) hold, a wrong-way import breaks them, and the product packages'
module graph has no cycle.

Imports under `if TYPE_CHECKING:` are left out (they are annotations, never executed), as
the contracts leave them out.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import grimp
import pytest

from tests.helpers import ROOT

PRODUCT = ("runtime", "handlers", "infra", "tools")
LINT_IMPORTS = str(Path(sys.executable).parent / "lint-imports")


def _lint_imports(cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(cwd)}
    return subprocess.run(
        [LINT_IMPORTS, "--no-cache", "--config", str(cwd / "pyproject.toml")],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_every_layering_contract_is_kept() -> None:
    result = _lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout
    assert "5 kept" in result.stdout  # every contract of pyproject.toml was checked


WRONG_WAY = [  # (a new module, what it imports, the contract that import breaks)
    ("runtime/wrong_way.py", "infra.sam.naming", "never the reverse"),
    ("handlers/wrong_way.py", "infra.checks.validate", "never the reverse"),
    ("runtime/engine/wrong_way.py", "runtime.service", "runtime: workflows over service"),
    ("runtime/models/wrong_way.py", "runtime.store.base", "runtime: workflows over service"),
    ("infra/sam/wrong_way.py", "infra.local.aws", "nothing deployed imports the local stack"),
    ("infra/local/wrong_way.py", "infra.cli.run_cli", "infra's rooms"),
    (
        "runtime/safety/wrong_way.py",
        "runtime.engine.loop",
        "runtime.safety and runtime.live stand alone",
    ),
]


def test_wrong_way_imports_break_the_contracts(tmp_path: Path) -> None:
    """A copy of the product with one wrong-way import per contract: lint-imports fails and
    names each import under the contract it breaks."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for package in PRODUCT:
        shutil.copytree(ROOT / package, tmp_path / package, ignore=ignore)
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    assert _lint_imports(tmp_path).returncode == 0  # the copy itself is clean
    for module, imports, _ in WRONG_WAY:
        (tmp_path / module).write_text(f'"""Deliberately wrong."""\n\nimport {imports}\n')
    result = _lint_imports(tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    broken = _broken_contracts(result.stdout)
    for module, imports, contract in WRONG_WAY:
        dotted = module.removesuffix(".py").replace("/", ".")
        assert any(
            contract in name and f"{dotted} -> {imports}" in text for name, text in broken.items()
        ), (module, broken)


def _broken_contracts(stdout: str) -> dict[str, str]:
    """lint-imports' "Broken contracts" report: each contract's name → what it lists."""
    lines = stdout.partition("Broken contracts")[2].splitlines()[2:]
    broken: dict[str, str] = {}
    name = ""
    for line, underline in zip(lines, [*lines[1:], ""], strict=True):
        if underline and set(underline) == {"-"} and line and set(line) != {"-"}:
            name = line
            broken[name] = ""
        elif name and not (line and set(line) == {"-"}):
            broken[name] += line + "\n"
    return broken


def cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def edges(module: str) -> Iterator[str]:
        return iter(sorted(graph.find_modules_directly_imported_by(module)))

    for start in sorted(graph.modules):
        if start in index:
            continue
        work = [(start, edges(start))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, todo = work[-1]
            child = next(todo, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, edges(child)))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_product_packages_have_no_import_cycle() -> None:
    graph = grimp.build_graph(*PRODUCT, exclude_type_checking_imports=True)
    assert len(graph.modules) > 200  # the whole product, not an empty graph
    assert cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The test above could fail: a three-module cycle (one import inside a function, as
    lazy imports are) is found, and nothing else."""
    package = tmp_path / "scratch_cycle"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("import scratch_cycle.b\n")
    (package / "b.py").write_text("def f():\n    import scratch_cycle.c\n")
    (package / "c.py").write_text("from scratch_cycle import a\n")
    (package / "d.py").write_text("import scratch_cycle.a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    graph = grimp.build_graph("scratch_cycle", cache_dir=None)
    assert cycles(graph) == [["scratch_cycle.a", "scratch_cycle.b", "scratch_cycle.c"]]
