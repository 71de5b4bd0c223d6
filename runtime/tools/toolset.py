"""Resolve an agent's tool references into the Tool objects its runs use.

MCP tools are not built here: they are discovered at the start of each advance (inside the
run's own event loop) by runtime.tools.mcp and merged in by the engine.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from runtime.spec.plain import AgentfnSpec, HttpTool, LambdaTool, PythonTool
from runtime.tools.base import Tool
from runtime.tools.builtins import clarify_tool, list_tools_tool, time_date_tool

if TYPE_CHECKING:
    from runtime.spec.graph import AnySpec

CACHE_TOOLS = ("session_cache_list", "session_cache_get")


def storage_prefix(spec: AnySpec, agent: str) -> str:
    """Where the agent's storage tools work (either form of the spec: IAM grants ask too)."""
    template = spec.agents[agent].storage_prefix or "storage/{agent}/"
    return template.replace("{agent}", agent)


DEFAULT_TOOLS = ("builtin:get_time_date", "builtin:list_tools_available")


def default_tools_on(spec: AgentfnSpec, agent: str) -> bool:
    """Are get_time_date and list_tools_available offered to the agent without listing?"""
    own = spec.agents[agent].default_tools
    return spec.defaults.default_tools if own is None else own


def build_toolset(
    spec: AgentfnSpec,
    agent: str,
    *,
    secrets: Callable[[str], str],
    lambda_client: Callable[[], Any],
    listing: Callable[[], dict[str, Tool]],
    rds_data: Callable[[], Any] = lambda: None,
    bedrock_retrieval: Callable[[str | None], Any] = lambda region: None,
) -> dict[str, Tool]:
    """Name → Tool for everything the agent may call except MCP tools.

    `agent_clarify` is always offered, and `get_time_date` and `list_tools_available`
    unless `default_tools: false` (agent or defaults). The session cache tools are offered
    automatically when the agent keeps session history and has tools of its own (their
    outputs are what the cache holds), or when listed explicitly.
    """
    config = spec.agents[agent]
    tools: dict[str, Tool] = {}
    wanted_cache = False
    parallelism = config.tool_parallelism or spec.defaults.tool_parallelism
    for ref in config.tools:
        if ref.startswith("mcp:"):
            continue
        if ref.startswith("builtin:"):
            name = ref.removeprefix("builtin:")
            if name == "get_time_date":
                tools[name] = time_date_tool()
            elif name == "list_tools_available":
                tools[name] = list_tools_tool(listing)
            elif name == "http_request":
                from runtime.tools.http_tool import http_request_tool

                tools[name] = http_request_tool()
            elif name in {"storage_read", "storage_write"}:
                from runtime.tools.storage_tools import storage_tools

                for tool in storage_tools(storage_prefix(spec, agent)):
                    if tool.name == name:
                        tools[name] = tool
            elif name in {"database_query", "database_write"}:
                from runtime.tools.database.tools import database_tools

                tools[name] = database_tools(spec, agent, rds_data)[name]
            elif name == "code_execute":
                from runtime.tools.sandbox.tool import code_execute_tool

                tools[name] = code_execute_tool(spec.code_execute, lambda_client)
            elif name == "web_search":
                from runtime.tools.web.search import web_search_tool

                tools[name] = web_search_tool(spec.web.search, secrets)
            elif name == "web_scrape":
                from runtime.tools.web.scrape import web_scrape_tool

                tools[name] = web_scrape_tool(spec.web.scrape, secrets)
            elif name == "knowledge_search":
                from runtime.tools.knowledge.tool import knowledge_search_tool

                tools[name] = knowledge_search_tool(spec, agent, bedrock_retrieval)
            elif name in CACHE_TOOLS:
                wanted_cache = True
            continue
        tool_config = spec.tools[ref]
        if isinstance(tool_config, PythonTool):
            from runtime.tools.python_tool import python_tool
            from runtime.tools.threads import pool

            threads = pool(agent, parallelism)
            tools[ref] = python_tool(ref, tool_config, spec.tools_package, threads)
        elif isinstance(tool_config, HttpTool):
            from runtime.tools.http_tool import http_tool

            tools[ref] = http_tool(ref, tool_config, secrets)
        elif isinstance(tool_config, LambdaTool):
            from runtime.tools.lambda_tool import lambda_tool
            from runtime.tools.threads import pool

            tools[ref] = lambda_tool(ref, tool_config, lambda_client, pool(agent, parallelism))
        # Reuse from the cache only for read-only tools, and only when the spec asks for it;
        # such a tool's outputs are then always kept whole, so there is something to reuse.
        if tool_config.cache_reuse and tool_config.effect == "read_only":
            tools[ref].reuse_cached = True
            tools[ref].cache_outputs = True
    own_tools = any(not r.startswith("builtin:") for r in config.tools)
    if wanted_cache or (config.session.enabled and own_tools):
        from runtime.tools.cache_tools import session_cache_tools

        for tool in session_cache_tools():
            tools[tool.name] = tool
    if default_tools_on(spec, agent):  # seed 003: always there unless switched off
        for name, make in (
            ("get_time_date", time_date_tool),
            ("list_tools_available", lambda: list_tools_tool(listing)),
        ):
            if name not in tools and name not in spec.tools:  # a declared tool keeps its name
                tools[name] = make()
    tools["agent_clarify"] = clarify_tool()
    for name, offered in tools.items():
        offered.reference = name if name in spec.tools else f"builtin:{name}"
    return tools


def merge_tools(base: dict[str, Tool], extra: dict[str, Tool]) -> dict[str, Tool]:
    """The agent's tools plus discovered ones; a discovered tool whose model-facing name is
    taken (a declared tool may be called `mcp__a__b`) is renamed with a hash of its identity,
    never allowed to shadow the other."""
    merged = dict(base)
    for name, tool in extra.items():
        if name in merged:
            digest = hashlib.sha256(tool.reference.encode()).hexdigest()[:8]
            tool.name = name = f"{name[:55]}_{digest}"
        merged[name] = tool
    return merged
