"""The tools an agent's runs are offered: built once per engine from the spec, plus the MCP
tools each advance discovers (inside its own event loop, closed when it ends).

Split out of the engine to keep modules small; the engine's state lives on the Engine
instance (see Engine.__init__).
"""

from __future__ import annotations

import uuid
from contextlib import AsyncExitStack
from typing import Any

from runtime.engine.commits import Persistence, RunCursor
from runtime.events import EventType
from runtime.models.base import ToolSpec
from runtime.spec.plain import AgentfnSpec
from runtime.store.base import RunHead
from runtime.tools.base import Tool
from runtime.tools.builtins import ToolListing
from runtime.tools.team import team_tools
from runtime.tools.toolset import build_toolset, merge_tools


class Toolsets(Persistence):
    spec: AgentfnSpec
    _toolsets: dict[tuple[str, bool], dict[str, Tool]]
    _specs: dict[tuple[str, bool], list[ToolSpec]]
    _mcp: dict[str, dict[str, Tool]]
    _rules: dict[tuple[str, str], bool]
    _secrets: Any
    _lambda_client: Any
    _lambda: Any
    _model_cache: dict[str, Any]

    def renew(self) -> None:
        """In a copy restored from a snapshot (Lambda SnapStart, handlers.snapshot): its own
        lease owner (copies sharing one would each take the other's lease for their own)
        and new clients for models and tools (the snapshot's connections are gone)."""
        self.owner = uuid.uuid4().hex
        self._model_cache.clear()
        self._toolsets.clear()  # an HTTP tool's client, a Lambda tool's
        self.__dict__.pop("_last_box", None)
        self._specs.clear()
        self._lambda = None

    def build_tools(self, agent: str) -> None:
        """Build `agent`'s tools now (importing their modules): a SnapStart init does it so
        the snapshot holds the imports (handlers.snapshot)."""
        self._tools(agent)

    async def _discover_mcp(self, run: RunCursor, connections: AsyncExitStack) -> None:
        """Open the agent's MCP servers for this advance and add their tools.

        A server that cannot be reached does not fail the run: the run goes on without its
        tools, and the failure is recorded once as an event and a warning in the result.
        MCP tools fill only what the agent's own tools leave of a model request's 128 (in
        whichever role it plays); what is left out, and names that had to be changed to
        stay unique, are warnings too.
        """
        agent = run.agent
        if agent in run.discovered:
            return
        run.discovered.add(agent)
        refs = [r for r in self.spec.agents[agent].tools if r.startswith("mcp:")]
        if not refs:
            return
        from runtime.tools.mcp import MAX_TOOLS, McpToolset
        from runtime.tools.paths import project_dir, stdio_at

        project = project_dir(self.spec)
        servers = {name: stdio_at(c, project) for name, c in self.spec.mcp_servers.items()}
        toolset = McpToolset(servers, refs, self.secrets(), self.clock.now)
        await connections.enter_async_context(toolset)
        self._use_mcp_tools(agent, {})
        own = [self._tools(agent, supervised) for supervised in (False, True)]
        room = MAX_TOOLS - max(len(tools) for tools in own)  # declared tools always stay
        reserved = {name for tools in own for name in tools}
        tools, failures = await toolset.discover(limit=room, reserved=reserved)
        required = [f for f in failures if (c := servers.get(f.server)) and c.required]
        if required:
            from runtime.errors import McpUnavailable

            raise McpUnavailable("; ".join(f"mcp:{f.server}: {f.error}" for f in required))
        self._use_mcp_tools(agent, dict(tools))
        self._mcp_missing()[agent] = list(failures)
        # Each distinct warning is recorded once per run, however many advances meet it.
        new = [f for f in failures if f"mcp:{f.server}: {f.error}" not in run.head.warnings]
        notes = [f for f in toolset.notes if f"mcp:{f.server}: {f.error}" not in run.head.warnings]
        if new or notes:
            added = [f"mcp:{f.server}: {f.error}" for f in [*new, *notes]]
            events: list[tuple[EventType, dict[str, Any]]] = [
                ("tools_unavailable", {"server": f.server, "error": f.error}) for f in new
            ]
            update = {"warnings": [*run.head.warnings, *added]}
            run.head = self._commit(run.head, [], events, update=update)

    def _mcp_missing(self) -> dict[str, list[Any]]:
        """Agent → the MCP servers (or tools) it selected that this advance could not offer
        (McpFailure), for `list_tools_available`. Made on first use: the engine's
        constructor need not know about it."""
        missing: dict[str, list[Any]] = vars(self).setdefault("_mcp_unavailable", {})
        return missing

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

    def _rds_data(self) -> Any:
        """The RDS Data API client of aurora databases, made when a tool first needs it."""
        found = vars(self).get("_rds_data_client")
        if found is None:
            import boto3

            found = vars(self)["_rds_data_client"] = boto3.client("rds-data")
        return found

    def _bedrock_retrieval(self, region: str | None) -> Any:
        """The Bedrock Knowledge Base client (per region), made when a search first needs it."""
        clients: dict[str | None, Any] = vars(self).setdefault("_retrieval_clients", {})
        if region not in clients:
            import boto3

            clients[region] = boto3.client("bedrock-agent-runtime", region_name=region)
        return clients[region]

    def _tools(self, agent: str, supervised: bool = False) -> dict[str, Tool]:
        """The agent's tools: built once per engine, plus this advance's MCP tools, plus its
        team tools (`supervised`: it works under a supervisor, so it may request_help)."""
        key = (agent, supervised)
        tools = self._toolsets.get(key)
        if tools is None:
            base = build_toolset(
                self.spec,
                agent,
                secrets=lambda text: self.secrets()(text),
                lambda_client=self._lambda_for_tools,
                rds_data=self._rds_data,
                bedrock_retrieval=self._bedrock_retrieval,
                listing=lambda: ToolListing(
                    self._tools(agent, supervised), self._mcp_missing().get(agent, [])
                ),
            )
            base.update(team_tools(self.spec, agent, supervised=supervised))
            tools = self._toolsets[key] = merge_tools(base, self._mcp.get(agent, {}))
        return tools

    def _toolbox(self, head: RunHead) -> dict[str, Tool]:
        """The tools of the run's active agent, in its role in this run (the last answer
        kept for its head: a turn asks several times; a commit makes a new head, and MCP
        tools or a renewal forget it)."""
        last: tuple[RunHead, list[str], dict[str, Tool]] | None = self.__dict__.get("_last_box")
        if last is not None and last[0] is head and last[1] is head.chain:
            return last[2]
        supervised = head.supervisor is not None or head.parent_run_id is not None
        tools = self._tools(head.active_agent, supervised)
        self.__dict__["_last_box"] = (head, head.chain, tools)
        return tools

    def _use_mcp_tools(self, agent: str, mcp_tools: dict[str, Tool]) -> None:
        self._mcp[agent] = mcp_tools
        self.__dict__.pop("_last_box", None)
        for key in [k for k in self._toolsets if k[0] == agent]:
            self._toolsets.pop(key)
            self._specs.pop(key, None)
        self._rules.clear()

    def _tool_specs(self, head: RunHead) -> list[ToolSpec]:
        supervised = head.supervisor is not None or head.parent_run_id is not None
        key = (head.active_agent, supervised)
        specs = self._specs.get(key)
        if specs is None:
            tools = self._toolbox(head).values()
            specs = [ToolSpec(t.name, t.description, t.input_schema) for t in tools]
            self._specs[key] = specs
        return specs
