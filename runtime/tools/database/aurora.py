"""Aurora through the RDS Data API: a query runs in a transaction that is rolled back, a
write in one that is committed. Values are always parameters.

Behind the SQL guard, a read has walls of the database's own: on PostgreSQL the transaction
is `READ ONLY` and `statement_timeout` stops a runaway statement at the tool's timeout
(`SET LOCAL`: both end with the transaction). MySQL cannot make a transaction that the
Data API has already begun read-only (it refuses to change a running transaction's access
mode), so there the database role is the wall (docs/spec.md: `agentfn db-grants`), and
`max_execution_time` bounds the SELECT (a session setting: it stays on the Data API's pooled
connection, where it bounds only SELECTs, which agentfn's reads all want bounded). The
Data API's own call limit (45 s) is the outer bound in both."""

from __future__ import annotations

import contextlib
import json
from typing import Any

from runtime.spec.plain import AuroraDatabase
from runtime.tools.base import ToolError
from runtime.tools.database.results import capped_rows


def _parameter(name: str, value: Any) -> dict[str, Any]:
    if value is None:
        return {"name": name, "value": {"isNull": True}}
    if isinstance(value, bool):
        return {"name": name, "value": {"booleanValue": value}}
    if isinstance(value, int):
        return {"name": name, "value": {"longValue": value}}
    if isinstance(value, float):
        return {"name": name, "value": {"doubleValue": value}}
    return {"name": name, "value": {"stringValue": str(value)}}


def _target(config: AuroraDatabase) -> dict[str, str]:
    return {
        "resourceArn": config.cluster_arn,
        "secretArn": config.secret_arn,
        "database": config.database,
    }


def _failed(exc: Exception, what: str) -> ToolError:
    response = getattr(exc, "response", None) or {}
    message = (response.get("Error") or {}).get("Message") or type(exc).__name__
    return ToolError(f"the {what} failed: {message[:500]}")


def session_statements(config: AuroraDatabase, timeout: float) -> list[str]:
    """What runs in the read's transaction before the agent's SELECT."""
    ms = max(1, int(timeout * 1000))
    if config.engine == "postgresql":
        return ["SET TRANSACTION READ ONLY", f"SET LOCAL statement_timeout = {ms}"]
    return [f"SET SESSION max_execution_time = {ms}"]


def query(client: Any, config: AuroraDatabase, sql: str, timeout: float = 30.0) -> dict[str, Any]:
    target = _target(config)
    try:
        transaction = client.begin_transaction(**target)["transactionId"]
    except Exception as exc:
        raise _failed(exc, "query") from None
    try:
        for setting in session_statements(config, timeout):
            client.execute_statement(**target, sql=setting, transactionId=transaction)
        answer = client.execute_statement(
            **target,
            sql=sql,
            transactionId=transaction,
            includeResultMetadata=True,
            formatRecordsAs="JSON",
        )
    except Exception as exc:
        raise _failed(exc, "query") from None
    finally:
        # a failed rollback is harmless: the transaction times out, and nothing was written
        with contextlib.suppress(Exception):
            client.rollback_transaction(
                resourceArn=config.cluster_arn,
                secretArn=config.secret_arn,
                transactionId=transaction,
            )
    records = json.loads(answer.get("formattedRecords") or "[]")
    columns = [c.get("name", "") for c in answer.get("columnMetadata", [])] or (
        list(records[0]) if records else []
    )
    return capped_rows(columns, ([r.get(c) for c in columns] for r in records))


def write(client: Any, config: AuroraDatabase, sql: str, params: dict[str, Any]) -> int:
    target = _target(config)
    try:
        transaction = client.begin_transaction(**target)["transactionId"]
        answer = client.execute_statement(
            **target,
            sql=sql,
            parameters=[_parameter(k, v) for k, v in params.items()],
            transactionId=transaction,
        )
        client.commit_transaction(
            resourceArn=config.cluster_arn, secretArn=config.secret_arn, transactionId=transaction
        )
    except Exception as exc:
        raise _failed(exc, "write") from None
    return int(answer.get("numberOfRecordsUpdated", 0))
