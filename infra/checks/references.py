"""Checks that span sections: references resolve, no cycles, no plaintext secrets, python
tools stay inside the project's tools package, embedded JSON Schemas are valid.

They run on the raw YAML data (not the pydantic models) and read it defensively, so they
report their problems even when the structure has errors elsewhere: the author sees every
error at once.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from infra.checks.issues import RefProblem, did_you_mean, unknown_model
from infra.checks.issues import mapping as _mapping
from infra.checks.protocol_checks import remote_handoff, remote_name_problems
from infra.checks.run_limits import check_run_limits, compaction_model_problems, tool_count_warnings
from infra.checks.schema_checks import SPEC_REGEX_WORK, check_json_schema
from infra.checks.tool_refs import (
    SENSITIVE_HEADER,
    approval_matches,
    check_python_handler,
    is_hook_header,
)
from infra.checks.yamlsrc import Path_
from infra.sam.naming import logical_id
from runtime.safety.regex_safety import Budget
from runtime.spec.shared import SECRET_REF_RE, URL_PARAM_RE
from runtime.spec.tools import BUILTIN_TOOLS
from runtime.tools.toolset import DEFAULT_TOOLS


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def spec_warnings(data: Any) -> list[RefProblem]:
    """What is valid but likely to fail at run time: `agentfn validate` prints these as
    warnings (exit 0), never as problems."""
    return list(tool_count_warnings(_mapping(data)))


def check_references(data: Any, project_dir: Path) -> list[RefProblem]:
    root = _mapping(data)
    problems: list[RefProblem] = []
    problems += _check_models(root)
    problems += _check_agents(root)
    problems += _check_secrets(root)
    problems += _check_tools(root, project_dir)
    problems += _check_logical_ids(root)
    problems += check_run_limits(root)
    return problems


def _check_models(root: dict[str, Any]) -> Iterator[RefProblem]:
    models = _mapping(root.get("models"))
    default = _mapping(root.get("defaults")).get("model")
    if isinstance(default, str) and default not in models:
        yield RefProblem(("defaults", "model"), unknown_model(default, models))
    yield from compaction_model_problems(root, models)
    for name, config in models.items():
        for i, fallback in enumerate(_list(_mapping(config).get("fallbacks"))):
            path = ("models", name, "fallbacks", i)
            if fallback == name:
                yield RefProblem(path, "a model cannot be its own fallback")
            elif isinstance(fallback, str) and fallback not in models:
                yield RefProblem(path, unknown_model(fallback, models))


def _check_agents(root: dict[str, Any]) -> Iterator[RefProblem]:
    agents = _mapping(root.get("agents"))
    yield from remote_name_problems(agents, remote := _mapping(root.get("remote_agents")))
    models = _mapping(root.get("models"))
    tools = _mapping(root.get("tools"))
    servers = _mapping(root.get("mcp_servers"))
    has_default_model = isinstance(_mapping(root.get("defaults")).get("model"), str)
    for name, raw in agents.items():
        agent = _mapping(raw)
        base: Path_ = ("agents", name)
        model = agent.get("model")
        if model is None and not has_default_model and isinstance(raw, dict):
            yield RefProblem(base, "no model: set `model` here or `defaults.model`", at_key=True)
        elif isinstance(model, str) and model not in models:
            yield RefProblem((*base, "model"), unknown_model(model, models))
        selected: list[str] = []
        for i, ref in enumerate(_list(agent.get("tools"))):
            if not isinstance(ref, str):
                continue
            path = (*base, "tools", i)
            if ref in selected:
                yield RefProblem(path, f"tool {ref!r} is listed twice")
            selected.append(ref)
            message = _tool_ref_problem(ref, tools, servers)
            if message:
                yield RefProblem(path, message)
        subs: list[str] = []
        handoffs: list[str] = []
        for i, entry in enumerate(_list(agent.get("sub_agents"))):
            path = (*base, "sub_agents", i)
            sub = sub_agent_name(entry)
            if isinstance(entry, dict):
                path = (*path, "agent")
            if sub == name:
                yield RefProblem(path, "an agent cannot be its own sub-agent")
            elif isinstance(sub, str) and sub in remote and _mapping(entry).get("as") != "tool":
                yield RefProblem(path, remote_handoff(sub))  # a remote agent is only asked
            elif isinstance(sub, str) and sub not in agents and sub not in remote:
                yield RefProblem(path, f"unknown agent {sub!r}{did_you_mean(sub, agents)}")
            elif sub in subs:
                yield RefProblem(path, f"sub-agent {sub!r} is listed twice")
            if not isinstance(sub, str):
                continue
            subs.append(sub)
            asked = isinstance(entry, dict) and _mapping(entry).get("as") == "tool"
            if not asked:
                handoffs.append(sub)
            team_tool = f"{'ask_' if asked else 'transfer_to_'}{sub}"
            if team_tool in selected:
                yield RefProblem(
                    path,
                    f"this sub-agent is offered as the tool {team_tool!r}, which is also the "
                    "name of one of the agent's tools; rename that tool",
                )
        for i, intent in enumerate(_list(agent.get("intents"))):
            yield from _check_intent(_mapping(intent), (*base, "intents", i), selected, handoffs)
        for i, rule in enumerate(_list(agent.get("approval"))):
            yield from _check_approval_rule(_mapping(rule), (*base, "approval", i), selected)
    yield from _check_cycles(agents)


def _tool_ref_problem(ref: str, tools: dict[str, Any], servers: dict[str, Any]) -> str | None:
    if ref.startswith("builtin:"):
        builtin = ref.removeprefix("builtin:")
        if builtin not in BUILTIN_TOOLS:
            return f"unknown built-in tool {builtin!r}{did_you_mean(builtin, BUILTIN_TOOLS)}"
        return None
    if ref.startswith("mcp:"):
        server, _, tool = ref.removeprefix("mcp:").partition("/")
        if server not in servers:
            return f"unknown MCP server {server!r}{did_you_mean(server, servers)}"
        if "/" in ref.removeprefix("mcp:") and not tool:
            return f"{ref!r}: expected mcp:SERVER or mcp:SERVER/TOOL"
        return None
    if ref not in tools:
        hint = did_you_mean(ref, [*tools, *(f"builtin:{b}" for b in BUILTIN_TOOLS)])
        return (
            f"unknown tool {ref!r}{hint} "
            "(tools are names under `tools`, mcp:SERVER[/TOOL] or builtin:NAME)"
        )
    return None


def _check_approval_rule(
    rule: dict[str, Any], path: Path_, selected: list[str]
) -> Iterator[RefProblem]:
    patterns = _list(rule.get("tools"))
    if "tools" in rule and not patterns:
        yield RefProblem((*path, "tools"), "gates nothing: omit `tools` to gate every tool")
    offered = [*selected, "builtin:agent_clarify", *DEFAULT_TOOLS]
    for i, pattern in enumerate(patterns):
        if not isinstance(pattern, str):
            continue
        if any(approval_matches(pattern, ref) for ref in offered):
            continue
        yield RefProblem(
            (*path, "tools", i),
            f"{pattern!r} matches none of this agent's tools{did_you_mean(pattern, selected)}",
        )


def sub_agent_name(entry: Any) -> Any:
    """`billing` or `{agent: billing, as: tool}` → `billing` (anything else as it is)."""
    return _mapping(entry).get("agent") if isinstance(entry, dict) else entry


def _check_intent(
    intent: dict[str, Any], path: Path_, tools: list[str], subs: list[str]
) -> Iterator[RefProblem]:
    """An intent's tool is one of the agent's own tools, its agent one of its sub-agents, and
    its pattern safe to match against any input."""
    tool = _mapping(intent.get("tool")).get("name")
    if isinstance(tool, str) and tool not in tools:
        yield RefProblem(
            (*path, "tool", "name"),
            f"{tool!r} is not one of this agent's tools{did_you_mean(tool, tools)}",
        )
    target = intent.get("agent")
    if isinstance(target, str) and target not in subs:
        yield RefProblem(
            (*path, "agent"),
            f"{target!r} is not a sub-agent this agent hands conversations to"
            f"{did_you_mean(target, subs)}",
        )
    pattern = intent.get("pattern")
    if isinstance(pattern, str):
        from runtime.safety.regex_safety import regex_problem

        problem = regex_problem(pattern)
        if problem:
            yield RefProblem((*path, "pattern"), problem)


def _check_cycles(agents: dict[str, Any]) -> Iterator[RefProblem]:
    graph = {
        name: [
            s
            for s in map(sub_agent_name, _list(_mapping(a).get("sub_agents")))
            if isinstance(s, str) and s in agents and s != name
        ]
        for name, a in agents.items()
    }
    reported: set[frozenset[str]] = set()
    for start in graph:
        stack: list[tuple[str, list[str]]] = [(start, [start])]
        while stack:
            node, trail = stack.pop()
            for child in graph[node]:
                if child == start:
                    cycle = frozenset(trail)
                    if cycle not in reported:
                        reported.add(cycle)
                        index = graph[start].index(trail[1] if len(trail) > 1 else child)
                        loop = " → ".join([*trail, start])
                        yield RefProblem(
                            ("agents", start, "sub_agents", index), f"sub-agent cycle: {loop}"
                        )
                elif child not in trail:
                    stack.append((child, [*trail, child]))


def _strings(value: Any, path: Path_) -> Iterator[tuple[Path_, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, (*path, index))


def _resolves_secrets(path: Path_) -> bool:
    """The only values the run time resolves `${secret:NAME}` in: HTTP tool and MCP server
    `headers`, MCP stdio server `env`, MCP server `oauth.client_secret`, model `api_key`,
    and http hook `headers`. Anywhere else the reference would be sent literally (in a URL,
    a prompt, an argument…)."""
    if len(path) == 4 and path[0] in ("tools", "mcp_servers") and path[2] == "headers":
        return True
    if len(path) == 5 and path[0] == "remote_agents" and path[2:4] == ("auth", "headers"):
        return True  # runtime.protocols.a2a_client resolves them per request
    if len(path) == 4 and path[0] == "mcp_servers" and path[2] == "env":
        return True
    if path[:1] == ("mcp_servers",) and path[2:] == ("oauth", "client_secret"):
        return True
    if len(path) == 4 and path[:3] == ("deployment", "telemetry", "headers"):
        return True  # runtime.observability resolves them when it builds its exporter
    if len(path) == 6 and path[0] in ("agents", "workflows") and path[2] == "triggers":
        return path[4:] == ("webhook", "secret")  # runtime.triggers.starter verifies with it
    if path in (("web", "search", "api_key"), ("web", "scrape", "firecrawl", "api_key")):
        return True  # credentials, like a model's api_key (runtime.tools.web)
    return is_hook_header(path) or (len(path) == 3 and path[0] == "models" and path[2] == "api_key")


def _check_secrets(root: dict[str, Any]) -> Iterator[RefProblem]:
    declared = _mapping(root.get("secrets"))
    for path, text in _strings({k: v for k, v in root.items() if k != "secrets"}, ()):
        if "${secret:" in text and not _resolves_secrets(path):
            yield RefProblem(
                path,
                "a secret reference here would be sent as written: ${secret:NAME} is resolved "
                "only in HTTP tool and MCP server `headers`, MCP server `env` and model "
                "`api_key` values (and an MCP server's `oauth.client_secret`, http hooks' "
                "`headers`, `deployment.telemetry.headers`, `web.search.api_key`, "
                "`web.scrape.firecrawl.api_key`)",
            )
        for name in SECRET_REF_RE.findall(text):
            if name not in declared:
                hint = did_you_mean(name, declared)
                yield RefProblem(path, f"secret {name!r} is not declared under `secrets`{hint}")
        if "${secret:" in SECRET_REF_RE.sub("", text):
            yield RefProblem(path, "malformed secret reference; expected ${secret:NAME}")
    for section in ("tools", "mcp_servers"):
        for name, config in _mapping(root.get(section)).items():
            for header, value in _mapping(_mapping(config).get("headers")).items():
                if (
                    isinstance(header, str)
                    and isinstance(value, str)
                    and SENSITIVE_HEADER.search(header)
                    and not SECRET_REF_RE.search(value)
                ):
                    yield RefProblem(
                        (section, name, "headers", header),
                        f"header {header!r} looks like a credential written in plaintext; "
                        "declare it under `secrets` and write ${secret:NAME}",
                    )


def _check_tools(root: dict[str, Any], project_dir: Path) -> Iterator[RefProblem]:
    package = root.get("tools_package", "tools")
    budget = Budget(SPEC_REGEX_WORK)  # shared by every schema's patterns
    for name, raw in _mapping(root.get("tools")).items():
        tool = _mapping(raw)
        base: Path_ = ("tools", name)
        schema = tool.get("input_schema")
        if schema is not None:
            yield from check_json_schema(
                schema, (*base, "input_schema"), budget, require_object=True
            )
        if tool.get("type") == "python" and isinstance(tool.get("handler"), str):
            yield from check_python_handler(
                tool["handler"], package, project_dir, (*base, "handler")
            )
        if (
            tool.get("type") == "http"
            and isinstance(tool.get("url"), str)
            and isinstance(schema, dict)
        ):
            properties = _mapping(schema.get("properties"))
            for param in URL_PARAM_RE.findall(tool["url"]):
                if param not in properties:
                    yield RefProblem(
                        (*base, "url"),
                        f"URL parameter {{{param}}} is not a property of input_schema"
                        f"{did_you_mean(param, properties)}",
                    )
    for name, raw in _mapping(root.get("agents")).items():
        schema = _mapping(raw).get("output_schema")
        if schema is not None:
            yield from check_json_schema(schema, ("agents", name, "output_schema"), budget)


def _check_logical_ids(root: dict[str, Any]) -> Iterator[RefProblem]:
    seen: dict[str, str] = {}
    for name in _mapping(root.get("agents")):
        if not isinstance(name, str):
            continue
        lid = logical_id(name)
        if lid in seen:
            yield RefProblem(
                ("agents", name),
                f"agent names {seen[lid]!r} and {name!r} map to the same resource name {lid!r}",
                at_key=True,
            )
        seen[lid] = name
