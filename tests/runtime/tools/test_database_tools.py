"""database_query / database_write on a real SQLite file: the parser's rules, SQLite's
authorizer as a second wall, bound parameters, capped results, and an injection suite that
is refused whole; the Data API's request shapes for aurora (botocore Stubber)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from runtime.spec.databases import AuroraDatabase
from runtime.tools.base import ToolError
from runtime.tools.database import aurora, sqlite
from runtime.tools.database.results import MAX_RESULT_CHARS
from runtime.tools.database.sql_guard import build_write, check_select

READ = {"orders", "customers"}


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    path = tmp_path / "shop.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
        db.execute("CREATE TABLE orders (id TEXT PRIMARY KEY, customer_id INT, amount REAL)")
        db.execute("CREATE TABLE secrets (id INTEGER PRIMARY KEY, value TEXT)")
        db.execute("INSERT INTO customers VALUES (1, 'Ana'), (2, 'Jonas')")
        db.execute("INSERT INTO orders VALUES ('A', 1, 10.5), ('B', 2, 20)")
        db.execute("INSERT INTO secrets VALUES (1, 'top secret')")
    return path


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM orders",
        "select o.id, c.name from orders o join customers c on c.id = o.customer_id",
        "SELECT id FROM orders WHERE customer_id IN (SELECT id FROM customers WHERE name = 'Ana')",
        "WITH big AS (SELECT * FROM orders WHERE amount > 15) SELECT * FROM big",
        "SELECT id FROM orders UNION SELECT name FROM customers",
        "SELECT * FROM orders /* a comment; with a semicolon */",
        "SELECT count(*) FROM orders;",
    ],
)
def test_a_select_over_readable_tables_runs(shop: Path, sql: str) -> None:
    answer = sqlite.query(shop, check_select(sql, READ, "sqlite"), READ)
    assert answer["row_count"] >= 1 and not answer["truncated"]


INJECTIONS = [
    "SELECT * FROM orders; DROP TABLE orders",
    "SELECT * FROM orders; -- \nDELETE FROM orders",
    "SELECT * FROM secrets",
    "SELECT * FROM orders UNION SELECT id, value, 1 FROM secrets",
    "SELECT * FROM orders WHERE id IN (SELECT value FROM secrets)",
    "WITH s AS (SELECT * FROM secrets) SELECT * FROM s",
    'SELECT * FROM "secrets"',
    "SELECT * FROM [secrets]",
    "SELECT * FROM `secrets`",
    "SELECT * FROM main.secrets",
    "SELECT * FROM other.orders",
    "SELECT load_extension('/tmp/evil')",
    "SELECT readfile('/etc/passwd')",
    "PRAGMA table_info(secrets)",
    "ATTACH DATABASE '/tmp/x.db' AS x",
    "DELETE FROM orders",
    "UPDATE orders SET amount = 0",
    "INSERT INTO orders VALUES ('C', 1, 1)",
    "DROP TABLE orders",
    "CREATE TABLE x (a)",
    "SELECT * INTO copy FROM orders",
    "SELECT * FROM pragma_table_info('secrets')",
    "SELECT * FROM orders WHERE id = '' OR 1=1; SELECT * FROM secrets",
    "",
    "  ;  ",
    "SELEC * FROM orders",
]


@pytest.mark.parametrize("sql", INJECTIONS)
def test_the_injection_suite_is_refused(sql: str) -> None:
    with pytest.raises(ToolError):
        check_select(sql, READ, "sqlite")


def test_the_authorizer_refuses_what_the_parser_would_have_let_through(shop: Path) -> None:
    # straight to the executor, as if the parser had a hole
    for sql in ("SELECT * FROM secrets", "SELECT * FROM orders o JOIN secrets s ON 1"):
        with pytest.raises(ToolError, match=r"secrets\.\w+ is prohibited"):
            sqlite.query(shop, sql, READ)
    with pytest.raises(ToolError):
        sqlite.query(shop, "DELETE FROM orders", READ)
    with sqlite3.connect(shop) as db:
        assert db.execute("SELECT count(*) FROM orders").fetchone() == (2,)


def test_results_are_capped_at_whole_rows(tmp_path: Path) -> None:
    path = tmp_path / "big.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE orders (id INTEGER, note TEXT)")
        db.executemany("INSERT INTO orders VALUES (?, ?)", [(i, "x" * 1000) for i in range(200)])
    answer = sqlite.query(path, "SELECT * FROM orders", {"orders"})
    assert answer["truncated"] and 40 <= answer["row_count"] < 200
    import json

    assert len(json.dumps(answer)) <= MAX_RESULT_CHARS + 200


def test_writes_bind_values_and_need_a_where(shop: Path) -> None:
    evil = "x'); DROP TABLE orders; --"
    sql, params = build_write(
        {"operation": "insert", "table": "orders", "values": {"id": evil, "amount": 1}},
        {"orders"},
        "sqlite",
    )
    assert evil not in sql
    assert sqlite.write(shop, sql, params, "orders") == 1
    sql, params = build_write(
        {"operation": "update", "table": "orders", "values": {"amount": 99}, "where": {"id": "A"}},
        {"orders"},
        "sqlite",
    )
    assert sqlite.write(shop, sql, params, "orders") == 1
    with sqlite3.connect(shop) as db:
        assert db.execute("SELECT amount FROM orders WHERE id = 'A'").fetchone() == (99,)
        assert db.execute("SELECT count(*) FROM orders WHERE id = ?", (evil,)).fetchone() == (1,)
    refused: list[dict[str, Any]] = [
        {"operation": "delete", "table": "orders"},
        {"operation": "update", "table": "orders", "values": {"amount": 0}},
        {"operation": "delete", "table": "secrets", "where": {"id": 1}},
        {"operation": "insert", "table": "orders; DROP TABLE x", "values": {"id": 1}},
        {"operation": "insert", "table": "orders", "values": {"id) VALUES (1); --": 1}},
        {
            "operation": "update",
            "table": "orders",
            "values": {"amount": {"$gt": 1}},
            "where": {"id": "A"},
        },
        {"operation": "truncate", "table": "orders"},
    ]
    for arguments in refused:
        with pytest.raises(ToolError):
            build_write(arguments, {"orders"}, "sqlite")


def test_a_file_in_the_deployed_package_is_read_only(
    shop: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sql, params = build_write(
        {"operation": "delete", "table": "orders", "where": {"id": "A"}}, {"orders"}, "sqlite"
    )
    monkeypatch.setenv("LAMBDA_TASK_ROOT", str(shop.parent))  # as in Lambda: the package
    with pytest.raises(ToolError, match="read-only here"):
        sqlite.write(shop, sql, params, "orders")
    assert sqlite.query(shop, "SELECT * FROM orders", READ)["row_count"] == 2  # reads work
    with pytest.raises(ToolError, match="missing"):
        sqlite.query(shop.with_name("nope.db"), "SELECT 1", READ)


AURORA = AuroraDatabase(
    kind="aurora",
    cluster_arn="arn:aws:rds:us-east-1:123456789012:cluster:shop",
    secret_arn="arn:aws:secretsmanager:us-east-1:123456789012:secret:shop-AbCdEf",
    database="shop",
)
TARGET = {"resourceArn": AURORA.cluster_arn, "secretArn": AURORA.secret_arn, "database": "shop"}
CLOSE = {"resourceArn": AURORA.cluster_arn, "secretArn": AURORA.secret_arn, "transactionId": "tx"}


def test_aurora_queries_in_a_read_only_transaction_that_is_rolled_back() -> None:
    client = boto3.client("rds-data", region_name="us-east-1")
    with Stubber(client) as stub:
        stub.add_response("begin_transaction", {"transactionId": "tx"}, TARGET)
        read_only = {**TARGET, "sql": "SET TRANSACTION READ ONLY", "transactionId": "tx"}
        stub.add_response("execute_statement", {}, read_only)
        bound = {**TARGET, "sql": "SET LOCAL statement_timeout = 7500", "transactionId": "tx"}
        stub.add_response("execute_statement", {}, bound)
        stub.add_response(
            "execute_statement",
            {
                "columnMetadata": [{"name": "id"}, {"name": "amount"}],
                "formattedRecords": '[{"id": "A", "amount": 10.5}]',
            },
            {
                **TARGET,
                "sql": "SELECT id, amount FROM orders",
                "transactionId": "tx",
                "includeResultMetadata": True,
                "formatRecordsAs": "JSON",
            },
        )
        stub.add_response("rollback_transaction", {"transactionStatus": "x"}, CLOSE)
        answer = aurora.query(client, AURORA, "SELECT id, amount FROM orders", timeout=7.5)
        stub.assert_no_pending_responses()
    assert answer["columns"] == ["id", "amount"] and answer["rows"] == [["A", 10.5]]


def test_aurora_writes_with_typed_parameters_and_commits() -> None:
    client = boto3.client("rds-data", region_name="us-east-1")
    sql, params = build_write(
        {
            "operation": "update",
            "table": "orders",
            "values": {"amount": 2.5, "paid": True},
            "where": {"id": "A", "n": 3},
        },
        {"orders"},
        "postgresql",
    )
    with Stubber(client) as stub:
        stub.add_response("begin_transaction", {"transactionId": "tx"}, TARGET)
        stub.add_response(
            "execute_statement",
            {"numberOfRecordsUpdated": 1},
            {
                **TARGET,
                "sql": 'UPDATE "orders" SET "amount" = :p0, "paid" = :p1 WHERE "id" = :p2 AND "n" = :p3',
                "parameters": [
                    {"name": "p0", "value": {"doubleValue": 2.5}},
                    {"name": "p1", "value": {"booleanValue": True}},
                    {"name": "p2", "value": {"stringValue": "A"}},
                    {"name": "p3", "value": {"longValue": 3}},
                ],
                "transactionId": "tx",
            },
        )
        stub.add_response("commit_transaction", {"transactionStatus": "ok"}, CLOSE)
        assert aurora.write(client, AURORA, sql, params) == 1
        stub.assert_no_pending_responses()
    with Stubber(client) as stub:
        stub.add_client_error("begin_transaction", "BadRequestException", "cluster is paused")
        with pytest.raises(ToolError, match="cluster is paused"):
            aurora.query(client, AURORA, "SELECT 1")


def test_aurora_mysql_bounds_the_select_and_a_refused_setting_refuses_the_read() -> None:
    """MySQL: `max_execution_time` before the SELECT. If the database refuses a wall (here
    PostgreSQL's READ ONLY), the agent's SQL is never sent and the transaction is rolled back."""
    mysql = AURORA.model_copy(update={"engine": "mysql"})
    client = boto3.client("rds-data", region_name="us-east-1")
    with Stubber(client) as stub:
        stub.add_response("begin_transaction", {"transactionId": "tx"}, TARGET)
        bound = {**TARGET, "sql": "SET SESSION max_execution_time = 2000", "transactionId": "tx"}
        stub.add_response("execute_statement", {}, bound)
        stub.add_response(
            "execute_statement",
            {"columnMetadata": [{"name": "n"}], "formattedRecords": '[{"n": 1}]'},
            {
                **TARGET,
                "sql": "SELECT 1 AS n",
                "transactionId": "tx",
                "includeResultMetadata": True,
                "formatRecordsAs": "JSON",
            },
        )
        stub.add_response("rollback_transaction", {"transactionStatus": "x"}, CLOSE)
        assert aurora.query(client, mysql, "SELECT 1 AS n", timeout=2)["rows"] == [[1]]
        stub.assert_no_pending_responses()
    with Stubber(client) as stub:
        stub.add_response("begin_transaction", {"transactionId": "tx"}, TARGET)
        stub.add_client_error("execute_statement", "BadRequestException", "permission denied")
        stub.add_response("rollback_transaction", {"transactionStatus": "x"}, CLOSE)
        with pytest.raises(ToolError, match="permission denied"):
            aurora.query(client, AURORA, "SELECT * FROM secrets", timeout=2)
        stub.assert_no_pending_responses()  # the SELECT was never sent


def test_a_runaway_sqlite_statement_is_interrupted_by_its_deadline_or_a_cancel(
    shop: Path,
) -> None:
    import threading
    import time

    runaway = "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT max(x) FROM n"
    began = time.monotonic()
    with pytest.raises(ToolError, match=r"stopped after 0\.5s"):
        sqlite.query(shop, runaway, READ, timeout=0.5)
    assert time.monotonic() - began < 2
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    began = time.monotonic()
    with pytest.raises(ToolError, match="interrupted"):
        sqlite.query(shop, runaway, READ, cancel=cancel)
    assert time.monotonic() - began < 2
