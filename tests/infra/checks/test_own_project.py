"""A project of the user's own, outside this repository (issue: "Your own project"):
`agentfn init`, paths that mean the spec's folder from any working folder, a failing MCP
server that shows itself, tool modules imported by `validate`, the tools' own requirements
in a layer, and the messages a newcomer meets first."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT, run_agentfn


def _init(tmp_path: Path, name: str = "shop") -> Path:
    done = run_agentfn("init", name, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return tmp_path / name


def test_init_scaffolds_a_project_that_validates_runs_and_tests_offline(tmp_path: Path) -> None:
    project = _init(tmp_path)
    expected = {
        "agents.yaml", "agents.schema.json", ".gitignore", "README.md", "tools/__init__.py",
        "tools/text.py", "tools/requirements.txt", "tests/__init__.py", "tests/test_agent.py",
    }  # fmt: skip
    written = {p.relative_to(project).as_posix() for p in project.rglob("*") if p.is_file()}
    assert written == expected
    assert (
        (project / "agents.yaml")
        .read_text()
        .startswith("# yaml-language-server: $schema=./agents.schema.json")
    )
    assert ".agentfn/" in (project / ".gitignore").read_text()
    assert run_agentfn("validate", cwd=project).returncode == 0
    done = run_agentfn("run", "assistant", "How many words?", "--json", cwd=project)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "succeeded"
    assert result["tool_calls"][0]["output"] == {"words": 3}
    # The scaffold's own test passes (pytest in the project, as its README says).
    tests = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert "3 passed" in tests.stdout


def test_init_never_overwrites(tmp_path: Path) -> None:
    project = tmp_path / "mine"
    project.mkdir()
    (project / "agents.yaml").write_text("version: 1\n")
    done = run_agentfn("init", "mine", cwd=tmp_path)
    assert done.returncode == 1
    assert "agents.yaml: already exists" in done.stderr and "nothing written" in done.stderr
    assert (project / "agents.yaml").read_text() == "version: 1\n"
    assert not (project / "tools").exists()


PATHS_SPEC = """\
version: 1
models:
  m:
    provider: scripted
    script:
      - tool_calls:
          - {name: knowledge_search, arguments: {query: damaged refund}}
          - {name: database_query, arguments: {sql: "SELECT id FROM orders WHERE id = 'ORD-1001'"}}
          - {name: mcp__orders__track_shipment, arguments: {order_id: ORD-1002}}
      - text: done
knowledge_bases:
  policies: {kind: local, path: docs}
databases:
  shop: {kind: sqlite, path: data/shop.db}
mcp_servers:
  orders: {transport: stdio, command: python, args: [servers/orders.py], required: true}
agents:
  a:
    description: d
    model: m
    system_prompt: hi
    tools: ["builtin:knowledge_search", "builtin:database_query", "mcp:orders/track_shipment"]
    knowledge_bases: [policies]
    databases: {shop: {read: [orders]}}
"""


def _paths_project(tmp_path: Path) -> Path:
    project = tmp_path / "proj"
    (project / "docs").mkdir(parents=True)
    (project / "docs" / "refunds.md").write_text("# Refunds\n\nA damaged item is refunded.\n")
    (project / "data").mkdir()
    shutil.copy(ROOT / "data" / "shop.db", project / "data" / "shop.db")
    (project / "servers").mkdir()
    shutil.copy(
        ROOT / "tools" / "mcp_servers" / "orders_server.py", project / "servers" / "orders.py"
    )
    (project / "agents.yaml").write_text(PATHS_SPEC)
    return project


def test_every_path_means_the_specs_folder_from_another_working_folder(tmp_path: Path) -> None:
    project = _paths_project(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    spec = str(project / "agents.yaml")
    assert run_agentfn("validate", "-f", spec, cwd=elsewhere).returncode == 0
    done = run_agentfn("run", "-f", spec, "a", "go", "--json", cwd=elsewhere)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    calls = {c["tool_name"]: c for c in result["tool_calls"]}
    assert all(c["success"] for c in calls.values()), calls
    assert "damaged" in json.dumps(calls["knowledge_search"]["output"])
    assert calls["database_query"]["output"]["rows"] == [["ORD-1001"]]
    assert "ORD-1002" in json.dumps(calls["mcp__orders__track_shipment"]["output"])
    assert not result.get("warnings")


def test_a_failing_mcp_server_shows_on_the_terminal_and_required_fails_the_run(
    tmp_path: Path,
) -> None:
    project = _paths_project(tmp_path)
    (project / "servers" / "orders.py").write_text(
        "import sys\nsys.exit('orders server: no config')\n"
    )
    spec = project / "agents.yaml"
    spec.write_text(PATHS_SPEC.replace(", required: true", ""))
    done = run_agentfn("run", "-f", str(spec), "a", "go", cwd=tmp_path)
    assert done.returncode == 0  # not required: the run goes on, visibly
    line = next(x for x in done.stderr.splitlines() if "⚠ MCP server orders" in x)
    assert f"command: python {project}/servers/orders.py; folder: {project})" in line
    assert "orders server: no config" in done.stderr  # the child's stderr tail
    spec.write_text(PATHS_SPEC)
    done = run_agentfn("run", "-f", str(spec), "a", "go", "--json", cwd=tmp_path)
    assert done.returncode == 1
    result = json.loads(done.stdout)
    assert result["error_code"] == "MCP_UNAVAILABLE"
    assert "mcp:orders" in result["error_message"] and "no config" in result["error_message"]


def test_validate_imports_tool_modules_and_warns_of_what_would_not_deploy(tmp_path: Path) -> None:
    project = _init(tmp_path)
    tool = project / "tools" / "text.py"
    source = tool.read_text()
    tool.write_text(
        source.replace(
            "from __future__ import annotations\n",
            "from __future__ import annotations\nimport not_installed_anywhere\n",
        )
    )
    done = run_agentfn("validate", cwd=project)
    assert done.returncode == 1
    assert (
        "agents.yaml:19:14: tools.word_count.handler: module 'tools.text' does not import: "
        "ModuleNotFoundError: No module named 'not_installed_anywhere'"
    ) in done.stderr
    assert f"({tool}, line 7)" in done.stderr
    # PyYAML is installed here (agentfn's CLI uses it) but no layer deploys it.
    tool.write_text(source + "\nimport yaml\n")
    done = run_agentfn("validate", cwd=project)
    assert done.returncode == 0, done.stderr
    assert (
        "tools.word_count.handler: warning: tools.text imports PyYAML, installed here but not "
        "deployed: add it to tools/requirements.txt"
    ) in done.stderr
    (project / "tools" / "requirements.txt").write_text("pyyaml>=6  # the tool's own\n")
    done = run_agentfn("validate", cwd=project)
    assert done.returncode == 0 and "warning" not in done.stderr


def test_the_tools_requirements_become_a_layer_of_the_agents_with_python_tools(
    tmp_path: Path,
) -> None:
    import yaml

    class Loader(yaml.SafeLoader):
        """CloudFormation's short forms (!Ref, !Sub, …) read as plain values."""

    Loader.add_multi_constructor("!", lambda loader, suffix, node: {suffix: None})
    project = _init(tmp_path)
    (project / "tools" / "requirements.txt").write_text("# mine\nhumanize>=4\n")
    done = run_agentfn("build", cwd=project)
    assert done.returncode == 0, done.stderr
    template = yaml.load((project / "template.yaml").read_text(), Loader=Loader)
    resources = template["Resources"]
    assert resources["ToolsLayer"]["Properties"]["ContentUri"] == ".agentfn/layers/tools"
    layers = resources["AgentAssistantFunction"]["Properties"]["Layers"]
    assert {"Ref": "ToolsLayer"} in layers
    staged = json.loads((project / ".agentfn" / "layers" / "tools" / "layer.json").read_text())
    assert staged["requirements"] == ["humanize>=4"]
    (project / "tools" / "requirements.txt").write_text("--index-url https://example.invalid\n")
    done = run_agentfn("build", cwd=project)
    assert done.returncode == 1
    assert "requirements.txt:1: pip options (--index-url) are not supported" in done.stderr


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            "version: 1\nagents:\n\ta:\n    description: x\n",
            "tab.yaml:3:1: (top level): a tab character at line 3, column 1: YAML indents with "
            "spaces only (replace the tab with spaces)",
        ),
        (
            "version: 1\nmcp_servers:\n  x: {provider: scripted, script: []}\n"
            "agents: {a: {description: x, model: m}}\nmodels: {m: {provider: scripted, script: []}}\n",
            "tab.yaml:3:3: mcp_servers.x: missing required key 'transport' (one of: 'stdio', "
            "'http'); 'provider', 'script' are not keys of this section",
        ),
        (
            "version: 1\nmodels: {m: {provider: scripted, script: []}, n: {provider: scripted, "
            "script: []}}\nagents: {a: {description: x, model: claude}}\n",
            "tab.yaml:3:37: agents.a.model: unknown model 'claude' (models defined: m, n)",
        ),
        (
            "version: 1\nmodels: {m: {provider: scripted, script: []}}\n"
            "agents: {a: {description: x, model: m}}\n"
            "knowledge_bases: {kb: {kind: local, path: docs}}\n",
            "knowledge_bases.kb.path: no folder 'docs' in the spec's folder (",
        ),
    ],
)
def test_messages_a_newcomer_can_act_on(tmp_path: Path, spec: str, expected: str) -> None:
    (tmp_path / "tab.yaml").write_text(spec)
    done = run_agentfn("validate", "-f", "tab.yaml", cwd=tmp_path)
    assert done.returncode == 1
    assert expected in done.stderr, done.stderr
    assert "one of: )" not in done.stderr


def test_a_workflow_path_error_names_the_agents_output_schema_with_one_quote(
    tmp_path: Path,
) -> None:
    from tests.infra.checks.test_workflow_spec import w

    spec = w("""
        workflows:
          f:
            steps:
              - {id: a, agent: classifier}
              - {id: b, agent: plain, input: "{a.categroy}"}
        """)
    (tmp_path / "agents.yaml").write_text(spec)
    done = run_agentfn("validate", cwd=tmp_path)
    assert "the output_schema of 'classifier' has no property 'categroy'" in done.stderr
    assert "''" not in done.stderr


WEB_SPEC = """\
version: 1
secrets:
  exa-key: {{source: secretsmanager, name: agentfn/exa}}
web:
  search: {{provider: exa, api_key: "${{secret:exa-key}}", base_url: "{site}/exa/search"}}
models:
  m:
    provider: scripted
    script:
      - tool_calls: [{{name: web_search, arguments: {{query: agentfn}}}}]
      - text: done
agents:
  a: {{description: d, model: m, system_prompt: hi, tools: ["builtin:web_search"]}}
"""


def test_a_web_search_key_is_a_secret_that_validates_and_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.runtime.tools import web_server

    with web_server.serve() as site:
        (tmp_path / "agents.yaml").write_text(WEB_SPEC.format(site=site))
        done = run_agentfn("validate", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        monkeypatch.setenv("AGENTFN_SECRET_EXA_KEY", web_server.KEY)
        done = run_agentfn("run", "a", "search", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    [search] = json.loads(done.stdout)["tool_calls"]
    assert search["success"], search
    assert web_server.KEY not in done.stdout + done.stderr  # the key itself is never shown


def test_build_ships_a_stdio_servers_files_and_refuses_one_outside_the_project(
    tmp_path: Path,
) -> None:
    project = _paths_project(tmp_path)
    done = run_agentfn("build", cwd=project)
    assert done.returncode == 0, done.stderr
    shipped = project / ".agentfn" / "package" / "servers" / "orders.py"
    assert shipped.read_text() == (project / "servers" / "orders.py").read_text()
    assert "servers" in (project / ".agentfn" / "package" / "Makefile").read_text()
    outside = tmp_path / "elsewhere.py"
    shutil.copy(project / "servers" / "orders.py", outside)
    (project / "agents.yaml").write_text(
        PATHS_SPEC.replace("[servers/orders.py]", "[../elsewhere.py]")
    )
    (project / "template.yaml").unlink()
    done = run_agentfn("build", cwd=project)
    assert done.returncode == 1
    assert (
        "mcp_servers.orders.args[0]: '../elsewhere.py' is outside the project folder"
    ) in done.stderr
    assert not (project / "template.yaml").exists()


def test_run_json_says_who_decided_each_call() -> None:
    done = run_agentfn("run", "billing", "Refund ORD-1001, it broke", "--approve", "--json")
    assert done.returncode == 0, done.stderr
    calls = json.loads(done.stdout)["tool_calls"]
    refund = calls[0]
    assert refund["tool_name"] == "issue_refund" and refund["decided_by"] == "cli"
