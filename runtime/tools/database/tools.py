"""`database_query` and `database_write`: the agent's databases (spec `databases:`), limited
to the tables its own `databases:` entry lists. A database that is missing or unreachable is
answered to the model as a clear error saying what to configure, never a crash."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from runtime.spec.plain import AgentfnSpec, AuroraDatabase, DatabaseAccess, SqliteDatabase
from runtime.tools.base import FunctionTool, ToolContext, ToolError
from runtime.tools.paths import project_dir
from runtime.tools.threads import blocking_pool, run_blocking

QUERY_DESCRIPTION = (
    "Run one read-only SQL SELECT (joins, subqueries, CTEs, UNION allowed) on a database. "
    "No other statements, one statement only; results are capped at 50,000 characters "
    "(`truncated` says so: add a WHERE or LIMIT). Tables you may read: {tables}."
)
WRITE_DESCRIPTION = (
    "Insert, update or delete rows: give the operation, the table, `values` (column: value) "
    "and, for update and delete, `where` (column: value, all must match; required). Values "
    "are bound as parameters. Tables you may write: {tables}."
)


def database_tools(
    spec: AgentfnSpec, agent: str, rds_data: Callable[[], Any]
) -> dict[str, FunctionTool]:
    access = spec.agents[agent].databases
    # the statement is stopped by the database at the call's own limit (the tool's timeout)
    limit = float(spec.agents[agent].tool_timeout or spec.defaults.tool_timeout)
    listed = "; ".join(f"{db}: {', '.join(a.read)}" for db, a in access.items()) or "none"
    writable = "; ".join(f"{db}: {', '.join(a.write)}" for db, a in access.items() if a.write)

    def target(arguments: dict[str, Any]) -> tuple[str, DatabaseAccess, Any]:
        name = arguments.get("database") or (next(iter(access)) if len(access) == 1 else None)
        if name not in access:
            known = ", ".join(access) or "none"
            raise ToolError(
                f"name the database (one of: {known})"
                if name is None
                else f"no database {name!r} for this agent (its databases: {known})"
            )
        config = spec.databases.get(name)
        if config is None:
            raise ToolError(f"database {name!r} is not configured: add it under `databases:`")
        return name, access[name], config

    async def run_query(arguments: dict[str, Any], ctx: ToolContext) -> Any:
        from runtime.tools.database import aurora, sqlite
        from runtime.tools.database.sql_guard import check_select

        _name, rights, config = target(arguments)
        dialect = config.engine if isinstance(config, AuroraDatabase) else "sqlite"
        sql = check_select(arguments.get("sql", ""), set(rights.read), dialect)
        if isinstance(config, SqliteDatabase):
            path = project_dir(spec) / config.path
            cancel = threading.Event()
            try:
                return await run_blocking(
                    blocking_pool(),
                    sqlite.query,
                    path,
                    sql,
                    set(rights.read),
                    timeout=limit,
                    cancel=cancel,
                )
            finally:  # cancelled or timed out: SQLite interrupts the statement at once
                cancel.set()
        return await run_blocking(blocking_pool(), aurora.query, rds_data(), config, sql, limit)

    async def run_write(arguments: dict[str, Any], ctx: ToolContext) -> Any:
        from runtime.tools.database import aurora, sqlite
        from runtime.tools.database.sql_guard import build_write

        _name, rights, config = target(arguments)
        dialect = config.engine if isinstance(config, AuroraDatabase) else "sqlite"
        sql, params = build_write(arguments, set(rights.write), dialect)
        if isinstance(config, SqliteDatabase):
            path = project_dir(spec) / config.path
            table = str(arguments["table"])
            changed = await run_blocking(blocking_pool(), sqlite.write, path, sql, params, table)
        else:
            client = rds_data()
            changed = await run_blocking(blocking_pool(), aurora.write, client, config, sql, params)
        return {"operation": arguments["operation"], "table": arguments["table"], "rows": changed}

    database = {"type": "string", "description": "Which database (optional when it has one)."}
    query = FunctionTool(
        name="database_query",
        description=QUERY_DESCRIPTION.format(tables=listed),
        input_schema={
            "type": "object",
            "properties": {"sql": {"type": "string"}, "database": database},
            "required": ["sql"],
        },
        func=run_query,
        effect="read_only",
    )
    scalar = {"type": ["string", "number", "boolean", "null"]}
    write = FunctionTool(
        name="database_write",
        description=WRITE_DESCRIPTION.format(tables=writable or "none"),
        input_schema={
            "type": "object",
            "properties": {
                "operation": {"type": "string", "enum": ["insert", "update", "delete"]},
                "table": {"type": "string"},
                "values": {"type": "object", "additionalProperties": scalar},
                "where": {"type": "object", "additionalProperties": scalar},
                "database": database,
            },
            "required": ["operation", "table"],
        },
        func=run_write,
        effect="at_most_once",  # a crash mid-write is reported "outcome unknown", never redone
    )
    return {"database_query": query, "database_write": write}
