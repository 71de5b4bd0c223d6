"""Databases the built-in `database_query` / `database_write` tools reach, and what each
agent may touch in them (tables named one by one: nothing is reachable by default)."""

from typing import Annotated, Literal, Self

from pydantic import Field, StringConstraints, model_validator

from runtime.spec.models import SpecModel

IDENTIFIER_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,62}$"
Identifier = Annotated[str, StringConstraints(pattern=IDENTIFIER_PATTERN)]


class SqliteDatabase(SpecModel):
    """A SQLite file in the project (shipped in the package). Deployed, the package is
    read-only: queries work, writes answer the model that the database is read-only."""

    kind: Literal["sqlite"]
    path: str = Field(min_length=1, description="Relative to agents.yaml, inside the project.")


class AuroraDatabase(SpecModel):
    """Aurora (PostgreSQL or MySQL) through the RDS Data API: no VPC, no driver, IAM on this
    cluster and this secret only."""

    kind: Literal["aurora"]
    cluster_arn: str = Field(
        pattern=r"^arn:aws[a-z-]*:rds:[a-z0-9-]+:\d{12}:cluster:[A-Za-z0-9-]+$"
    )
    secret_arn: str = Field(
        pattern=r"^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:[A-Za-z0-9/_+=.@-]+$"
    )
    database: Identifier
    engine: Literal["postgresql", "mysql"] = "postgresql"


DatabaseConfig = Annotated[SqliteDatabase | AuroraDatabase, Field(discriminator="kind")]


class DatabaseAccess(SpecModel):
    """What one agent may do in one database."""

    read: list[Identifier] = Field(
        min_length=1, description="Tables `database_query` may read (joins, subqueries, CTEs)."
    )
    write: list[Identifier] = Field(
        default_factory=list, description="Tables `database_write` may insert into, update, delete."
    )

    @model_validator(mode="after")
    def _writable_are_readable(self) -> Self:
        missing = [t for t in self.write if t.lower() not in {r.lower() for r in self.read}]
        if missing:
            raise ValueError(f"write tables must also be in read: {', '.join(missing)}")
        return self
