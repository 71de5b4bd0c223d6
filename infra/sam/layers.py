"""The functions' dependencies: shared Lambda layers, one copy of each distribution.

Every function's own code zip holds only agentfn's code, the tools package and the compiled
spec (well under 1 MB). Third-party code is in layers that `sam build` builds once for the
stack (`BuildMethod: makefile`, infra.sam.layer_build), each function taking only those it uses:

- `DependenciesLayer`: pydantic, msgspec, httpx, fastjsonschema, what every function imports;
- `PowertoolsLayer`: aws-lambda-powertools' Logger and Metrics (and what they import), for
  every function too: each logs through its Logger and prints its metrics as EMF
  (handlers.observe). Agents read secrets with boto3 (runtime.secrets);
- `PowertoolsApiLayer`: the rest of Powertools the API uses (its REST resolver, validation,
  idempotency), for the API function only: the same distribution split across two layers,
  each file shipped once (Lambda merges every layer into /opt);
- `McpLayer`: the MCP SDK, for the agents with `mcp:` tools, when some agent has them, and
  for the API function when some agent is served over MCP (`protocols: {mcp: true}`);
- `A2aLayer`: the A2A SDK, for the API function when some agent is served over A2A, and for
  the agents that ask a remote A2A agent (`remote_agents`);
- `WebLayer`: markdownify and Beautiful Soup, for the agents with `web_scrape` only.
- `SqlLayer`: sqlglot, for the agents with `database_query`/`database_write` only.
- `ToolsLayer`: what the project's `tools/requirements.txt` lists, for the agents with Python
  tools, when the file lists something;
- `TelemetryLayer`: the OpenTelemetry SDK and its OTLP exporter, for the agents' functions
  when `deployment.telemetry` is set (off: not built, not shipped).

A layer never ships again what a layer beneath it holds (`lower`). The MCP SDK imports its
server side (Starlette, uvicorn, cryptography via PyJWT) from `import mcp`, so none of it can
be left out of the client's layer.

Every function and layer is built by a Makefile that agentfn stages next to it, with the
runtime's Python, so each ships bytecode compiled for the Python that runs it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from infra.sam.intrinsics import ref, sub
from infra.sam.naming import NAME_PREFIX
from runtime.spec import AgentfnSpec

LAYERS_DIR = ".agentfn/layers"


@dataclass(frozen=True)
class Layer:
    logical_id: str
    folder: str  # under LAYERS_DIR
    description: str
    requirements: tuple[str, ...]
    lower: tuple[str, ...] = ()  # requirements of the layer beneath: not shipped again
    prune: tuple[str, ...] = ("bin",)  # globs, under the layer's python/
    spared: tuple[str, ...] = ()  # globs the prune leaves (exceptions to it)
    only: tuple[str, ...] = ()  # when set: ship only these globs (part of a distribution)

    @property
    def path(self) -> str:
        return f"{LAYERS_DIR}/{self.folder}"


DEPENDENCIES = Layer(
    "DependenciesLayer",
    "dependencies",
    "agentfn: pydantic, msgspec, httpx, fastjsonschema",
    ("pydantic>=2.7,<3", "msgspec>=0.19,<0.23", "httpx>=0.27,<1", "fastjsonschema>=2.19"),
    # pydantic.v1, the old API kept for migrations (0.25 MB zipped): agentfn's code and the
    # layers' libraries use pydantic 2 only. A tool whose signature used a pydantic-1-style
    # type (`__get_validators__`) would fail to import it where pydantic 2 only warns.
    prune=("bin", "pydantic/v1"),
)
#: Powertools utilities the API does not use, nor any it uses imports.
_UNUSED_POWERTOOLS = (
    "auth_alpha", "batch", "circuit_breaker", "data_masking", "feature_flags", "kafka",
    "parser", "streaming",
)  # fmt: skip
_PT = "aws_lambda_powertools"
#: What Logger and Metrics import from `utilities` (every function needs those two).
_CORE_UTILITIES = tuple(
    f"{_PT}/utilities/{name}" for name in ("__init__.py", "jmespath_utils", "typing")
)
POWERTOOLS = Layer(
    "PowertoolsLayer",
    "powertools",
    "agentfn: AWS Lambda Powertools' Logger and Metrics (every function)",
    ("aws-lambda-powertools>=3.0,<4",),
    lower=DEPENDENCIES.requirements,
    # The REST resolver, validation and idempotency are the API's alone: its own layer.
    prune=("bin", f"{_PT}/event_handler", f"{_PT}/utilities/*"),
    spared=_CORE_UTILITIES,
)
POWERTOOLS_API = Layer(
    "PowertoolsApiLayer",
    "powertools-api",
    "agentfn: the rest of AWS Lambda Powertools the API uses (on top of PowertoolsLayer)",
    ("aws-lambda-powertools>=3.0,<4",),
    lower=DEPENDENCIES.requirements,
    only=(f"{_PT}/event_handler", f"{_PT}/utilities"),
    prune=(
        *_CORE_UTILITIES,  # in PowertoolsLayer: one copy
        *(f"{_PT}/utilities/{name}" for name in _UNUSED_POWERTOOLS),
        # The Swagger UI's bundles (1.7 MB): the API serves its OpenAPI document, not the UI.
        *(f"{_PT}/event_handler/openapi/swagger_ui/*.{kind}" for kind in ("js", "css")),
    ),
)
#: The layers of every function (the template's Globals).
EVERY_FUNCTION = (DEPENDENCIES, POWERTOOLS)
MCP = Layer(
    "McpLayer",
    "mcp",
    "agentfn: the MCP SDK (agents with MCP tools)",
    ("mcp>=2.0,<3",),
    lower=DEPENDENCIES.requirements,
)

A2A = Layer(
    "A2aLayer",
    "a2a",
    "agentfn: the A2A SDK (agents served over A2A, remote A2A agents)",
    ("a2a-sdk==1.3.0",),
    lower=DEPENDENCIES.requirements,
)


def serves(spec: AgentfnSpec, protocol: str) -> bool:
    """Whether some agent is served over `protocol` (a2a / mcp): the API takes its SDK."""
    if protocol == "mcp" and spec.defaults.protocols.mcp and spec.workflows:
        return True  # its workflows are tools of /mcp too
    return any(spec.serves(agent, protocol) for agent in spec.agents)  # type: ignore[arg-type]


def uses_remote_agents(spec: AgentfnSpec, agent: str) -> bool:
    remote = getattr(spec, "remote_agents", None) or {}
    return any(sub.agent in remote for sub in spec.agents[agent].sub_agents)


def api_layers(spec: AgentfnSpec) -> list[Layer]:
    """What the API function takes besides EVERY_FUNCTION's layers."""
    extra = [POWERTOOLS_API]
    extra += [MCP] if serves(spec, "mcp") else []
    asks = any(uses_remote_agents(spec, agent) for agent in spec.agents)
    extra += [A2A] if serves(spec, "a2a") or asks else []  # it forwards decisions to remotes
    return extra


SQL = Layer(
    "SqlLayer",
    "sql",
    "agentfn: sqlglot, the SQL parser of database_query (agents with database tools)",
    ("sqlglot>=25,<40",),
    lower=DEPENDENCIES.requirements,
)


WEB = Layer(
    "WebLayer",
    "web",
    "agentfn: markdownify and Beautiful Soup, web_scrape's HTML to Markdown",
    ("markdownify>=0.13,<2",),
    lower=DEPENDENCIES.requirements,
)


def uses_scrape(spec: AgentfnSpec, agent: str) -> bool:
    """Firecrawl answers in Markdown itself: with it, no HTML converter is shipped."""
    return "builtin:web_scrape" in spec.agents[agent].tools and spec.web.scrape.firecrawl is None


def uses_databases(spec: AgentfnSpec, agent: str) -> bool:
    return any(ref in DATABASE_TOOLS for ref in spec.agents[agent].tools)


DATABASE_TOOLS = ("builtin:database_query", "builtin:database_write")


TELEMETRY = Layer(
    "TelemetryLayer",
    "telemetry",
    "agentfn: the OpenTelemetry SDK and OTLP exporter (deployment.telemetry)",
    ("opentelemetry-sdk>=1.30,<2", "opentelemetry-exporter-otlp-proto-http>=1.30,<2"),
    lower=DEPENDENCIES.requirements,
)


REQUIREMENTS_FILE = "requirements.txt"


def tool_requirements(spec: AgentfnSpec) -> tuple[str, ...]:
    """What the project's tools import beyond the standard library and agentfn's own layers:
    `<tools package>/requirements.txt`, one requirement a line (comments allowed; pip options
    are refused, since the layer is built with pip's defaults)."""
    project = spec.project_dir()
    if project is None:
        return ()
    path = project / spec.tools_package / REQUIREMENTS_FILE
    if not path.is_file():
        return ()
    found = []
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if line.startswith("-"):
            raise ValueError(
                f"{path}:{number}: pip options ({line.split()[0]}) are not supported here; "
                "list one requirement a line"
            )
        if line:
            found.append(line)
    return tuple(found)


def tools_layer(spec: AgentfnSpec) -> Layer | None:
    requirements = tool_requirements(spec)
    if not requirements:
        return None
    return Layer(
        "ToolsLayer",
        "tools",
        f"your tools' requirements ({spec.tools_package}/{REQUIREMENTS_FILE})",
        requirements,
        lower=DEPENDENCIES.requirements,
    )


def uses_python_tools(spec: AgentfnSpec, agent: str) -> bool:
    python = {name for name, tool in spec.tools.items() if tool.type == "python"}
    return any(ref in python for ref in spec.agents[agent].tools)


def uses_mcp(spec: AgentfnSpec, agent: str) -> bool:
    return any(ref.startswith("mcp:") for ref in spec.agents[agent].tools)


def layers(spec: AgentfnSpec) -> list[Layer]:
    """The stack's layers (the MCP one only when an agent uses MCP)."""
    found = [DEPENDENCIES, POWERTOOLS, POWERTOOLS_API]
    if serves(spec, "mcp") or any(uses_mcp(spec, agent) for agent in spec.agents):
        found.append(MCP)
    if serves(spec, "a2a") or any(uses_remote_agents(spec, agent) for agent in spec.agents):
        found.append(A2A)
    if spec.deployment.telemetry is not None:  # runs are traced: agents record spans
        found.append(TELEMETRY)
    if any(uses_databases(spec, agent) for agent in spec.agents):
        found.append(SQL)
    if any(uses_scrape(spec, agent) for agent in spec.agents):
        found.append(WEB)
    tools = tools_layer(spec)
    if tools is not None and any(uses_python_tools(spec, agent) for agent in spec.agents):
        found.append(tools)
    return found


def agent_layers(spec: AgentfnSpec, agent: str) -> list[Layer]:
    """What an agent's function takes besides EVERY_FUNCTION's layers (in Globals)."""
    extra = [MCP] if uses_mcp(spec, agent) else []
    extra += [A2A] if uses_remote_agents(spec, agent) else []
    extra += [SQL] if uses_databases(spec, agent) else []
    extra += [WEB] if uses_scrape(spec, agent) else []
    tools = tools_layer(spec)
    extra += [tools] if tools is not None and uses_python_tools(spec, agent) else []
    return [*extra, TELEMETRY] if spec.deployment.telemetry is not None else extra


def layer_resource(spec: AgentfnSpec, layer: Layer, runtime: str) -> dict[str, Any]:
    architecture = spec.deployment.architecture
    return {
        "Type": "AWS::Serverless::LayerVersion",
        "Metadata": {"BuildMethod": "makefile", "BuildArchitecture": architecture},
        "Properties": {
            "LayerName": sub(NAME_PREFIX + layer.folder),
            "Description": layer.description,
            "ContentUri": layer.path,
            "CompatibleRuntimes": [runtime],
            "CompatibleArchitectures": [architecture],
            "RetentionPolicy": "Delete",
        },
    }


def built_by_makefile(function: dict[str, Any], extra: list[Layer]) -> dict[str, Any]:
    """A function resource built by the package's Makefile, with these layers beyond the
    global one."""
    if extra:
        function["Properties"]["Layers"] = [ref(layer.logical_id) for layer in extra]
    function["Metadata"] = {"BuildMethod": "makefile"}
    return function
