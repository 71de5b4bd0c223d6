"""The agents.yaml contract as pydantic models (structure and per-field rules).

Cross-references (a tool an agent names exists, no sub-agent cycles, ...) are checked at
build time by `infra.checks.validate`; the runtime trusts the compiled spec it ships with
(runtime.spec.trusted).

These modules do without `from __future__ import annotations`: pydantic would evaluate every
field's annotation from its string, a seventh of their import time at each cold start.
"""

from runtime.spec.agents import PROMPT_VARIABLES, AgentConfig, ApprovalRule
from runtime.spec.models import PROVIDERS, ModelConfig, ScriptedModel
from runtime.spec.root import SCHEMA_VERSION, AgentfnSpec, load_compiled
from runtime.spec.tools import BUILTIN_TOOLS, HttpTool, LambdaTool, PythonTool
from runtime.spec.types import parse_duration

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
