"""The whole `agents.yaml`: defaults, deployment settings, secrets and the named sections.

The runtime reads the *compiled* spec (`agentfn.spec.json`, written by `agentfn build`),
which is this model dumped to JSON, into the structs of runtime.spec.plain: no YAML parser,
no validation of references and no pydantic at a cold start, those happened at build time.
"""

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Self

from pydantic import Field, ValidationInfo, field_validator, model_validator

from runtime.spec.agents import AgentConfig
from runtime.spec.budget import BudgetSettings
from runtime.spec.context import CompactionSettings
from runtime.spec.databases import DatabaseConfig
from runtime.spec.hooks import HookConfig
from runtime.spec.knowledge import KnowledgeBaseConfig
from runtime.spec.methods import SpecMethods
from runtime.spec.models import ModelConfig, SpecModel
from runtime.spec.monitoring import MonitoringSettings
from runtime.spec.protocols import Protocols, RemoteAgent
from runtime.spec.sandbox import CodeExecuteSettings
from runtime.spec.telemetry import TelemetrySettings
from runtime.spec.tools import McpServerConfig, ToolConfig
from runtime.spec.types import Duration, Name
from runtime.spec.web import WebSettings
from runtime.spec.workflows import WorkflowConfig

if TYPE_CHECKING:
    from runtime.spec import plain

SCHEMA_VERSION = 1


class LambdaDefaults(SpecModel):
    memory: int = Field(1024, ge=128, le=10240, description="MB")
    timeout: Duration = Field(900.0, le=900, description="Lambda timeout (max 15m).")
    reserved_concurrency: int | None = Field(None, ge=0)


class Defaults(SpecModel):
    model: Name | None = None
    max_turns: int = Field(25, ge=1, le=1000)
    max_depth: int = Field(
        3, ge=1, le=10, description="How many delegations deep a team may go (handoffs, asks)."
    )
    tool_timeout: Duration = 30.0
    tool_parallelism: int = Field(16, ge=1, le=256, description="Sync tool calls run at once.")
    tool_result_max_chars: int = Field(50_000, ge=100)
    approval_timeout: Duration = Field(86_400.0, le=31_536_000)
    input_timeout: Duration = Field(86_400.0, le=31_536_000)
    lambda_: LambdaDefaults = Field(default_factory=LambdaDefaults, alias="lambda")
    hooks: list[HookConfig] = Field(
        default_factory=list, description="Every agent's hooks, after the top-level ones."
    )
    compaction: CompactionSettings = Field(default_factory=CompactionSettings)
    budget: BudgetSettings | None = Field(None, description="What a run may spend.")
    inject_date: bool = Field(
        True,
        description="Add today's date to a system prompt that has no {date}/{datetime}.",
    )
    default_tools: bool = Field(
        True, description="Offer builtin get_time_date and list_tools_available to every agent."
    )
    protocols: Protocols = Field(
        default_factory=Protocols, description="A2A / MCP for every agent (off by default)."
    )


class SecretConfig(SpecModel):
    """Where `${secret:NAME}` is read at run time (cached per warm container, never logged)."""

    source: Literal["secretsmanager", "ssm"] = "secretsmanager"
    name: str | None = Field(
        None, min_length=1, description="Secret id or parameter name; default: the key."
    )


class ApiThrottle(SpecModel):
    """Stage-wide API Gateway throttling: requests beyond it get 429 before reaching Lambda."""

    rate_limit: float = Field(50.0, gt=0, le=10_000, description="Steady requests per second.")
    burst_limit: int = Field(100, ge=1, le=5_000, description="Requests allowed in a burst.")


class ReservedConcurrency(SpecModel):
    """Concurrency reserved for the stack's own functions, so agent runs (which can hold a
    slot for up to 15 minutes each) never take the front door's last slot; each is also the
    function's cap. `null` leaves a function in the account's shared pool: needed on an
    account whose concurrency quota is too small to reserve anything (Lambda keeps 100 of
    the quota unreserved; new accounts may have a quota of 10)."""

    api: int | None = Field(
        50, ge=1, le=10_000, description="The REST API's function (answers and inline runs)."
    )
    live: int | None = Field(10, ge=1, le=10_000, description="The WebSocket API's function.")
    sweeper: int | None = Field(
        2, ge=1, le=10_000, description="The sweeper (one pass at a time, and one to spare)."
    )


class Deployment(SpecModel):
    """Settings of the generated SAM template."""

    runtime: Literal["python3.11", "python3.12", "python3.13"] = "python3.13"
    architecture: Literal["arm64", "x86_64"] = "arm64"
    api_auth: Literal["iam", "none"] = Field(
        "iam", description="iam: callers sign requests (SigV4). none: open API (use with care)."
    )
    stage_name: str = Field("v1", pattern=r"^[A-Za-z0-9_]{1,64}$")
    retention: Duration = Field(30 * 86_400.0, description="Run state TTL and S3 object expiry.")
    log_retention_days: Literal[
        1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1827, 3653
    ] = 30
    event_bus: str = Field("default", min_length=1)
    tracing: bool = True
    sweep_interval: Duration = Field(
        300.0,
        ge=60,
        multiple_of=60,
        description="How often the sweeper resumes stalled runs (whole minutes, at least 1m).",
    )
    api_throttle: ApiThrottle = Field(default_factory=ApiThrottle)
    access_logs: bool = Field(
        True,
        description="API Gateway access logs (JSON). Needs the account's API Gateway "
        "CloudWatch Logs role, set once per account and region (see README).",
    )
    telemetry: TelemetrySettings | None = Field(
        None, description="Traces of every run (OpenTelemetry GenAI; OTLP, X-Ray). Absent: off."
    )
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    monitoring: MonitoringSettings = Field(default_factory=MonitoringSettings)
    reserved_concurrency: ReservedConcurrency = Field(
        default_factory=ReservedConcurrency,
        description="Lambda concurrency reserved for the API, live and sweeper functions.",
    )
    snapstart: bool = Field(
        False,
        description="Lambda SnapStart (python3.12 or later) for the functions a caller waits "
        "on: agents, workflows, the API and live runs. Each is published as a version with "
        "alias `live`, which the state machines, the APIs and handoffs invoke. Off by "
        "default: a snapshot is billed while cached (about $3.90 a month per GB of memory, "
        "per function) and each restore per GB, more than the init it replaces, and each "
        "function takes two more of the stack's 500 resources (README: Performance).",
    )

    @field_validator("snapstart")
    @classmethod
    def _snapstart_runtime(cls, value: bool, info: ValidationInfo) -> bool:
        """Lambda offers SnapStart for Python from python3.12: a stack asking for it on an
        older runtime would fail only at deploy."""
        if value and info.data.get("runtime") == "python3.11":
            raise ValueError("snapstart needs runtime python3.12 or later (runtime: python3.11)")
        return value


class AgentfnSpec(SpecMethods, SpecModel):
    version: Literal[1]
    tools_package: str = Field(
        "tools", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", description="Where python tools live."
    )
    defaults: Defaults = Field(default_factory=Defaults)
    deployment: Deployment = Field(default_factory=Deployment)
    secrets: dict[Name, SecretConfig] = Field(default_factory=dict)
    models: dict[Name, ModelConfig] = Field(default_factory=dict)
    mcp_servers: dict[Name, McpServerConfig] = Field(default_factory=dict)
    tools: dict[Name, ToolConfig] = Field(default_factory=dict)
    knowledge_bases: dict[Name, KnowledgeBaseConfig] = Field(
        default_factory=dict, description="What knowledge_search searches (local or bedrock)."
    )
    databases: dict[Name, DatabaseConfig] = Field(
        default_factory=dict, description="Databases of database_query / database_write."
    )
    code_execute: CodeExecuteSettings = Field(
        default_factory=CodeExecuteSettings, description="code_execute's sandbox."
    )
    web: WebSettings = Field(
        default_factory=WebSettings, description="web_search's provider; web_scrape's reach."
    )
    hooks: list[HookConfig] = Field(
        default_factory=list, description="Every agent's hooks, first of all (see docs: Hooks)."
    )
    agents: dict[Name, AgentConfig] = Field(min_length=1)
    remote_agents: dict[Name, RemoteAgent] = Field(
        default_factory=dict,
        description="Agents served elsewhere over A2A, asked as tools (sub_agents, as: tool).",
    )
    workflows: dict[Name, WorkflowConfig] = Field(
        default_factory=dict, description="Compositions of agent runs (see docs: Workflows)."
    )

    @field_validator("version", mode="before")
    @classmethod
    def _whole_number_version(cls, value: Any) -> Any:
        """YAML reads `1.0` as a float, `"1"` as a string and `true` as a boolean, and lax
        validation would take two of them for 1: the version is the plain number."""
        if isinstance(value, bool) or not isinstance(value, int):
            written = str(value).lower() if isinstance(value, bool) else repr(value)
            raise ValueError(f"version must be the whole number 1, unquoted (got {written})")
        return value

    @model_validator(mode="after")
    def _agent_compaction_over_defaults(self) -> Self:
        """An agent's `compaction` changes only the keys it sets; the rest come from
        defaults.compaction. Resolved once here (all keys then set), so the compiled spec
        reloads to the same settings."""
        base = self.defaults.compaction.model_dump()
        for name, agent in self.agents.items():
            own = agent.compaction
            if own is not None and own.model_fields_set != set(CompactionSettings.model_fields):
                merged = {**base, **own.model_dump(include=own.model_fields_set)}
                resolved = CompactionSettings.model_validate(merged)
                self.agents[name] = agent.model_copy(update={"compaction": resolved})
            if self.agents[name].compaction == self.defaults.compaction:  # the same rules:
                self.agents[name] = self.agents[name].model_copy(update={"compaction": None})
        return self

    def to_compiled(self) -> dict[str, object]:
        """The JSON-ready form shipped in the Lambda package (aliases kept, so it reloads)."""
        return self.model_dump(mode="json", by_alias=True, exclude_defaults=False)

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        copy = super().model_copy(update=update, deep=deep)
        for derived in ("_digest", "_runtime"):  # a copy may differ: made afresh when asked
            copy.__dict__.pop(derived, None)
        return copy

    def at_project(self, folder: Path) -> Self:
        self.__dict__.pop("_runtime", None)  # made again, at this folder
        return super().at_project(folder)

    def to_runtime(self) -> "plain.AgentfnSpec":
        """This spec as the engine reads it (runtime.spec.plain): made once per spec, from
        the JSON a Lambda package would ship, with the same hash and project folder. What
        runs in process (`agentfn run`, `dev`, evals, tests) runs on the same structures as
        a deployed function."""
        found = self.__dict__.get("_runtime")
        if found is None:
            from runtime.spec import plain

            found = plain.load(self.to_compiled(), digest=self.spec_hash())
            project = self.project_dir()
            if project is not None:
                found.at_project(project)
            self.__dict__["_runtime"] = found
        return found
