"""The tools an agent in a team is offered: delegation (handoff, ask, escalation) and the
team's own introspection.

Delegation tools are *control* tools: the loop handles them itself (runtime.engine.team),
because each changes who runs the conversation or starts another run. They are recognised
by their identity (`Tool.reference`: `team:transfer/billing`, `team:ask/researcher`,
`team:request_help`), never by the model-facing name. The introspection tools read the
run's team as `ToolContext.team` (a TeamView) sees it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from runtime.spec.plain import AgentfnSpec
from runtime.tools.base import FunctionTool, ToolContext, ToolError

TRANSFER = "team:transfer/"
ASK = "team:ask/"
HELP = "team:request_help"

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


@dataclass(frozen=True)
class TeamView:
    """What an agent may know of its team during a run."""

    entry: str
    active: str
    supervisor: str | None
    members: dict[str, tuple[str, str]] = field(default_factory=dict)  # name → (how, desc)
    intents: list[dict[str, Any]] = field(default_factory=list)


async def _control(arguments: dict[str, Any], ctx: ToolContext) -> Any:  # pragma: no cover
    raise ToolError("handled by the loop")


def _name(prefix: str, agent: str) -> str:
    return f"{prefix}{_UNSAFE.sub('_', agent)}"[:64]


def transfer_tool(agent: str, description: str) -> FunctionTool:
    return FunctionTool(
        name=_name("transfer_to_", agent),
        description=(
            f"Transfer the conversation to {agent}: {description} It takes over from here, "
            "with the whole conversation; use it when the request is theirs to handle."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "reason": {"type": "string", "description": "Why this agent should take over."}
            },
        },
        func=_control,
        effect="read_only",
        reference=TRANSFER + agent,
    )


def ask_tool(agent: str, description: str) -> FunctionTool:
    return FunctionTool(
        name=_name("ask_", agent),
        description=(
            f"Ask {agent} to do a task and get its answer back: {description} It works on its "
            "own (it does not see this conversation), so say everything it needs in `task`."
        ),
        input_schema={
            "type": "object",
            "properties": {"task": {"type": "string", "description": "The task, in full."}},
            "required": ["task"],
        },
        func=_control,
        effect="read_only",
        reference=ASK + agent,
    )


def help_tool() -> FunctionTool:
    return FunctionTool(
        name="request_help",
        description=(
            "Hand the conversation back to your supervisor when the request is outside your "
            "role or you are unsure how to proceed; say why in `reason`."
        ),
        input_schema={
            "type": "object",
            "properties": {"reason": {"type": "string"}},
            "required": ["reason"],
        },
        func=_control,
        effect="read_only",
        reference=HELP,
    )


def control_of(reference: str) -> tuple[str, str] | None:
    """("transfer" | "ask", target agent) or ("help", "") for a control tool, else None."""
    if reference.startswith(TRANSFER):
        return "transfer", reference.removeprefix(TRANSFER)
    if reference.startswith(ASK):
        return "ask", reference.removeprefix(ASK)
    if reference == HELP:
        return "help", ""
    return None


def _team(ctx: ToolContext) -> TeamView:
    if not isinstance(ctx.team, TeamView):
        raise ToolError("this run has no team")
    return ctx.team


async def _list_subagents(arguments: dict[str, Any], ctx: ToolContext) -> Any:
    team = _team(ctx)
    return [
        {
            "agent": name,
            "description": description,
            "how": f"transfer_to_{name}" if how == "handoff" else f"ask_{name}",
        }
        for name, (how, description) in team.members.items()
    ]


async def _current(arguments: dict[str, Any], ctx: ToolContext) -> Any:
    team = _team(ctx)
    return {"active_agent": team.active, "entry_agent": team.entry}


async def _supervisor(arguments: dict[str, Any], ctx: ToolContext) -> Any:
    team = _team(ctx)
    return {"supervisor": team.supervisor}


async def _intents(arguments: dict[str, Any], ctx: ToolContext) -> Any:
    return _team(ctx).intents


def _info(name: str, description: str, func: Any) -> FunctionTool:
    return FunctionTool(
        name=name,
        description=description,
        input_schema={"type": "object", "properties": {}},
        func=func,
        reference=f"builtin:{name}",
    )


def team_tools(spec: AgentfnSpec, agent: str, *, supervised: bool) -> dict[str, FunctionTool]:
    """The team tools offered to `agent`: a transfer or ask tool per sub-agent, request_help
    when it works under a supervisor, and the team's introspection tools when it is in a
    team at all. Nothing for an agent alone (off costs nothing)."""
    config = spec.agents[agent]
    tools: list[FunctionTool] = []
    for sub in config.sub_agents:
        description = spec.description_of(sub.agent)
        make = transfer_tool if sub.as_ == "handoff" else ask_tool
        tools.append(make(sub.agent, description))
    if supervised:
        tools.append(help_tool())
    if config.sub_agents or supervised:
        tools += [
            _info(
                "list_subagents_available",
                "The agents you can transfer the conversation to or ask, and how.",
                _list_subagents,
            ),
            _info(
                "get_current_active_agent",
                "Which agent is handling the conversation now.",
                _current,
            ),
            _info("get_supervisor_agent", "Your supervisor, if you have one.", _supervisor),
        ]
    if config.intents:
        tools.append(
            _info(
                "list_intents_available",
                "Requests this agent answers directly, without thinking them through.",
                _intents,
            )
        )
    return {tool.name: tool for tool in tools}


def team_view(spec: AgentfnSpec, entry: str, active: str, supervisor: str | None) -> TeamView:
    config = spec.agents[active]
    members: dict[str, tuple[str, str]] = {
        sub.agent: (sub.as_, spec.description_of(sub.agent)) for sub in config.sub_agents
    }
    intents = [
        {
            "phrases": intent.phrases,
            "pattern": intent.pattern,
            "does": "answers"
            if intent.answer
            else "calls a tool"
            if intent.tool
            else f"goes to {intent.agent}",
            "description": intent.description,
        }
        for intent in config.intents
    ]
    return TeamView(entry, active, supervisor, members, intents)
