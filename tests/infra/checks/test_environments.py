"""One agents.yaml for local and deployed runs (`environments`, `--env`, AGENTFN_ENV), and
`agentfn build` warning of (with `--strict`, refusing) a deployment answered by a scripted
model. Everything through the real CLI in a subprocess, as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from infra.checks.validate import validate_file
from runtime.spec import load_compiled
from tests.helpers import FULL_SPEC, ROOT, load_spec, run_agentfn

SPEC = """\
version: 1
defaults: {model: local}
secrets:
  key: {name: dev/key}
models:
  local:
    provider: scripted
    script: [{text: from the script}]
  spare:
    provider: scripted
    script: [{text: never deployed}]
environments:
  prod:
    secrets:
      key: {name: prod/key}
    models:
      local: {provider: openai, model_id: gpt-4.1, api_key: "${secret:key}"}
  staging:
    models:
      local:
        provider: scripted
        script: [{text: from staging}]
agents:
  helper: {description: Helps., system_prompt: Help.}
"""


def _project(tmp_path: Path, text: str = SPEC) -> Path:
    (tmp_path / "agents.yaml").write_text(text, encoding="utf-8")
    return tmp_path


def _agentfn(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "infra.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
    )


def _function_environment(project: Path) -> dict[str, str]:
    template = yaml.safe_load((project / "template.yaml").read_text(encoding="utf-8"))
    return template["Globals"]["Function"]["Environment"]["Variables"]


def test_the_built_package_holds_the_resolved_spec_and_its_hash_is_the_templates(
    tmp_path: Path,
) -> None:
    project = _project(tmp_path)
    result = _agentfn("build", "--env", "prod", cwd=project)
    assert result.returncode == 0, result.stderr
    compiled_path = project / ".agentfn" / "package" / "agentfn.spec.json"
    compiled = json.loads(compiled_path.read_text(encoding="utf-8"))
    assert "environments" not in compiled  # no function sees another environment
    assert compiled["models"]["local"]["provider"] == "openai"
    assert compiled["secrets"]["key"]["name"] == "prod/key"
    deployed = load_compiled(compiled_path).spec_hash()
    assert _function_environment(project)["AGENTFN_SPEC_HASH"] == deployed
    resolved = validate_file(project / "agents.yaml", "prod").spec
    assert resolved is not None and resolved.spec_hash() == deployed
    body = (project / "template.yaml").read_text(encoding="utf-8")
    assert "secret:prod/key-??????" in body  # prod's secret is granted, dev's is not
    assert "dev/key" not in body

    base = _agentfn("build", cwd=project)
    assert base.returncode == 0, base.stderr
    assert _function_environment(project)["AGENTFN_SPEC_HASH"] != deployed
    assert "prod/key" not in (project / "template.yaml").read_text(encoding="utf-8")

    by_variable = _agentfn("build", cwd=project, env={"AGENTFN_ENV": "prod"})
    assert by_variable.returncode == 0, by_variable.stderr
    assert _function_environment(project)["AGENTFN_SPEC_HASH"] == deployed


def test_a_spec_without_environments_compiles_as_before() -> None:
    """`environments` never reaches the compiled spec, so its hash is unchanged."""
    assert "environments" not in load_spec(FULL_SPEC).to_compiled()


def test_scripted_models_are_a_warning_at_build_and_strict_refuses_them(tmp_path: Path) -> None:
    project = _project(tmp_path)
    result = _agentfn("build", cwd=project)
    assert result.returncode == 0, result.stderr
    assert (
        "agents.yaml:6:3: models.local: warning: scripted model 'local' answers from its "
        "script, not a model; deployed, it would answer agent helper"
    ) in result.stderr
    assert "'spare'" not in result.stderr  # no deployed agent can call it
    check = _agentfn("build", "--check", cwd=project)  # a comparison, not a deployment
    assert check.returncode == 0 and "warning" not in check.stderr, check.stderr
    (project / "template.yaml").unlink()
    strict = _agentfn("build", "--strict", cwd=project)
    assert strict.returncode == 1
    assert "--strict: refusing to build with 1 warning(s)" in strict.stderr
    assert not (project / "template.yaml").exists()
    prod = _agentfn("build", "--strict", "--env", "prod", cwd=project)
    assert prod.returncode == 0, prod.stderr
    assert "warning" not in prod.stderr
    staging = _agentfn("build", "--env", "staging", cwd=project)
    assert (
        "agents.yaml:20:7: environments.staging.models.local: warning: scripted model 'local'"
    ) in staging.stderr  # where the environment wrote it


FALLBACK_AND_SUMMARY = """\
version: 1
models:
  real: {provider: bedrock, model_id: m, fallbacks: [spare]}
  spare:
    provider: scripted
    script: [{text: s}]
  summary:
    provider: scripted
    script: [{text: s}]
agents:
  helper:
    description: Helps.
    system_prompt: Help.
    model: real
    compaction: {model: summary}
"""


def test_a_scripted_fallback_or_summariser_is_found_too(tmp_path: Path) -> None:
    result = _agentfn("build", cwd=_project(tmp_path, FALLBACK_AND_SUMMARY))
    assert result.returncode == 0, result.stderr
    assert "agents.yaml:4:3: models.spare: warning: scripted model 'spare'" in result.stderr
    assert "agents.yaml:7:3: models.summary: warning: scripted model 'summary'" in result.stderr


def test_run_uses_the_environment_asked_for(tmp_path: Path) -> None:
    project = _project(tmp_path)
    answers = {}
    for how, args, env in [
        ("base", [], {}),
        ("flag", ["--env", "staging"], {}),
        ("variable", [], {"AGENTFN_ENV": "staging"}),
    ]:
        result = _agentfn("run", "helper", "hi", "--json", *args, cwd=project, env=env)
        assert result.returncode == 0, result.stderr
        answers[how] = json.loads(result.stdout)["result"]
    assert answers == {
        "base": "from the script",
        "flag": "from staging",
        "variable": "from staging",
    }


def test_every_environment_is_validated_at_the_line_it_was_written(tmp_path: Path) -> None:
    text = SPEC.replace(
        '      local: {provider: openai, model_id: gpt-4.1, api_key: "${secret:key}"}',
        "      local: {provider: bedrock, model_id: m, fallbacks: [nowhere]}",
    ).replace(
        "        provider: scripted\n        script: [{text: from staging}]",
        "        provider: bedrok",
    )
    result = run_agentfn("validate", cwd=_project(tmp_path, text))
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert any(
        line.startswith(
            "agents.yaml:17:59: environments.prod.models.local.fallbacks[0]: unknown model "
            "'nowhere' (models defined: "
        )
        and line.endswith(") (environment prod)")
        for line in lines
    ), lines
    assert any(
        line.startswith(
            "agents.yaml:21:19: environments.staging.models.local.provider: "
            "unknown provider 'bedrok'; did you mean 'bedrock'?"
        )
        for line in lines
    ), lines
    assert lines[-1] == "2 problems found."


def test_a_misspelt_section_or_environment_is_named(tmp_path: Path) -> None:
    project = _project(tmp_path, SPEC.replace("environments:", "environment:"))
    result = run_agentfn("validate", cwd=project)
    assert "unknown key 'environment'; did you mean 'environments'?" in result.stderr
    project = _project(tmp_path)
    for command in (["build"], ["run", "helper", "hi"], ["dev", "--port", "0", "--aws-port", "0"]):
        result = _agentfn(*command, "--env", "prd", cwd=project)
        assert result.returncode in (1, 2)
        assert (
            "agents.yaml:12:1: environments: unknown environment 'prd'; did you mean 'prod'? "
            "(known: prod, staging)"
        ) in result.stderr
    assert _agentfn("build", cwd=project, env={"AGENTFN_ENV": "nope"}).returncode == 1
    (tmp_path / "bare").mkdir()
    bare = _project(tmp_path / "bare", FALLBACK_AND_SUMMARY)
    result = _agentfn("build", "--env", "prod", cwd=bare)
    assert result.returncode == 1
    assert "unknown environment 'prod' (known: none declared)" in result.stderr


def test_an_mcp_server_replaced_by_an_environment_is_checked_where_it_is_written(
    tmp_path: Path,
) -> None:
    text = SPEC.replace(
        "  staging:\n",
        "    mcp_servers:\n      orders: {transport: http, url: ftp://orders.example.com}\n"
        "  staging:\n",
    )
    result = run_agentfn("validate", cwd=_project(tmp_path, text))
    assert result.returncode == 1
    assert "agents.yaml:19:38: environments.prod.mcp_servers.orders.url: " in result.stderr


def test_an_environment_reaches_the_json_schema() -> None:
    from infra.cli.spec_files import json_schema

    schema = json.loads(json_schema())
    environment = schema["$defs"]["Environment"]
    assert set(environment["properties"]) == {"models", "secrets", "mcp_servers"}
    assert environment["additionalProperties"] is False
    assert "environments" in schema["properties"]
