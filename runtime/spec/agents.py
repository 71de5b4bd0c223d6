"""Agent configurations: what an agent may use, how long it may run, who must approve what."""

import string
from typing import Annotated, Any, Literal, Self

from pydantic import BeforeValidator, Field, WithJsonSchema, field_validator, model_validator

from runtime.spec.budget import BudgetSettings
from runtime.spec.context import CompactionSettings
from runtime.spec.databases import DatabaseAccess
from runtime.spec.hooks import HookConfig
from runtime.spec.methods import AgentMethods
from runtime.spec.models import SpecModel
from runtime.spec.protocols import Protocols
from runtime.spec.shared import PYTHON_HANDLER_RE
from runtime.spec.tools import ToolFailures
from runtime.spec.triggers import TriggerConfig
from runtime.spec.types import Duration, Name

Decision = Literal["approve", "reject", "edit"]

#: Variables a system prompt may use as `{name}`; `{{` and `}}` are literal braces.
PROMPT_VARIABLES = (
    "date",
    "time",
    "datetime",
    "weekday",
    "agent",
    "description",
    "run_id",
    "session_id",
)


#: S3 prefixes the engine writes its own records under (tool outputs, message bodies, run
#: results); an agent's storage_prefix may not overlap them, or the model could rewrite them.
RESERVED_PREFIXES = ("tool-cache/", "bodies/", "results/")


def prompt_variables(template: str) -> list[str]:
    """The `{name}` fields of a system prompt, in order (raises ValueError on bad braces)."""
    return [field for _, field, _, _ in string.Formatter().parse(template) if field is not None]


class ApprovalRule(SpecModel):
    """Gate matching tool calls on a person's decision before they run.

    `tools` entries use the agent's tool reference syntax and may be globs:
    `refund`, `mcp:orders/delete_*`, `builtin:http_request`, `*`. A rule with no matcher at
    all (no `tools`, no `destructive`) gates every tool of the agent.
    """

    tools: list[str] | None = Field(
        None, description="Tools it gates; omitted (and no destructive): every tool."
    )
    destructive: bool = Field(
        False, description="Also gate MCP tools annotated with destructiveHint."
    )
    open_world: bool = Field(
        False,
        description="Also gate MCP tools of an open world (openWorldHint true, or absent: "
        "the MCP default).",
    )
    timeout: Duration | None = Field(None, description="Overrides defaults.approval_timeout.")
    decisions: list[Decision] = Field(
        default_factory=lambda: ["approve", "reject"],  # type: ignore[arg-type]
        min_length=1,
        description="What an approver may answer; `edit` lets them change the inputs.",
    )

    @field_validator("decisions")
    @classmethod
    def _unique_decisions(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError("decisions must not repeat")
        return value


class SubAgent(SpecModel):
    """A sub-agent and how this agent reaches it: `handoff` (the default) transfers the
    conversation to it (`transfer_to_<name>`); `tool` asks it for an answer in a child run of
    its own (`ask_<name>(task)`)."""

    agent: Name
    as_: Literal["handoff", "tool"] = Field("handoff", alias="as")


def _sub_agent(value: Any) -> Any:
    return {"agent": value} if isinstance(value, str) else value


_SUB_AGENT_SCHEMA = {
    "anyOf": [
        {"type": "string", "description": "An agent this one may hand the conversation to."},
        {
            "type": "object",
            "properties": {
                "agent": {"type": "string"},
                "as": {
                    "enum": ["handoff", "tool"],
                    "description": "handoff: transfer_to_<name>; tool: ask_<name>(task), a "
                    "child run whose answer is the tool result.",
                },
            },
            "required": ["agent"],
            "additionalProperties": False,
        },
    ]
}

#: `billing` or `{agent: billing, as: tool}`.
SubAgentRef = Annotated[SubAgent, BeforeValidator(_sub_agent), WithJsonSchema(_SUB_AGENT_SCHEMA)]


class IntentTool(SpecModel):
    name: str = Field(min_length=1, description="One of the agent's tools (its spec name).")
    arguments: dict[str, Any] = Field(
        default_factory=dict,
        description="Values may use {group} from the intent's pattern.",
    )


class Intent(SpecModel):
    """A request answered without asking the model: when the caller's input is one of
    `phrases` (case and punctuation ignored) or matches `pattern` (whole input), the run
    answers `answer`, returns `tool`'s output, or goes to `agent`."""

    phrases: list[str] = Field(default_factory=list)
    pattern: str | None = Field(None, description="A regular expression for the whole input.")
    answer: str | None = None
    tool: IntentTool | None = None
    agent: Name | None = Field(None, description="A sub-agent of this agent's team.")
    description: str | None = Field(None, description="Shown by list_intents_available.")

    @model_validator(mode="after")
    def _one_target(self) -> Self:
        if not self.phrases and self.pattern is None:
            raise ValueError("an intent needs `phrases` or `pattern`")
        targets = [t for t in (self.answer, self.tool, self.agent) if t is not None]
        if len(targets) != 1:
            raise ValueError("an intent needs exactly one of `answer`, `tool` or `agent`")
        return self


class SessionSettings(SpecModel):
    """How a run sees earlier runs of the same session."""

    enabled: bool = True
    history_limit: int = Field(200, ge=0, description="Most recent messages loaded into context.")
    ttl: Duration | None = Field(None, description="Overrides deployment.retention.")


class LambdaSettings(SpecModel):
    memory: int | None = Field(None, ge=128, le=10240, description="MB")
    timeout: Duration | None = Field(None, le=900, description="Lambda timeout (max 15m).")
    reserved_concurrency: int | None = Field(None, ge=0)


class PythonPrompt(SpecModel):
    """A system prompt computed before each model call by a function of the project's
    tools package, from the run's context and history (runtime.engine.computed_prompt)."""

    python: str = Field(
        pattern=PYTHON_HANDLER_RE.pattern,
        examples=["tools.prompts:support"],
        description="MODULE:FUNCTION in the tools package: (context, history) -> str.",
    )
    timeout: Duration = Field(5.0, description="A call taking longer fails the run.")


class AgentConfig(AgentMethods, SpecModel):
    description: str = Field(min_length=1)
    model: Name | None = Field(None, description="A key of `models`; default: defaults.model.")
    system_prompt: Annotated[str, Field(min_length=1)] | PythonPrompt = Field(
        "You are a helpful assistant.",
        description="Text (with {date}… variables), or {python: MODULE:FUNCTION} computing it.",
    )
    tools: list[str] = Field(
        default_factory=list,
        description="Tool names, `mcp:server`, `mcp:server/tool`, `builtin:name`.",
    )
    sub_agents: list[SubAgentRef] = Field(
        default_factory=list,
        description="Agents this one may hand the conversation to, or ask as a tool.",
    )
    intents: list[Intent] = Field(
        default_factory=list,
        description="Requests answered before the model is called (no model call).",
    )
    max_turns: int | None = Field(None, ge=1, le=1000)
    tool_timeout: Duration | None = None
    tool_parallelism: int | None = Field(None, ge=1, le=256, description="Sync tool calls at once.")
    tool_result_max_chars: int | None = Field(None, ge=100)
    inject_date: bool | None = Field(
        None,
        description="Add today's date to a prompt without {date}/{datetime}; default: "
        "defaults.inject_date.",
    )
    default_tools: bool | None = Field(
        None,
        description="Offer get_time_date and list_tools_available; default: "
        "defaults.default_tools.",
    )
    tool_failures: ToolFailures = Field(
        default_factory=ToolFailures,
        description="What a failed call of a tool that sets no on_failure does.",
    )
    output_schema: dict[str, Any] | None = Field(
        None, description="JSON Schema the final answer must satisfy."
    )
    approval: list[ApprovalRule] = Field(default_factory=list)
    hooks: list[HookConfig] = Field(
        default_factory=list, description="This agent's hooks, after top-level and defaults ones."
    )
    session: SessionSettings = Field(default_factory=SessionSettings)
    budget: BudgetSettings | None = Field(
        None, description="What a run of this agent may spend; default: defaults.budget."
    )
    compaction: CompactionSettings | None = Field(
        None,
        description="Keeps the prompt inside the model's window; the keys it sets change "
        "defaults.compaction.",
    )
    knowledge_bases: list[Name] = Field(
        default_factory=list, description="Knowledge bases this agent's knowledge_search searches."
    )
    databases: dict[Name, DatabaseAccess] = Field(
        default_factory=dict,
        description="Tables this agent's database_query / database_write may reach, per database.",
    )
    storage_prefix: str | None = Field(
        None,
        pattern=r"^[A-Za-z0-9_.\-/{}]+/$",
        description="S3 prefix for builtin:storage_read/write (default storage/{agent}/).",
    )
    storage_shared: bool = Field(
        False,
        description="Allow this agent's storage_prefix to overlap other agents' (each of "
        "them must say so too), or to hold the default storage/ area.",
    )
    input_timeout: Duration | None = Field(
        None, description="How long a clarification waits; overrides defaults.input_timeout."
    )
    triggers: list[TriggerConfig] = Field(
        default_factory=list,
        max_length=20,
        description="Schedules, webhooks, queues, S3 uploads and events that start runs.",
    )
    # `lambda` is a Python keyword; the alias keeps the YAML natural.
    lambda_: LambdaSettings = Field(default_factory=LambdaSettings, alias="lambda")
    protocols: Protocols | None = Field(
        None, description="A2A / MCP for this agent; each key unset follows defaults.protocols."
    )

    @field_validator("system_prompt")
    @classmethod
    def _prompt_variables_known(cls, value: "str | PythonPrompt") -> "str | PythonPrompt":
        if not isinstance(value, str):
            return value
        try:
            fields = prompt_variables(value)
        except ValueError as exc:
            raise ValueError(
                f"system_prompt has unbalanced braces ({exc}); "
                "write {{ and }} for literal braces"
            ) from exc
        for _, field, spec, conversion in string.Formatter().parse(value):
            if field is not None and (spec or conversion):
                # The prompt is filled with str.format: `{date:>1500000000}` would build a
                # 1.5 GB string, `{date!r}` quotes it; a variable stands for its value only.
                written = "{" + field + (f"!{conversion}" if conversion else "")
                written += (f":{spec}" if spec else "") + "}"
                raise ValueError(
                    f"prompt variable {written} has a "
                    f"{'conversion' if conversion else 'format spec'}; prompt variables take "
                    f"neither: write {{{field}}}"
                )
        unknown = [f for f in fields if f not in PROMPT_VARIABLES]
        if unknown:
            import difflib

            known = ", ".join("{" + v + "}" for v in PROMPT_VARIABLES)
            close = difflib.get_close_matches(unknown[0], PROMPT_VARIABLES, n=1)
            hint = f" did you mean {{{close[0]}}}?" if close else ""
            raise ValueError(
                f"unknown prompt variable {{{unknown[0]}}};{hint} known: {known} "
                "(write {{ and }} for literal braces)"
            )
        return value
