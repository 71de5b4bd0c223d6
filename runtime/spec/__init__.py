"""The agents.yaml contract, in two forms.

- The pydantic models of this package's modules (structure and per-field rules): what
  `agentfn build`, `validate` and `schema` read. Cross-references (a tool an agent names
  exists, no sub-agent cycles, ...) are checked at build time by `infra.checks.validate`.
- runtime.spec.plain: structs generated from those models (`python -m infra.sam.plain_spec`),
  what the engine reads. A deployed function loads its compiled spec into them without
  importing pydantic (`load_compiled`); in process, a validated spec gives its own
  (`AgentfnSpec.runtime()`, which the engine calls).

The names below are imported when first asked for, so that importing runtime.spec.plain (or
runtime.spec.shared) does not import the pydantic models through this package.

The model modules do without `from __future__ import annotations`: pydantic would evaluate
every field's annotation from its string.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runtime.spec.agents import PROMPT_VARIABLES, AgentConfig, ApprovalRule
    from runtime.spec.models import PROVIDERS, ModelConfig, ScriptedModel
    from runtime.spec.plain import load_compiled
    from runtime.spec.root import SCHEMA_VERSION, AgentfnSpec
    from runtime.spec.tools import BUILTIN_TOOLS, HttpTool, LambdaTool, PythonTool
    from runtime.spec.types import parse_duration

_WHERE = {
    "BUILTIN_TOOLS": "tools",
    "PROMPT_VARIABLES": "agents",
    "PROVIDERS": "models",
    "SCHEMA_VERSION": "root",
    "AgentConfig": "agents",
    "AgentfnSpec": "root",
    "ApprovalRule": "agents",
    "HttpTool": "tools",
    "LambdaTool": "tools",
    "ModelConfig": "models",
    "PythonTool": "tools",
    "ScriptedModel": "models",
    "load_compiled": "plain",
    "parse_duration": "types",
}

__all__ = [
    "BUILTIN_TOOLS",
    "PROMPT_VARIABLES",
    "PROVIDERS",
    "SCHEMA_VERSION",
    "AgentConfig",
    "AgentfnSpec",
    "ApprovalRule",
    "HttpTool",
    "LambdaTool",
    "ModelConfig",
    "PythonTool",
    "ScriptedModel",
    "load_compiled",
    "parse_duration",
]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{_WHERE[name]}"), name)
