"""SQLite behind the database tools, with SQLite's own authorizer as a second wall: even a
statement the parser let through can read only the agent's tables, and write only the one
table of a `database_write`, nothing else (no PRAGMA, ATTACH, functions that touch files)."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from runtime.tools.base import ToolError
from runtime.tools.database.results import capped_rows

_DENIED_FUNCTIONS = ("load_extension", "readfile", "writefile", "edit", "fts3_tokenizer")


def _authorizer(
    readable: set[str], writable: set[str]
) -> Callable[[int, str | None, str | None, str | None, str | None], int]:
    def decide(
        action: int, arg1: str | None, arg2: str | None, _db: str | None, _t: str | None
    ) -> int:
        if action == sqlite3.SQLITE_READ:
            return sqlite3.SQLITE_OK if (arg1 or "").lower() in readable else sqlite3.SQLITE_DENY
        if action in (sqlite3.SQLITE_INSERT, sqlite3.SQLITE_UPDATE, sqlite3.SQLITE_DELETE):
            return sqlite3.SQLITE_OK if (arg1 or "").lower() in writable else sqlite3.SQLITE_DENY
        if action == sqlite3.SQLITE_FUNCTION:
            return (
                sqlite3.SQLITE_DENY
                if (arg2 or "").lower() in _DENIED_FUNCTIONS
                else sqlite3.SQLITE_OK
            )
        if action in (sqlite3.SQLITE_SELECT, sqlite3.SQLITE_TRANSACTION, sqlite3.SQLITE_RECURSIVE):
            return sqlite3.SQLITE_OK
        return sqlite3.SQLITE_DENY  # pragma, attach, DDL, everything else

    return decide


def _open(path: Path, write: bool) -> sqlite3.Connection:
    if not path.is_file():
        raise ToolError(f"the database file {path.name!r} is missing; check databases.*.path")
    mode = "rw" if write else "ro"
    return sqlite3.connect(f"file:{path}?mode={mode}", uri=True, isolation_level=None, timeout=5)


#: How many SQLite VM instructions run between two looks at the clock (~1 ms of work).
PROGRESS_STEPS = 10_000


def query(
    path: Path,
    sql: str,
    readable: set[str],
    *,
    timeout: float | None = None,
    cancel: threading.Event | None = None,
) -> dict[str, Any]:
    """Run a checked SELECT in a transaction that is rolled back.

    A runaway statement (a recursive CTE without an end, a cross join of big tables) is
    interrupted by SQLite itself once `timeout` seconds have passed or `cancel` is set
    (the tool call was cancelled or timed out): the thread running it stops instead of
    burning a core for as long as the process lives."""
    connection = _open(path, write=False)
    try:
        connection.execute("PRAGMA query_only = ON")
        connection.set_authorizer(_authorizer({t.lower() for t in readable}, set()))
        deadline = None if timeout is None else time.monotonic() + timeout

        def stop() -> int:  # non-zero: SQLite interrupts the statement
            late = deadline is not None and time.monotonic() > deadline
            return int(late or (cancel is not None and cancel.is_set()))

        connection.set_progress_handler(stop, PROGRESS_STEPS)
        connection.execute("BEGIN")
        try:
            cursor = connection.execute(sql)
            columns = [d[0] for d in cursor.description or []]
            return capped_rows(columns, cursor)
        finally:
            connection.execute("ROLLBACK")
    except sqlite3.OperationalError as exc:
        if "interrupted" in str(exc):
            raise ToolError(f"the query was stopped after {timeout or 0:g}s: {exc}") from None
        raise ToolError(f"the query failed: {exc}") from None
    except sqlite3.DatabaseError as exc:
        raise ToolError(f"the query failed: {exc}") from None
    finally:
        connection.close()


def _in_package(path: Path) -> bool:
    """Whether the file is part of the deployed function's package (read-only in Lambda)."""
    root = os.environ.get("LAMBDA_TASK_ROOT")
    return root is not None and Path(root).resolve() in path.resolve().parents


def write(path: Path, sql: str, params: dict[str, Any], table: str) -> int:
    """Run one checked write in its own transaction; the rows it changed."""
    if _in_package(path):
        raise ToolError(
            "this SQLite database is read-only here (a file in the deployed package); "
            "writes need an aurora database"
        )
    try:
        connection = _open(path, write=True)
    except sqlite3.OperationalError as exc:
        raise ToolError(f"the database cannot be written here: {exc}") from None
    try:
        connection.set_authorizer(_authorizer({table.lower()}, {table.lower()}))
        connection.execute("BEGIN IMMEDIATE")
        try:
            changed = connection.execute(sql, params).rowcount
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        connection.execute("COMMIT")
        return int(changed)
    except sqlite3.OperationalError as exc:
        if "readonly" in str(exc).replace(" ", "").lower():
            raise ToolError(
                "this SQLite database is read-only here (a file in the deployed package); "
                "writes need an aurora database"
            ) from None
        raise ToolError(f"the write failed: {exc}") from None
    except sqlite3.DatabaseError as exc:
        raise ToolError(f"the write failed: {exc}") from None
    finally:
        connection.close()
