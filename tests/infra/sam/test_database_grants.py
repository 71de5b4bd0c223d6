"""`agentfn db-grants` prints the Aurora role that is the SQL guard's second wall there:
SELECT on exactly the tables some agent may read, INSERT/UPDATE/DELETE on exactly those
some agent may write, read-only by default when nobody writes, no password anywhere. The
PostgreSQL statements are parsed back (sqlglot) and what they grant is compared with the
spec."""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import sqlglot
from sqlglot import exp

from infra.cli.commands import main

SPEC = """\
version: 1
models:
  m: {provider: scripted, script: [{text: hi}]}
databases:
  shop:
    kind: aurora
    cluster_arn: arn:aws:rds:us-east-1:123456789012:cluster:shop
    secret_arn: arn:aws:secretsmanager:us-east-1:123456789012:secret:shop-AbCdEf
    database: shop
  ledger:
    kind: aurora
    cluster_arn: arn:aws:rds:us-east-1:123456789012:cluster:shop
    secret_arn: arn:aws:secretsmanager:us-east-1:123456789012:secret:ledger-AbCdEf
    database: ledger
    engine: mysql
  reports:
    kind: aurora
    cluster_arn: arn:aws:rds:us-east-1:123456789012:cluster:shop
    secret_arn: arn:aws:secretsmanager:us-east-1:123456789012:secret:reports-AbCdEf
    database: reports
  local: {kind: sqlite, path: shop.db}
agents:
  analyst:
    description: d
    model: m
    tools: ["builtin:database_query", "builtin:database_write"]
    databases:
      shop: {read: [Orders, customers], write: [Orders]}
      ledger: {read: [entries]}
      local: {read: [orders]}
  reader:
    description: d
    model: m
    tools: ["builtin:database_query"]
    databases:
      shop: {read: [orders]}
      reports: {read: [monthly]}
"""


def _cli(tmp_path: Path, *args: str) -> tuple[int, str, str]:
    (tmp_path / "shop.db").write_bytes(b"")
    spec = tmp_path / "agents.yaml"
    spec.write_text(SPEC)
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["db-grants", "-f", str(spec), *args])
    return code, out.getvalue(), err.getvalue()


def _granted(sql: str) -> set[tuple[str, str, str]]:
    """(privilege, object, role) for every GRANT, parsed back; the object is a table, or
    `DATABASE name` / `SCHEMA name`."""
    found = set()
    for statement in sqlglot.parse(sql, read="postgres"):
        if isinstance(statement, exp.Grant):
            kind = statement.args.get("kind")
            table = (
                f"{kind} {statement.args['securable'].name}"
                if kind
                else statement.args["securable"].name
            )
            for privilege in statement.args["privileges"]:
                for principal in statement.args["principals"]:
                    found.add((privilege.name.upper(), table, principal.name))
    return found


def test_the_postgresql_role_gets_exactly_the_spec_tables(tmp_path: Path) -> None:
    code, out, err = _cli(tmp_path, "shop")
    assert code == 0, err
    assert _granted(out) == {
        ("CONNECT", "DATABASE shop", "agentfn_shop"),
        ("USAGE", "SCHEMA public", "agentfn_shop"),
        ("SELECT", "orders", "agentfn_shop"),
        ("SELECT", "customers", "agentfn_shop"),
        ("INSERT", "orders", "agentfn_shop"),
        ("UPDATE", "orders", "agentfn_shop"),
        ("DELETE", "orders", "agentfn_shop"),
    }
    assert "default_transaction_read_only" not in out  # analyst writes here
    statements = [line.split("--")[0].upper() for line in out.splitlines()]
    assert not [s for s in statements if "PASSWORD" in s or "IDENTIFIED" in s]  # none printed


def test_a_database_nobody_writes_gets_a_read_only_role(tmp_path: Path) -> None:
    code, out, _ = _cli(tmp_path, "reports")
    assert code == 0
    assert _granted(out) == {
        ("CONNECT", "DATABASE reports", "agentfn_reports"),
        ("USAGE", "SCHEMA public", "agentfn_reports"),
        ("SELECT", "monthly", "agentfn_reports"),
    }
    assert 'ALTER ROLE "agentfn_reports" SET default_transaction_read_only = on;' in out


def test_mysql_grants_name_the_database_and_every_aurora_database_is_listed(
    tmp_path: Path,
) -> None:
    code, out, _ = _cli(tmp_path)
    assert code == 0
    assert "GRANT SELECT ON `ledger`.`entries` TO 'agentfn_ledger'@'%';" in out
    assert "INSERT" not in out.split("databases.ledger")[1].split("databases.reports")[0]
    assert "databases.shop" in out and "databases.reports" in out and "local" not in out


def test_sqlite_and_unknown_databases_are_refused(tmp_path: Path) -> None:
    code, _, err = _cli(tmp_path, "local")
    assert code == 1 and "SQLite" in err
    code, _, err = _cli(tmp_path, "nope")
    assert code == 1 and "no database 'nope'" in err
