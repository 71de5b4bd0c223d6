"""The SQL guard resolves table names by scope: a CTE named like a forbidden table shadows
it only inside its own WITH. The two attacks of issue 22 (a CTE in an EXISTS or a scalar
subquery "covering" an outer read of `secrets`) are refused in every dialect, and a fuzzer
checks the guard against SQLite itself: generated nested queries (WITH, RECURSIVE, derived
tables, EXISTS, IN, scalar subqueries, UNION, joins, aliases named like tables) run on a
SQLite database whose authorizer records every table the statement really reads; whatever
the guard lets through must read only the agent's tables."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from runtime.tools.base import ToolError
from runtime.tools.database import sqlite as sqlite_tool
from runtime.tools.database.sql_guard import check_select

READ = {"orders", "customers"}
DIALECTS = ("sqlite", "postgresql", "mysql")
ATTACKS = [
    "SELECT * FROM secrets WHERE EXISTS (WITH secrets AS (SELECT 1) SELECT 1)",
    "SELECT (WITH secrets AS (SELECT 1) SELECT 1), * FROM secrets",
    "SELECT * FROM secrets UNION SELECT * FROM (WITH secrets AS (SELECT 1) SELECT 1) AS t",
    "WITH a AS (SELECT * FROM secrets WHERE EXISTS (WITH secrets AS (SELECT 1) SELECT 1)) "
    "SELECT * FROM a",
    "SELECT * FROM (SELECT 1 AS x) AS secrets WHERE EXISTS (SELECT * FROM secrets)",
    'WITH "secrets" AS (SELECT 1) SELECT * FROM "Secrets"',
    "WITH secrets AS (SELECT 1) SELECT * FROM main.secrets",
    "WITH secrets AS (SELECT * FROM secrets) SELECT * FROM secrets",
    "SELECT * FROM orders WHERE id IN secrets",
    "SELECT table_to_xml('secrets', true, false, '')",
]


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("sql", ATTACKS)
def test_a_cte_does_not_shadow_a_table_outside_its_scope(sql: str, dialect: str) -> None:
    with pytest.raises(ToolError):
        check_select(sql, READ, dialect)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_ctes_still_shadow_inside_their_scope(dialect: str) -> None:
    allowed = [
        "WITH secrets AS (SELECT id FROM orders) SELECT * FROM secrets",
        "WITH a AS (SELECT 1 AS x), b AS (SELECT x FROM a) SELECT * FROM b",
        "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 5) "
        "SELECT x FROM n",
        "SELECT * FROM orders WHERE EXISTS (WITH s AS (SELECT 1 AS x) "
        "SELECT * FROM s WHERE EXISTS (SELECT * FROM s))",
    ]
    for sql in allowed:
        assert check_select(sql, READ, dialect)
    # a later CTE is not visible to an earlier one, nor one to its own body without RECURSIVE
    for sql in (
        "WITH a AS (SELECT * FROM b), b AS (SELECT 1) SELECT * FROM a",
        "WITH n AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT * FROM n",
    ):
        with pytest.raises(ToolError, match="not one this agent may read"):
            check_select(sql, READ, dialect)


NAMES = ["orders", "customers", "secrets", "t1", "t2"]


class Generator:
    """Random single-column (`x`) SELECTs that SQLite accepts most of the time."""

    def __init__(self, seed: int) -> None:
        self.r = random.Random(seed)

    def name(self, weights: tuple[int, ...] = (6, 6, 3, 1, 1)) -> str:
        """A table or CTE name, mostly readable ones, spelled quoted or capitalised now
        and then (the guard must treat a spelling it cannot match as a real table)."""
        (name,) = self.r.choices(NAMES, weights)
        roll = self.r.random()
        if roll < 0.08:
            return f'"{name}"'
        if roll < 0.12:
            return name.capitalize()
        return name

    def query(self, depth: int) -> str:
        roll = self.r.random()
        if depth > 0 and roll < 0.3:
            recursive = self.r.random() < 0.25
            ctes = []
            for _ in range(self.r.randint(1, 2)):
                name = self.name((2, 2, 3, 2, 2))  # CTEs named like forbidden tables
                body = self.query(depth - 1)
                if recursive and self.r.random() < 0.5:
                    body = f"SELECT 1 UNION ALL SELECT x + 1 FROM {name} WHERE x < 3"
                ctes.append(f"{name}(x) AS ({body})")
            head = "WITH RECURSIVE " if recursive else "WITH "
            return head + ", ".join(ctes) + " " + self.compound(depth - 1)
        return self.compound(depth)

    def compound(self, depth: int) -> str:
        if depth > 0 and self.r.random() < 0.2:
            joiner = self.r.choice([" UNION ", " UNION ALL ", " EXCEPT "])
            return self.core(depth - 1) + joiner + self.core(depth - 1)
        return self.core(depth)

    def core(self, depth: int) -> str:
        src, other, alias = self.name(), self.name(), self.name()
        if depth <= 0:
            return self.r.choice(
                [f"SELECT x FROM {src}", f"SELECT x FROM {src} AS {alias}", "SELECT 1 AS x"]
            )
        sub = self.query(depth - 1)
        shapes: list[Callable[[], str]] = [
            lambda: f"SELECT x FROM ({sub}) AS {alias}",
            lambda: f"SELECT x FROM {src} WHERE EXISTS ({sub})",
            lambda: f"SELECT ({sub}) AS x FROM {src}",
            lambda: f"SELECT ({sub}) AS x",
            lambda: f"SELECT a.x AS x FROM {src} AS a JOIN {other} AS b ON a.x = b.x",
            lambda: f"SELECT a.x AS x FROM ({sub}) AS a JOIN {other} AS b ON a.x = b.x",
            lambda: f"SELECT x FROM {src} WHERE x IN ({sub})",
            lambda: f"SELECT x FROM {src} WHERE x IN {other}",
            lambda: f"SELECT x FROM {src} WHERE x = (SELECT x FROM ({sub}) AS {alias} LIMIT 1)",
            lambda: f"SELECT x FROM {src} AS {alias} WHERE NOT EXISTS ({sub})",
        ]
        return self.r.choice(shapes)()


def tables_read(connection: sqlite3.Connection, sql: str) -> set[str] | None:
    """The tables SQLite really reads for `sql` (None: SQLite refuses the statement)."""
    reads: set[str] = set()

    def record(action: int, arg1: str | None, *_: str | None) -> int:
        if action == sqlite3.SQLITE_READ:
            reads.add((arg1 or "").lower())
        return sqlite3.SQLITE_OK

    connection.set_authorizer(record)
    try:
        connection.execute(sql).fetchall()
    except sqlite3.Error:
        return None
    finally:
        connection.set_authorizer(None)
    return reads


def test_the_guard_agrees_with_sqlites_authorizer_on_generated_nested_queries() -> None:
    connection = sqlite3.connect(":memory:")
    for table in NAMES:  # t1 and t2 are forbidden tables too, and CTE names
        connection.execute(f"CREATE TABLE {table} (x INTEGER)")
        connection.execute(f"INSERT INTO {table} VALUES (1), (2)")
    connection.set_progress_handler(lambda: 0, 1_000_000)
    generator = Generator(seed=22)
    valid = reads_secrets = shadow_attempts = 0
    passed = dict.fromkeys(DIALECTS, 0)
    leaks: list[tuple[str, str, set[str]]] = []
    for _ in range(600):
        sql = generator.query(depth=generator.r.randint(1, 4))
        reads = tables_read(connection, sql)
        if reads is None:
            continue
        valid += 1
        forbidden = reads - READ
        reads_secrets += bool(forbidden)
        shadow_attempts += bool(forbidden) and any(f"{t}(x) as" in sql.lower() for t in forbidden)
        for dialect in DIALECTS:
            try:
                check_select(sql, READ, dialect)
            except ToolError:
                continue
            passed[dialect] += 1
            if forbidden:
                leaks.append((dialect, sql, forbidden))
    print(f"{valid} valid statements, {reads_secrets} read a forbidden table; passed: {passed}")
    assert not leaks, leaks[:5]
    # the run meant something: many valid statements, many forbidden reads (some of them
    # behind a CTE named `secrets`), and many statements the guard let through
    assert valid >= 300 and reads_secrets >= 60 and shadow_attempts >= 15, (valid, reads_secrets)
    assert passed["sqlite"] >= 80 and passed["postgresql"] >= 60, passed


def test_sqlite_runs_what_the_guard_lets_through_behind_its_authorizer(tmp_path: Path) -> None:
    path = tmp_path / "shop.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE orders (id TEXT)")
        db.execute("CREATE TABLE secrets (id TEXT)")
        db.execute("INSERT INTO orders VALUES ('A')")
    sql = "WITH secrets AS (SELECT id FROM orders) SELECT * FROM secrets"
    answer = sqlite_tool.query(path, check_select(sql, READ, "sqlite"), READ)
    assert answer["rows"] == [["A"]]
