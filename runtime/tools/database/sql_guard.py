"""What the database tools let through, decided by parsing (sqlglot), never by regexes.

`database_query` takes one read-only SELECT (a UNION of SELECTs, CTEs, joins and subqueries
included) whose every table is one the agent may read. Anything else — a second statement,
a write, DDL, PRAGMA/ATTACH, `SELECT … INTO`, a function that reaches outside the database
(`load_extension`, `readfile`, `pg_read_file`, …) — is refused with the reason.

`database_write` takes structured arguments, not SQL: an operation, a table, column values
and equality conditions; identifiers are checked against a strict pattern and the agent's
tables, values are always bound as parameters, and UPDATE/DELETE need a WHERE.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from runtime.tools.base import ToolError

IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
#: Functions that read or write outside the database, or load code, in the engines we serve.
FORBIDDEN_FUNCTIONS = frozenset(
    {
        "load_extension", "readfile", "writefile", "edit", "fts3_tokenizer",
        "sqlite_compileoption_get", "pg_read_file", "pg_read_binary_file", "pg_ls_dir",
        "pg_stat_file", "lo_import", "lo_export", "dblink", "dblink_exec", "pg_sleep",
        "load_file", "sleep", "benchmark", "sys_exec", "sys_eval", "set_config",
        "pg_terminate_backend", "pg_cancel_backend", "query_to_xml",
        # PostgreSQL functions that read a table or run a query named in a string, out of
        # the parser's sight: `table_to_xml('secrets', ...)` reads secrets
        "query_to_xmlschema", "query_to_xml_and_xmlschema", "table_to_xml",
        "table_to_xmlschema", "table_to_xml_and_xmlschema", "cursor_to_xml",
        "cursor_to_xmlschema", "schema_to_xml", "schema_to_xmlschema",
        "schema_to_xml_and_xmlschema", "database_to_xml", "database_to_xmlschema",
        "database_to_xml_and_xmlschema", "ts_stat", "lo_get", "pg_sleep_for",
        "pg_sleep_until", "pg_ls_logdir", "pg_ls_waldir", "pg_ls_tmpdir",
    }
)  # fmt: skip
DIALECTS = {"sqlite": "sqlite", "postgresql": "postgres", "mysql": "mysql"}


def check_select(sql: str, readable: set[str], dialect: str) -> str:
    """The query, when it is one SELECT over readable tables only; else ToolError."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import ParseError

    if not isinstance(sql, str) or not sql.strip():
        raise ToolError("sql must be a non-empty SELECT statement")
    try:
        statements = [s for s in sqlglot.parse(sql, read=DIALECTS[dialect]) if s is not None]
    except ParseError as exc:
        raise ToolError(f"the SQL does not parse: {str(exc).splitlines()[0][:300]}") from None
    if len(statements) != 1:
        raise ToolError("exactly one statement, please: no ';' between statements")
    (tree,) = statements
    if not isinstance(tree, exp.Query) or not isinstance(tree, (exp.Select, exp.SetOperation)):
        raise ToolError(f"only SELECT is allowed here, not {tree.key.upper()}")
    forbidden = (
        exp.Insert, exp.Update, exp.Delete, exp.Create, exp.Drop, exp.Alter, exp.Command, exp.Into,
    )  # fmt: skip
    for node in tree.walk():
        if isinstance(node, forbidden):
            raise ToolError(f"only a read-only SELECT is allowed: found {node.key.upper()}")
        if isinstance(node, exp.Func):
            name = (node.name if isinstance(node, exp.Anonymous) else node.sql_name()).lower()
            if name in FORBIDDEN_FUNCTIONS:
                raise ToolError(f"the function {name}() is not allowed")
    allowed = {t.lower() for t in readable}
    for table in _real_tables(tree):
        if table.args.get("catalog") or (table.db and table.db.lower() not in ("", "main")):
            raise ToolError(f"only this database's tables: {table.sql()} is not allowed")
        if table.name.lower() not in allowed:
            listed = ", ".join(sorted(readable))
            raise ToolError(f"table {table.name!r} is not one this agent may read ({listed})")
    return sql.strip().rstrip(";")


def _real_tables(tree: Any) -> Iterator[Any]:
    """Every table reference in the statement that is not a CTE in scope at that point.

    A CTE name shadows a table only inside the query that carries its WITH (its main
    query, the CTEs listed after it, its own body when the WITH is RECURSIVE) and the
    scopes nested in those, never a sibling or an enclosing query: in
    `SELECT * FROM secrets WHERE EXISTS (WITH secrets AS (...) ...)` the outer `secrets`
    is the table. A reference counts as the CTE only when it is spelled exactly as the
    CTE's name, quoting included, and unqualified: whatever an engine's case rules, such
    a pair names the same thing, so any doubt resolves to "a real table" and is checked.
    The walk is an explicit stack (no recursion limit) over every node of the tree, so
    no table reference escapes it wherever it sits.
    """
    from sqlglot import exp

    stack: list[tuple[Any, frozenset[tuple[str, bool]]]] = [(tree, frozenset())]
    while stack:
        node, visible = stack.pop()
        children = list(node.iter_expressions())
        with_ = next((c for c in children if isinstance(c, exp.With)), None)
        if with_ is not None:
            names = visible
            for cte in with_.expressions:
                key = _key(cte.args.get("alias"))
                own = names | {key} if with_.args.get("recursive") and key else names
                stack.append((cte, own))
                names = names | {key} if key else names
            visible = names
            children = [c for c in children if c is not with_]
        if isinstance(node, exp.Table):
            if not node.name:
                raise ToolError("a table-valued function or expression is not allowed in FROM")
            if node.args.get("db") or node.args.get("catalog") or _key(node) not in visible:
                yield node
        if isinstance(node, exp.In) and node.args.get("field") is not None:
            raise ToolError("`IN table` is not allowed: write `IN (SELECT column FROM table)`")
        stack.extend((child, visible) for child in children)


def _key(node: Any) -> tuple[str, bool] | None:
    """A name exactly as written: its text and whether it was quoted."""
    from sqlglot import exp

    identifier = node.this if node is not None else None
    if not isinstance(identifier, exp.Identifier):
        return None
    return identifier.this, bool(identifier.args.get("quoted"))


def build_write(
    arguments: dict[str, Any], writable: set[str], dialect: str
) -> tuple[str, dict[str, Any]]:
    """(SQL with `:pN` placeholders, their values) for a write: the table and every column
    are checked, and no value is ever put into the SQL text."""
    operation = str(arguments.get("operation", "")).lower()
    if operation not in ("insert", "update", "delete"):
        raise ToolError("operation must be insert, update or delete")
    table = arguments.get("table")
    if not isinstance(table, str) or not IDENTIFIER.match(table):
        raise ToolError(f"invalid table name {table!r}")
    if table.lower() not in {t.lower() for t in writable}:
        listed = ", ".join(sorted(writable))
        raise ToolError(f"table {table!r} is not one this agent may write ({listed})")
    values = arguments.get("values") or {}
    where = arguments.get("where") or {}
    if not isinstance(values, dict) or not isinstance(where, dict):
        raise ToolError("values and where are objects of column: value")
    for column in [*values, *where]:
        if not IDENTIFIER.match(str(column)):
            raise ToolError(f"invalid column name {column!r}")
    quote = "`" if dialect == "mysql" else '"'
    params: dict[str, Any] = {}

    def q(name: str) -> str:  # an identifier, already checked against IDENTIFIER
        return f"{quote}{name}{quote}"

    def bind(value: Any) -> str:
        if isinstance(value, (dict, list)):
            raise ToolError("values are strings, numbers, booleans or null")
        name = f"p{len(params)}"
        params[name] = value
        return f":{name}"

    if operation == "insert":
        if not values or where:
            raise ToolError("insert takes values (and no where)")
        columns = ", ".join(q(c) for c in values)
        placeholders = ", ".join(bind(v) for v in values.values())
        return f"INSERT INTO {q(table)} ({columns}) VALUES ({placeholders})", params
    if not where:
        raise ToolError(f"{operation} needs a where (no {operation} of every row)")
    if operation == "delete" and values:
        raise ToolError("delete takes a where only")
    if operation == "update" and not values:
        raise ToolError("update takes values to set")
    sets = ", ".join(f"{q(c)} = {bind(v)}" for c, v in values.items())
    conditions = " AND ".join(
        f"{q(c)} IS NULL" if v is None else f"{q(c)} = {bind(v)}" for c, v in where.items()
    )
    if operation == "update":
        return f"UPDATE {q(table)} SET {sets} WHERE {conditions}", params
    return f"DELETE FROM {q(table)} WHERE {conditions}", params
