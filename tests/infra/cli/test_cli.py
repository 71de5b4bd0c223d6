"""The `agentfn` CLI as a user runs it: exit codes, messages, build --check, schema."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from tests.helpers import FULL_SPEC, ROOT, run_agentfn


def test_validate_accepts_the_demo_spec() -> None:
    result = run_agentfn("validate")
    assert result.returncode == 0, result.stderr
    assert "agents.yaml: valid — 9 agents" in result.stdout


def test_validate_reports_every_problem_with_file_line_and_path(tmp_path: Path) -> None:
    spec = tmp_path / "agents.yaml"
    spec.write_text(
        "version: 1\n"
        "models:\n"
        "  m: {provider: scripted, script: [{text: hi}]}\n"
        "agents:\n"
        "  a:\n"
        "    description: d\n"
        "    model: m\n"
        '    tools: [lookup, "builtin:get_tim_date"]\n'
        "    max_turn: 3\n"
    )
    result = run_agentfn("validate", "-f", str(spec))
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert f"{spec}:8:13: agents.a.tools[0]: unknown tool 'lookup'" in lines[0]
    assert (
        lines[1]
        == f"{spec}:8:21: agents.a.tools[1]: unknown built-in tool 'get_tim_date'; did you mean 'get_time_date'?"
    )
    assert (
        lines[2]
        == f"{spec}:9:5: agents.a.max_turn: unknown key 'max_turn'; did you mean 'max_turns'?"
    )
    assert lines[-1] == "3 problems found."
    assert result.stdout == ""


def test_validate_names_a_missing_file(tmp_path: Path) -> None:
    result = run_agentfn("validate", "-f", str(tmp_path / "nope.yaml"))
    assert result.returncode == 1
    assert "nope.yaml" in result.stderr and "cannot read" in result.stderr


def test_build_check_passes_on_the_committed_template() -> None:
    result = run_agentfn("build", "--check")
    assert result.returncode == 0, result.stderr


def test_build_check_fails_on_drift_and_build_fixes_it(tmp_path: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(FULL_SPEC.parent, project)
    first = run_agentfn("build", "-f", "agents.yaml", "-o", "template.yaml", cwd=project)
    assert first.returncode == 0, first.stderr
    assert run_agentfn("build", "--check", cwd=project).returncode == 0
    spec = project / "agents.yaml"
    spec.write_text(spec.read_text().replace("max_turns: 8", "max_turns: 9"))
    drift = run_agentfn("build", "--check", cwd=project)
    assert drift.returncode == 1
    assert "differs from what agents.yaml produces" in drift.stderr
    assert run_agentfn("build", cwd=project).returncode == 0
    assert run_agentfn("build", "--check", cwd=project).returncode == 0


def test_build_refuses_an_invalid_spec_and_writes_nothing(tmp_path: Path) -> None:
    spec = tmp_path / "agents.yaml"
    spec.write_text("version: 1\nagents:\n  a: {description: d, model: ghost}\n")
    result = run_agentfn("build", "-f", str(spec), "-o", str(tmp_path / "template.yaml"))
    assert result.returncode == 1
    assert "unknown model 'ghost'" in result.stderr
    assert not (tmp_path / "template.yaml").exists()


def test_build_stages_only_what_runs(tmp_path: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(FULL_SPEC.parent, project)
    assert run_agentfn("build", cwd=project).returncode == 0
    package = project / ".agentfn" / "package"
    assert sorted(p.name for p in package.iterdir()) == [
        "Makefile",  # how sam build builds it: compiled by the runtime's Python
        "agentfn.spec.json",
        "handlers",
        "layer_build.py",
        "runtime",
        "tools",
    ]
    assert not list(package.rglob("__pycache__"))
    assert not list(package.rglob("test_*.py"))
    assert not (package / "requirements.txt").exists()  # dependencies are in the layers
    compiled = json.loads((package / "agentfn.spec.json").read_text())
    assert compiled["agents"]["support"]["max_turns"] == 8
    assert (package / "tools" / "billing.py").exists()
    layers = project / ".agentfn" / "layers"
    wanted: dict[str, set[str]] = {}
    for folder in sorted(layers.iterdir()):
        config = json.loads((folder / "layer.json").read_text())
        wanted[folder.name] = {re.split(r"[<>=\[]", r)[0].lower() for r in config["requirements"]}
        assert config["python"] == "3.13" and config["architecture"] == "arm64"
        assert (folder / "Makefile").exists() and (folder / "layer_build.py").exists()
    assert wanted == {
        "dependencies": {"pydantic", "msgspec", "httpx", "fastjsonschema"},
        "powertools": {"aws-lambda-powertools"},
        "powertools-api": {"aws-lambda-powertools"},
        "mcp": {"mcp"},
    }
    everything = set().union(*wanted.values())
    assert not everything & {"moto", "pytest", "cfn-lint", "pyyaml", "jsonschema", "boto3"}


def test_schema_prints_json_schema_and_check_detects_drift(tmp_path: Path) -> None:
    printed = run_agentfn("schema")
    assert printed.returncode == 0
    schema = json.loads(printed.stdout)
    assert schema["title"] == "agentfn agents.yaml"
    assert "agents" in schema["properties"]
    assert (
        run_agentfn("schema", "--check", str(ROOT / "schema" / "agents.schema.json")).returncode
        == 0
    )
    stale = tmp_path / "stale.json"
    stale.write_text("{}")
    assert run_agentfn("schema", "--check", str(stale)).returncode == 1


def test_run_names_an_unknown_agent_as_a_usage_error() -> None:
    result = run_agentfn("run", "suport", "hello")
    assert result.returncode == 2
    assert "unknown agent or workflow 'suport'; did you mean 'support'?" in result.stderr


def test_usage_errors_exit_2() -> None:
    assert run_agentfn().returncode == 2
    assert run_agentfn("frobnicate").returncode == 2


def test_the_mcp_sdk_is_packaged_only_for_specs_that_use_mcp(full_spec) -> None:  # type: ignore[no-untyped-def]
    from infra.sam.package import requirements
    from runtime.spec import AgentfnSpec

    assert any(r.startswith("mcp") for r in requirements(full_spec))
    data = full_spec.to_compiled()
    data["mcp_servers"] = {}
    for agent in data["agents"].values():
        agent["tools"] = [t for t in agent["tools"] if not t.startswith("mcp:")]
        agent["approval"] = [
            r for r in agent["approval"] if not any(p.startswith("mcp:") for p in r["tools"])
        ]
    assert not any(r.startswith("mcp") for r in requirements(AgentfnSpec.model_validate(data)))
