"""The methods of spec sections, written once for both forms of the spec.

Each class here is a mixin base of a pydantic model (runtime.spec.*: what `agentfn build`
validates) and of the run-time struct generated from it (runtime.spec.plain: what a deployed
function reads), so the two answer the same questions the same way. Nothing here imports
pydantic. The attributes a method reads are declared for the type checker only, as `Any`:
each form declares them with its own types.
"""

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Self
from urllib.parse import urlsplit

from runtime.spec.shared import (
    FIRECRAWL_URL,
    MCP_CONNECT_TIMEOUT,
    SEARCH_URLS,
    SOURCES,
    STEP_KINDS,
    URL_PARAM_RE,
    compiled_hash,
)


class SpecMethods:
    """Of the whole spec (`AgentfnSpec`)."""

    __slots__ = ()
    if TYPE_CHECKING:
        agents: Any
        defaults: Any
        remote_agents: Any

        def to_compiled(self) -> dict[str, object]: ...

    def budget_for(self, agent: str) -> Any:
        """The agent's `BudgetSettings`, else the defaults' (None: no budget)."""
        return self.agents[agent].budget or self.defaults.budget

    def compaction_for(self, agent: str) -> Any:
        """The agent's `CompactionSettings`, else the defaults'."""
        return self.agents[agent].compaction or self.defaults.compaction

    def spec_hash(self) -> str:
        """A stable hash of everything a run's behaviour depends on (recorded on each run).
        Once per spec: every run start asks, and it dumps the whole spec. Kept beside the
        fields (equality ignores it), set from the file's JSON when loaded from one."""
        found = self.__dict__.get("_digest")
        if not isinstance(found, str):
            found = self.__dict__["_digest"] = compiled_hash(self.to_compiled())
        return found

    def project_dir(self) -> Path | None:
        """The folder relative paths in the spec start from: the spec's own folder (set by
        whoever loaded it from a file), or the Lambda package's root for the compiled spec.
        None for a spec built in memory. Kept out of the fields: where a spec was read is not
        part of what it says (its hash, its JSON)."""
        found = self.__dict__.get("_project")
        return found if isinstance(found, Path) else None

    def at_project(self, folder: Path) -> Self:
        """This spec, its relative paths starting from `folder` (copies keep it)."""
        self.__dict__["_project"] = folder
        return self

    def serves(self, agent: str, protocol: Literal["a2a", "mcp"]) -> bool:
        """Whether `agent` is served over `protocol` (its own setting, else the default)."""
        own = self.agents[agent].protocols
        setting = getattr(own, protocol) if own is not None else None
        return bool(getattr(self.defaults.protocols, protocol) if setting is None else setting)

    def description_of(self, agent: str) -> str:
        """A sub-agent's description: a local agent's, or a remote one's (as the spec says)."""
        if agent in self.agents:
            return str(self.agents[agent].description)
        remote = self.remote_agents[agent]
        return str(remote.description or f"the remote A2A agent at {remote.a2a}")

    def model_for(self, agent: str) -> str:
        """The key of the agent's model (its own, else the default)."""
        name = self.agents[agent].model or self.defaults.model
        assert name is not None, "validated at build time"
        return str(name)


class AgentMethods:
    __slots__ = ()
    if TYPE_CHECKING:
        sub_agents: Any

    def team_links(self) -> dict[str, str]:
        """Sub-agent name → how it is reached (`handoff` or `tool`)."""
        return {sub.agent: sub.as_ for sub in self.sub_agents}


class TelemetryMethods:
    __slots__ = ()
    if TYPE_CHECKING:
        otlp_endpoint: Any

    def traces_url(self) -> str | None:
        """The URL spans are POSTed to: the endpoint as written, or its /v1/traces."""
        if self.otlp_endpoint is None:
            return None
        url = str(self.otlp_endpoint)
        if urlsplit(url).path in ("", "/"):
            return url.rstrip("/") + "/v1/traces"
        return url


class HttpToolMethods:
    __slots__ = ()
    if TYPE_CHECKING:
        url: str

    def url_params(self) -> list[str]:
        """The `{name}` placeholders of the URL template, in order."""
        return URL_PARAM_RE.findall(self.url)


class McpMethods:
    __slots__ = ()
    if TYPE_CHECKING:
        timeout: float | None

    @property
    def connect_timeout(self) -> float:
        """How long connecting and listing the tools may take."""
        return self.timeout or MCP_CONNECT_TIMEOUT


class TriggerMethods:
    __slots__ = ()

    @property
    def kind(self) -> str:
        """Its source: `schedule`, `webhook`, `queue`, `s3` or `event`."""
        return next(s for s in SOURCES if getattr(self, s) is not None)


class StepMethods:
    __slots__ = ()
    if TYPE_CHECKING:
        agent: str | None
        parallel: Any
        map: Any
        loop: Any
        llm: Any

    @property
    def kind(self) -> str:
        """`agent`, `parallel`, `map`, `loop` or `llm`."""
        return next(kind for kind in STEP_KINDS if getattr(self, kind) is not None)

    def agents(self) -> list[str]:
        """The agents this step may start runs of (IAM grants exactly these)."""
        if self.agent is not None:
            return [self.agent]
        if self.parallel is not None:
            return list(dict.fromkeys(b.agent for b in self.parallel))
        if self.llm is not None:
            return []
        return [self.map.agent] if self.map is not None else [self.loop.agent]


class WorkflowMethods:
    __slots__ = ()
    if TYPE_CHECKING:
        steps: Any

    def agents(self) -> list[str]:
        """The agents its steps may start runs of."""
        return list(dict.fromkeys(a for step in self.steps for a in step.agents()))

    def models(self) -> list[str]:
        """The models its `llm` steps call (and their fallbacks: see infra.sam.workflows)."""
        return list(dict.fromkeys(s.llm.model for s in self.steps if s.llm is not None))


class WebSearchMethods:
    __slots__ = ()
    if TYPE_CHECKING:
        base_url: Any
        provider: str

    def endpoint(self) -> str:
        """The provider's search endpoint: `base_url`, else its public API."""
        return str(self.base_url) if self.base_url else SEARCH_URLS[self.provider]


class FirecrawlMethods:
    __slots__ = ()
    if TYPE_CHECKING:
        base_url: Any

    def endpoint(self) -> str:
        """Firecrawl's scrape endpoint: `base_url`, else the public API."""
        return str(self.base_url) if self.base_url else FIRECRAWL_URL
