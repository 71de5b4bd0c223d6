"""`agentfn db-grants`: the SQL that creates an Aurora database role able to do exactly what
the spec lets agents do there — SELECT on the tables some agent may read, INSERT, UPDATE and
DELETE on those some agent may write, nothing else.

The SQL guard (runtime.tools.database.sql_guard) is the first wall; on SQLite, SQLite's
authorizer is the second. Aurora has no authorizer: the database role whose credentials the
`secret_arn` holds is the second wall there (with, on PostgreSQL, the read-only transaction).
Every agent of one `databases:` entry reaches it with the same secret, so the role holds the
union of their tables; one entry per agent (same cluster, a secret and a role each) gives
each agent a wall of its own. No password is ever printed: the operator sets it and puts it
in the secret.
"""

from __future__ import annotations

from runtime.spec import AgentfnSpec
from runtime.spec.databases import AuroraDatabase


def role_name(database: str) -> str:
    """The role for one `databases:` entry (an identifier: names may hold `-`)."""
    return "agentfn_" + "".join(c if c.isalnum() or c == "_" else "_" for c in database).lower()


def _tables(spec: AgentfnSpec, database: str) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """table → the agents that may read it, and table → those that may write it."""
    read: dict[str, list[str]] = {}
    write: dict[str, list[str]] = {}
    for agent, config in spec.agents.items():
        access = config.databases.get(database)
        if access is None:
            continue
        for table in access.read:
            read.setdefault(table, []).append(agent)
        for table in access.write:
            write.setdefault(table, []).append(agent)
    return read, write


def grants_sql(spec: AgentfnSpec, database: str) -> str:
    """The SQL for one aurora database of the spec (ValueError for anything else)."""
    config = spec.databases.get(database)
    if config is None:
        known = ", ".join(n for n, c in spec.databases.items() if isinstance(c, AuroraDatabase))
        raise ValueError(f"no database {database!r} in the spec (aurora ones: {known or 'none'})")
    if not isinstance(config, AuroraDatabase):
        raise ValueError(
            f"database {database!r} is SQLite: its second wall is SQLite's authorizer, no role"
        )
    read, write = _tables(spec, database)
    if not read:
        raise ValueError(f"no agent reads database {database!r}: there is nothing to grant")
    postgres = config.engine == "postgresql"
    role = role_name(database)
    who = f'"{role}"' if postgres else f"'{role}'@'%'"

    def table(name: str) -> str:  # the guard matches names case-blind; PostgreSQL folds them
        return f'"{name.lower()}"' if postgres else f"`{config.database}`.`{name}`"

    lines = [
        f"-- agentfn: the role behind databases.{database} "
        f"(Aurora {config.engine}, database {config.database}).",
        f"-- Put its user name and password in the secret databases.{database}.secret_arn names:",
        f"--   {config.secret_arn}",
        "-- It may do what the spec lets some agent do here, nothing else:",
    ]
    lines += [f"--   read {t}: {', '.join(agents)}" for t, agents in sorted(read.items())]
    lines += [f"--   write {t}: {', '.join(agents)}" for t, agents in sorted(write.items())]
    if postgres:
        lines += [
            f"CREATE ROLE {who} LOGIN;  -- then: \\password {role} (psql), as in the secret",
            f'GRANT CONNECT ON DATABASE "{config.database}" TO {who};',
            f"GRANT USAGE ON SCHEMA public TO {who};",
        ]
    else:
        lines += [
            f"-- CREATE USER {who} IDENTIFIED BY '<the password in the secret>';",
        ]
    lines += [f"GRANT SELECT ON {table(t)} TO {who};" for t in sorted(read)]
    lines += [f"GRANT INSERT, UPDATE, DELETE ON {table(t)} TO {who};" for t in sorted(write)]
    if postgres and not write:
        lines.append(f"ALTER ROLE {who} SET default_transaction_read_only = on;")
    return "\n".join(lines) + "\n"


def aurora_databases(spec: AgentfnSpec) -> list[str]:
    return [name for name, c in spec.databases.items() if isinstance(c, AuroraDatabase)]
