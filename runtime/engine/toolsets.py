"""The tools an agent's runs are offered: built once per engine from the spec, plus the MCP
tools each advance discovers (inside its own event loop, closed when it ends).

Split out of the engine to keep modules small; the engine's state lives on the Engine
instance (see Engine.__init__).
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from typing import Any

from runtime.engine.commits import Persistence, RunCursor
from runtime.events import EventType
from runtime.models.base import ToolSpec
from runtime.spec import AgentfnSpec
from runtime.tools.base import Tool
from runtime.tools.toolset import build_toolset, merge_tools


class Toolsets(Persistence):
    spec: AgentfnSpec
    _toolsets: dict[str, dict[str, Tool]]
    _specs: dict[str, list[ToolSpec]]
    _mcp: dict[str, dict[str, Tool]]
    _rules: dict[tuple[str, str], bool]
    _secrets: Any
    _lambda_client: Any
    _lambda: Any

    async def _discover_mcp(self, run: RunCursor, connections: AsyncExitStack) -> None:
        """Open the agent's MCP servers for this advance and add their tools.

        A server that cannot be reached does not fail the run: the run goes on without its
        tools, and the failure is recorded once as an event and a warning in the result.
        """
        agent = run.head.agent
        refs = [r for r in self.spec.agents[agent].tools if r.startswith("mcp:")]
        if not refs:
            return
        from runtime.tools.mcp import McpToolset

        toolset = McpToolset(self.spec.mcp_servers, refs, self.secrets(), self.clock.now)
        await connections.enter_async_context(toolset)
        tools, failures = await toolset.discover()
        self._use_mcp_tools(agent, dict(tools))
        new = [f for f in failures if f"mcp:{f.server}: " not in " ".join(run.head.warnings)]
        if new:
            warnings = [*run.head.warnings, *(f"mcp:{f.server}: {f.error}" for f in new)]
            events: list[tuple[EventType, dict[str, Any]]] = [
                ("tools_unavailable", {"server": f.server, "error": f.error}) for f in new
            ]
            run.head = self._commit(run.head, [], events, update={"warnings": warnings})

    def secrets(self) -> Any:
        if self._secrets is None:
            from runtime.secrets import SecretResolver

            self._secrets = SecretResolver(self.spec)
        return self._secrets

    def _lambda_for_tools(self) -> Any:
        if self._lambda is None:
            if self._lambda_client is not None:
                self._lambda = self._lambda_client()
            else:
                import boto3

                self._lambda = boto3.client("lambda")
        return self._lambda

    def _tools(self, agent: str) -> dict[str, Tool]:
        """The agent's tools: built once per engine, plus this advance's MCP tools."""
        tools = self._toolsets.get(agent)
        if tools is None:
            base = build_toolset(
                self.spec,
                agent,
                secrets=lambda text: self.secrets()(text),
                lambda_client=self._lambda_for_tools,
                listing=lambda: self._tools(agent),
            )
            tools = self._toolsets[agent] = merge_tools(base, self._mcp.get(agent, {}))
        return tools

    def _use_mcp_tools(self, agent: str, mcp_tools: dict[str, Tool]) -> None:
        self._mcp[agent] = mcp_tools
        self._toolsets.pop(agent, None)
        self._specs.pop(agent, None)
        self._rules.clear()

    def _tool_specs(self, agent: str) -> list[ToolSpec]:
        specs = self._specs.get(agent)
        if specs is None:
            tools = self._tools(agent).values()
            specs = [ToolSpec(t.name, t.description, t.input_schema) for t in tools]
            self._specs[agent] = specs
        return specs
