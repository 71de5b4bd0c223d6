"""The generated templates pass cfn-lint and `sam validate --lint`, and `sam build` succeeds.

These run the real tools the README's test command installs (cfn-lint in .venv, the SAM
CLI in .tools/sam). `sam build` uses this machine's Python, so the template is generated
with `--runtime` matching it, exactly as a developer would on a machine without Docker. It
runs the Makefiles `agentfn build` stages (the functions' code, compiled; the dependency
layers, installed by pip for the functions' platform), so it needs `make`, as SAM does for
any `BuildMethod: makefile`.

The two `sam build`s share one build cache for the session (AGENTFN_BUILD_CACHE, keyed by
what defines each thing built, its recipe and the Python): the full fixture's layers are the
demo's, so pip installs each once per session; a stack's functions, one package, compile it
once instead of once each. Both builds check what they ship. With -n they are next to each
other in the worker's share of the tests (`--dist worksteal` keeps shares contiguous), so
the second finds the first's layers; on two workers at once each would build its own.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.helpers import DEMO_SPEC, FULL_SPEC, ROOT, run_agentfn, tool_path

LOCAL_RUNTIME = f"python{sys.version_info.major}.{sys.version_info.minor}"
TAG = sys.implementation.cache_tag
SPECS = {"demo": DEMO_SPEC, "full": FULL_SPEC}


def _tool_env(**more: str) -> dict[str, str]:
    env = {**os.environ, "SAM_CLI_TELEMETRY": "0", "AWS_DEFAULT_REGION": "us-east-1", **more}
    # sam build looks for `pythonX.Y` on PATH: put this interpreter's folder first.
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def _project(name: str, tmp_path: Path, runtime: str | None = None) -> Path:
    project = tmp_path / name
    spec = SPECS[name]
    project.mkdir()
    shutil.copy(spec, project / "agents.yaml")
    if runtime == "python3.11":  # no SnapStart there (`agentfn build` refuses the pair)
        text = (project / "agents.yaml").read_text(encoding="utf-8")
        text = text.replace("  snapstart: true\n", "  snapstart: false\n")
        (project / "agents.yaml").write_text(text, encoding="utf-8")
    shutil.copytree(spec.parent / "tools", project / "tools")
    for folder in ("data", "knowledge"):  # the demo's SQLite database and knowledge base
        if (spec.parent / folder).is_dir():
            shutil.copytree(spec.parent / folder, project / folder)
    args = ["build", "-f", "agents.yaml", "-o", "template.yaml"]
    if runtime:
        args += ["--runtime", runtime]
    result = run_agentfn(*args, cwd=project)
    assert result.returncode == 0, result.stderr
    return project


def _run(
    args: list[str], cwd: Path, timeout: int = 300, **env: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, cwd=cwd, env=_tool_env(**env), capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture(scope="session")
def build_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One folder of built layers for the session, shared by the xdist workers (the parent
    of a worker's base temporary folder is the session's)."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    return shared / "sam-build-cache"


@pytest.mark.parametrize("name", list(SPECS))
def test_cfn_lint_reports_nothing_not_even_informational(name: str, tmp_path: Path) -> None:
    project = _project(name, tmp_path)
    result = _run([tool_path("cfn-lint"), "--include-checks", "I", "--", "template.yaml"], project)
    assert result.returncode == 0, result.stdout + result.stderr


def test_committed_template_passes_cfn_lint() -> None:
    result = _run([tool_path("cfn-lint"), "--", "template.yaml"], ROOT)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
@pytest.mark.parametrize("name", list(SPECS))
def test_sam_validate_lint_passes(name: str, tmp_path: Path) -> None:
    project = _project(name, tmp_path)
    result = _run(
        [tool_path("sam"), "validate", "--lint", "--template-file", "template.yaml"], project
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "is a valid SAM Template" in result.stdout + result.stderr


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("make") is None, reason="sam build runs Makefiles: no make")
@pytest.mark.parametrize("name", list(SPECS))
def test_sam_build_succeeds_and_packages_only_what_runs(
    name: str, tmp_path: Path, build_cache: Path
) -> None:
    project = _project(name, tmp_path, runtime=LOCAL_RUNTIME)
    result = _run(
        [
            tool_path("sam"),
            "build",
            "--template-file",
            "template.yaml",
            "--build-dir",
            ".aws-sam/build",
        ],
        project,
        timeout=600,
        AGENTFN_BUILD_CACHE=str(build_cache),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Build Succeeded" in result.stdout + result.stderr
    built = project / ".aws-sam" / "build"
    api = built / "ApiFunction"
    assert (api / "handlers" / "api.py").exists()
    assert (api / "runtime" / "spec" / "root.py").exists()
    assert (api / "runtime" / "spec" / "__pycache__" / f"root.{TAG}.pyc").exists()
    assert (api / "agentfn.spec.json").exists()
    assert (api / "tools").is_dir()
    absent = ["infra", "tests", "moto", "cfnlint", "samcli", "pydantic", "mcp", "Makefile"]
    for module in absent:
        assert not (api / module).exists(), module
    from infra.sam.layers import serves
    from tests.helpers import load_spec

    spec = load_spec(SPECS[name])
    protocols = serves(spec, "a2a") or serves(spec, "mcp") or bool(spec.remote_agents)
    assert (api / "runtime" / "protocols").is_dir() == protocols  # shipped only when used
    triggered = any(a.triggers for a in [*spec.agents.values(), *spec.workflows.values()])
    assert (api / "runtime" / "triggers").is_dir() == triggered
    # A function's own code (zipped; .py beside its .pyc): the full fixture's, every feature
    # but the protocols, was 1.03 MB on 2026-11-26, 1.10 MB once the run time read its spec
    # into generated structs (runtime/spec/plain/, issue 26) beside the models the build and
    # the API validate with; 100 KB more with the A2A and MCP code.
    assert _zipped(api) < 1_150_000 + (100_000 if protocols else 0)
    layers = {
        layer: built / f"{layer}Layer" / "python" for layer in ("Dependencies", "Powertools", "Mcp")
    }
    assert (layers["Dependencies"] / "pydantic" / "main.pyc").exists()  # bytecode only
    assert not (layers["Dependencies"] / "pydantic" / "main.py").exists()
    assert (layers["Powertools"] / "aws_lambda_powertools").is_dir()
    assert (layers["Mcp"] / "mcp").is_dir()  # both specs use an MCP server
    for upper in ("Powertools", "Mcp"):  # what the layer beneath holds is not shipped again
        assert not (layers[upper] / "pydantic").exists() and not (layers[upper] / "httpx").exists()
    functions = [p.name for p in built.iterdir() if p.is_dir()]
    agent_functions = [f for f in functions if f.startswith("Agent") and f.endswith("Function")]
    assert len(agent_functions) == _agent_count(name)


def _zipped(folder: Path) -> int:
    with tempfile.TemporaryDirectory() as scratch:
        return Path(shutil.make_archive(f"{scratch}/code", "zip", folder)).stat().st_size


def _agent_count(name: str) -> int:
    import yaml

    return len(yaml.safe_load(SPECS[name].read_text())["agents"])
