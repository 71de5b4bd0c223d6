"""`environments`: one agents.yaml for local and deployed runs.

An environment names entries of `models`, `secrets` and `mcp_servers` that replace the
top-level entries of the same name, whole (a model switching provider changes every key
anyway), or add new ones. `agentfn build/run/dev --env NAME` (or `AGENTFN_ENV`) resolves it
before validation (infra.checks.environments), so what is validated, hashed and compiled into the
Lambda package is the resolved spec, and no function ever sees another environment. Other
sections stay shared: an agent's prompt, tools and limits are the same wherever it runs.

`SpecFile` is the file's shape (the JSON Schema, and where "did you mean" looks for keys);
the runtime only knows `AgentfnSpec`, the resolved spec.
"""

from pydantic import Field

from runtime.spec.models import ModelConfig, SpecModel
from runtime.spec.root import AgentfnSpec, SecretConfig
from runtime.spec.tools import McpServerConfig
from runtime.spec.types import Name

#: The top-level sections an environment may override, entry by entry.
OVERRIDABLE = ("models", "secrets", "mcp_servers")


class Environment(SpecModel):
    """Entries replacing (whole) or adding to the top-level ones of the same name."""

    models: dict[Name, ModelConfig] = Field(default_factory=dict)
    secrets: dict[Name, SecretConfig] = Field(default_factory=dict)
    mcp_servers: dict[Name, McpServerConfig] = Field(default_factory=dict)


class SpecFile(AgentfnSpec):
    """agents.yaml as written: the spec plus its `environments`."""

    environments: dict[Name, Environment] = Field(
        default_factory=dict,
        description="Named overrides of models, secrets and MCP servers, chosen with "
        "`--env NAME` or AGENTFN_ENV (see docs: Environments).",
    )
