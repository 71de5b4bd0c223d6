"""The Lambda loads its compiled spec without validating it (runtime.spec.trusted): it must
give exactly what validation gives, for every kind of section a spec can hold."""

from __future__ import annotations

import json
import types
from pathlib import Path
from typing import Annotated, Any, Union, get_args, get_origin

import pytest
import yaml
from pydantic import BaseModel

from runtime.spec import AgentfnSpec, load_compiled
from runtime.spec.trusted import construct

ROOT = Path(__file__).resolve().parents[3]

#: One of every union member (models, tools, MCP servers, hooks, knowledge bases, databases)
#: and every workflow step kind, with their nested settings set away from their defaults.
EVERY_KIND = """
version: 1
defaults:
  model: scripted
  max_turns: 7
  lambda: {memory: 2048}
  hooks:
    - {event: pre_tool_use, type: rule, rules: [{arg: order.id, op: matches, value: "^ORD", else: deny}]}
  compaction: {threshold: 0.6}
  budget: {max_cost_usd: 2.5, session: {max_tokens: 90000}}
deployment:
  architecture: x86_64
  telemetry: {otlp_endpoint: "https://otel.example.com/v1/traces"}
  api_throttle: {rate_limit: 10}
secrets:
  key: {source: ssm, name: /agentfn/key}
models:
  bedrock: {provider: bedrock, model_id: "anthropic.claude", fallbacks: [openai], price: {input_per_mtok: 3, output_per_mtok: 15}}
  openai: {provider: openai, model_id: gpt-4.1, api_key: "${secret:key}", base_url: "https://proxy.example.com/v1"}
  azure: {provider: azure_openai, model_id: gpt-4.1, base_url: "https://r.openai.azure.com", deployment: d, api_key: "${secret:key}"}
  anthropic: {provider: anthropic, model_id: claude-sonnet-4, api_key: "${secret:key}", retry: {max_attempts: 2}}
  gemini: {provider: gemini, model_id: gemini-2.5-flash, api_key: "${secret:key}"}
  ollama: {provider: ollama, model_id: llama3.2}
  compatible: {provider: openai_compatible, model_id: m, base_url: "http://127.0.0.1:8000/v1"}
  gateway: {provider: ai_gateway, model_id: anthropic/claude-sonnet-4, api_key: "${secret:key}"}
  responses: {provider: openai, model_id: gpt-5, api_key: "${secret:key}", api: responses}
  scripted:
    provider: scripted
    script:
      - {text: "a", tool_calls: [{name: t, arguments: {x: 1}}, {name: u, arguments: "{}"}], usage: {input_tokens: 3}}
      - {text: {structured: true}}
      - {error: {status: 429, code: ThrottlingException}}
mcp_servers:
  local: {transport: stdio, command: python, args: [-m, server], timeout: 20s}
  remote:
    transport: http
    url: "https://mcp.example.com/mcp"
    oauth: {token_url: "https://auth.example.com/token", client_id: c, client_secret: "${secret:key}"}
tools:
  h: {type: http, description: d, url: "https://api.example.com/x", method: POST, effect: idempotent}
  p: {type: python, description: d, handler: "tools.a:b", effect: read_only}
  l: {type: lambda, description: d, function_arn: "arn:aws:lambda:us-east-1:123456789012:function:f"}
knowledge_bases:
  docs: {kind: local, path: knowledge, chunk_chars: 400}
  managed: {kind: bedrock, knowledge_base_id: KB12345678}
databases:
  shop: {kind: sqlite, path: data/shop.db}
  prod: {kind: aurora, cluster_arn: "arn:aws:rds:us-east-1:123456789012:cluster:c", secret_arn: "arn:aws:secretsmanager:us-east-1:123456789012:secret:s", database: app, engine: mysql}
code_execute: {backend: agentcore}
web:
  search: {provider: tavily, api_key: "${secret:key}"}
  scrape: {firecrawl: {api_key: "${secret:key}"}}
hooks:
  - {event: on_run_start, type: http, url: "https://hooks.example.com/start", on_error: deny}
  - {event: post_tool_use, type: python, handler: "tools.hooks:after"}
  - {event: on_run_complete, type: lambda, function_arn: "arn:aws:lambda:us-east-1:123456789012:function:h"}
agents:
  boss:
    description: d
    model: bedrock
    tools: [h, p, l, "builtin:get_time_date", "mcp:local"]
    sub_agents: [worker, {agent: helper, as: tool}]
    approval: [{tools: [h], timeout: 1h, decisions: [approve, reject, edit]}]
    session: {ttl: 2h}
    databases: {shop: {read: [orders]}}
    compaction: {keep_turns: 2}
    hooks: [{event: pre_response, type: rule, rules: [{op: contains, value: secret, then: deny}]}]
    output_schema: {type: object, properties: {ok: {type: boolean}}}
  worker: {description: d, system_prompt: {python: "tools.prompts:worker", timeout: 2s}}
  helper: {description: d, model: ollama}
workflows:
  flow:
    steps:
      - {id: first, agent: boss, input: "{input}"}
      - {id: both, parallel: [{agent: worker}, {agent: helper, when: "{first.ok}"}]}
      - {id: each, map: {over: "{first.items}", agent: worker, max_concurrency: 2}}
      - {id: again, loop: {agent: helper, until: "{again.ok}", max_iterations: 2}, on_error: continue}
      - {id: ask, llm: {model: gateway, prompt: "{input}", output_schema: {type: object}}}
"""


def validated(text: str) -> AgentfnSpec:
    try:
        return AgentfnSpec.model_validate(yaml.safe_load(text))
    except Exception as error:  # the fixture itself must stay a valid spec
        pytest.fail(f"the spec under test no longer validates: {error}")


def shipped_specs() -> list[tuple[str, AgentfnSpec]]:
    return [
        ("every kind", validated(EVERY_KIND)),
        ("demo agents.yaml", validated((ROOT / "agents.yaml").read_text())),
        ("tests/fixtures/full", validated((ROOT / "tests/fixtures/full/agents.yaml").read_text())),
    ]


@pytest.mark.parametrize(
    ("name", "spec"), shipped_specs(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_the_trusted_load_gives_what_validation_gives(name: str, spec: AgentfnSpec) -> None:
    compiled = json.loads(json.dumps(spec.to_compiled()))
    trusted = construct(AgentfnSpec, compiled)
    assert trusted == AgentfnSpec.model_validate(compiled) == spec
    assert trusted.to_compiled() == compiled  # dumps (so hashes) the same
    assert trusted.spec_hash() == spec.spec_hash()


def test_load_compiled_is_the_trusted_load(tmp_path: Path) -> None:
    spec = validated(EVERY_KIND)
    path = tmp_path / "agentfn.spec.json"
    path.write_text(json.dumps(spec.to_compiled()))
    loaded = load_compiled(path)
    assert loaded == spec
    assert loaded.spec_hash() == spec.spec_hash()


def test_a_changed_copy_of_a_spec_is_hashed_afresh() -> None:
    spec = validated(EVERY_KIND)
    before = spec.spec_hash()
    copy = spec.model_copy(update={"tools_package": "other_tools"})
    assert copy.spec_hash() != before
    assert copy.spec_hash() == AgentfnSpec.model_validate(copy.to_compiled()).spec_hash()


def test_every_kind_covers_every_member_of_every_union() -> None:
    """A new provider, tool type, hook type, ... must be added to EVERY_KIND above, or the
    trusted load of it would go untested."""
    used = {type(m) for m in _instances(validated(EVERY_KIND))}
    missing = sorted(c.__name__ for c in _union_members(AgentfnSpec) if c not in used)
    assert not missing, f"EVERY_KIND has none of: {', '.join(missing)}"


def test_a_union_value_it_cannot_decide_goes_to_pydantic() -> None:
    compiled = validated(EVERY_KIND).to_compiled()
    compiled["tools"]["h"]["type"] = "carrier-pigeon"  # no member's Literal accepts it
    with pytest.raises(ValueError, match="carrier-pigeon"):
        construct(AgentfnSpec, compiled)


def _instances(value: Any) -> list[BaseModel]:
    if isinstance(value, BaseModel):
        found = [value]
        for name in type(value).model_fields:
            found += _instances(getattr(value, name))
        return found
    if isinstance(value, dict):
        return [m for v in value.values() for m in _instances(v)]
    if isinstance(value, list):
        return [m for v in value for m in _instances(v)]
    return []


def _union_members(cls: type[BaseModel], seen: set[type] | None = None) -> set[type]:
    seen = set() if seen is None else seen
    members: set[type] = set()
    if cls in seen:
        return members
    seen.add(cls)

    def visit(annotation: Any, in_union: bool = False) -> None:
        origin = get_origin(annotation)
        if origin is Annotated:
            visit(get_args(annotation)[0], in_union)
        elif origin is Union or origin is types.UnionType:
            models = [
                a for a in get_args(annotation) if isinstance(a, type) and issubclass(a, BaseModel)
            ]
            for arg in get_args(annotation):
                visit(arg, len(models) > 1)
        elif origin in (list, dict):
            for arg in get_args(annotation):
                visit(arg, in_union)
        elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
            if in_union:
                members.add(annotation)
            members.update(_union_members(annotation, seen))

    for info in cls.model_fields.values():
        visit(info.annotation)
    return members
