"""Database settings are validated with their line, and reach IAM and the layers exactly:
the Data API on the agent's aurora cluster and secret only, sqlglot only for agents with the
database tools, the SQLite file in the package."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from infra.checks.validate import validate_file
from infra.sam.layers import SQL
from infra.sam.package import stage_package
from infra.sam.template import build_template
from runtime.spec import AgentfnSpec
from tests.helpers import DEMO_SPEC, load_spec
from tests.infra.cfn import function_statements
from tests.infra.checks.test_validate_bad import _write_project

HEAD = """\
version: 1
models:
  m: {provider: scripted, script: [{text: hi}]}
databases:
  shop: {kind: sqlite, path: shop.db}
"""


def d(body: str) -> str:
    return HEAD + textwrap.dedent(body).lstrip("\n")


CASES = {
    "query without tables": (
        d("""
        agents:
          a:
            description: d
            model: m
            tools: ["builtin:database_query"]  #!
        """),
        "database_query needs `databases:` on the agent",
    ),
    "tables without the tools": (
        d("""
        agents:
          a:
            description: d
            model: m
            databases:  #!
              shop: {read: [orders]}
        """),
        "in tools, or remove databases",
    ),
    "an unknown database": (
        d("""
        agents:
          a:
            description: d
            model: m
            tools: ["builtin:database_query"]
            databases:
              shp: {read: [orders]}  #!
        """),
        "unknown database 'shp'; did you mean 'shop'?",
    ),
    "write without write tables": (
        d("""
        agents:
          a:
            description: d
            model: m
            tools: ["builtin:database_query", "builtin:database_write"]  #!
            databases:
              shop: {read: [orders]}
        """),
        "database_write needs `write:` tables",
    ),
    "a write table that is not read": (
        d("""
        agents:
          a:
            description: d
            model: m
            tools: ["builtin:database_write"]
            databases:
              shop: {read: [orders], write: [customers]}  #!
        """),
        "write tables must also be in read: customers",
    ),
    "a table name that is not an identifier": (
        d("""
        agents:
          a:
            description: d
            model: m
            tools: ["builtin:database_query"]
            databases:
              shop: {read: ["orders; drop"]}  #!
        """),
        "orders; drop",
    ),
}


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_a_bad_database_setting_is_reported_at_its_line(case: str, tmp_path: Path) -> None:
    text, message = CASES[case]
    spec, line = _write_project(tmp_path, text)
    (tmp_path / "shop.db").write_bytes(b"")
    result = validate_file(spec)
    matching = [i for i in result.issues if message in i.message or message in str(i)]
    assert matching, [str(i) for i in result.issues]
    assert matching[0].line == line, [str(i) for i in result.issues]


def test_a_sqlite_path_must_be_a_file_inside_the_project(tmp_path: Path) -> None:
    for path, message in (("../x.db", "inside the project"), ("nope.db", "no file 'nope.db'")):
        text = (
            "version: 1\n"
            "models:\n  m: {provider: scripted, script: [{text: hi}]}\n"
            "databases:\n  shop:\n    kind: sqlite\n"
            f"    path: {path}  #!\n"
            "agents:\n  a: {description: d, model: m}\n"
        )
        spec, line = _write_project(tmp_path / path.replace("/", "_"), text)
        issues = validate_file(spec).issues
        assert any(message in i.message and i.line == line for i in issues), [
            str(i) for i in issues
        ]


def _aurora_spec() -> AgentfnSpec:
    data = load_spec(DEMO_SPEC).to_compiled()
    data["databases"]["ledger"] = {
        "kind": "aurora",
        "cluster_arn": "arn:aws:rds:eu-west-1:123456789012:cluster:ledger",
        "secret_arn": "arn:aws:secretsmanager:eu-west-1:123456789012:secret:ledger-AbCdEf",
        "database": "ledger",
    }
    data["agents"]["analyst"]["databases"]["ledger"] = {"read": ["entries"]}
    return AgentfnSpec.model_validate(data)


def test_iam_and_layers_follow_the_database_tools() -> None:
    template = build_template(_aurora_spec())
    resources = template["Resources"]
    analyst = resources["AgentAnalystFunction"]
    assert analyst["Properties"]["Layers"] == [{"Ref": SQL.logical_id}]
    by_sid = {s["Sid"]: s for s in function_statements(resources, "AgentAnalystFunction")}
    assert by_sid["QueryAuroraDatabases"]["Resource"] == [
        "arn:aws:rds:eu-west-1:123456789012:cluster:ledger"
    ]
    assert by_sid["ReadAuroraSecrets"]["Resource"] == [
        "arn:aws:secretsmanager:eu-west-1:123456789012:secret:ledger-AbCdEf"
    ]
    # helpdesk reads the SQLite file: sqlglot, but no Data API (its database is not aurora)
    helpdesk = json.dumps(resources["AgentHelpdeskFunction"])
    assert SQL.logical_id in helpdesk and "rds-data" not in helpdesk
    with_tools = {"AgentAnalystFunction", "AgentHelpdeskFunction"}
    others = [k for k in resources if k.endswith("Function") and k not in with_tools]
    for name in others:
        text = json.dumps(resources[name])
        assert "rds-data" not in text and SQL.logical_id not in text, name


def test_the_sqlite_file_ships_in_the_package(tmp_path: Path) -> None:
    spec = load_spec(DEMO_SPEC)
    package = stage_package(spec, DEMO_SPEC.parent, tmp_path)
    assert (package / "data" / "shop.db").read_bytes() == (
        DEMO_SPEC.parent / "data" / "shop.db"
    ).read_bytes()
    assert "data" in (package / "Makefile").read_text()
