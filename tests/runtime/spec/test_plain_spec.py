"""A function loads its compiled spec into the run-time structs (runtime.spec.plain), without
pydantic and without validating it: they must say exactly what validation gives, for every
kind of section a spec can hold, and stay what the models generate."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from pathlib import Path
from typing import Annotated, Any, Union, get_args, get_origin

import msgspec
import pytest
import yaml
from pydantic import BaseModel

from infra.sam import plain_spec
from runtime.engine.loop import Engine
from runtime.spec import AgentfnSpec, plain
from runtime.spec.plain import load_compiled
from runtime.store.memory import MemoryStore
from tests.spec_forms import differences, form_problems, loaded_as_deployed

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
def test_the_plain_load_gives_what_validation_gives(name: str, spec: AgentfnSpec) -> None:
    assert form_problems(spec) == []
    loaded = loaded_as_deployed(spec)
    assert loaded == loaded_as_deployed(spec)  # structs compare by value
    assert loaded.to_compiled() == spec.to_compiled()  # dumps (so hashes) the same


def test_load_compiled_reads_the_file_without_pydantic(tmp_path: Path) -> None:
    """In a process of its own, as a function starts: the spec is loaded, asked for its
    hash and read through its methods, and pydantic is never imported."""
    spec = validated(EVERY_KIND)
    path = tmp_path / "agentfn.spec.json"
    path.write_text(json.dumps(spec.to_compiled()))
    loaded = load_compiled(path)
    assert differences(spec, loaded) == []
    assert loaded.spec_hash() == spec.spec_hash()
    assert loaded.project_dir() == tmp_path.resolve()
    script = (
        "import sys\n"
        "from runtime.spec.plain import load_compiled\n"
        f"spec = load_compiled({str(path)!r})\n"
        "print(spec.spec_hash(), spec.model_for('boss'), spec.budget_for('boss').max_cost_usd)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'pydantic'))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", script], env=env, cwd=tmp_path,
                          capture_output=True, text=True, check=True)  # fmt: skip
    answer, modules = done.stdout.splitlines()
    assert answer == f"{spec.spec_hash()} bedrock 2.5"
    assert modules == "[]"


def test_a_compiled_spec_of_another_shape_is_refused_where_it_differs() -> None:
    """The structs check JSON types and refuse keys they do not know (a struct that lost a
    field fails to load a spec that has it), naming the place."""
    compiled = validated(EVERY_KIND).to_compiled()
    bad_tag = json.loads(json.dumps(compiled))
    bad_tag["tools"]["h"]["type"] = "carrier-pigeon"  # no member's tag
    with pytest.raises(msgspec.ValidationError, match=r"carrier-pigeon.*\$\.tools\[\.\.\.\]\.type"):
        plain.load(bad_tag)
    unknown = json.loads(json.dumps(compiled))
    unknown["agents"]["boss"]["moods"] = ["calm"]
    with pytest.raises(msgspec.ValidationError, match=r"moods.*\$\.agents\[\.\.\.\]"):
        plain.load(unknown)
    wrong_type = json.loads(json.dumps(compiled))
    wrong_type["defaults"]["max_turns"] = "seven"
    with pytest.raises(msgspec.ValidationError, match=r"\$\.defaults\.max_turns"):
        plain.load(wrong_type)


def test_the_committed_structs_are_what_the_models_generate() -> None:
    """runtime/spec/plain/ is generated (python -m infra.sam.plain_spec): a model changed
    without regenerating fails here."""
    assert plain_spec.drifted() == [], "run: python -m infra.sam.plain_spec"


def test_every_struct_has_the_attributes_keys_and_defaults_of_its_model() -> None:
    """Checked against the models themselves, not the generator: each struct's fields are
    its model's (a union's tag is a class attribute), with the same keys and defaults."""
    models = _models(AgentfnSpec)
    assert len(models) > 60
    for model in models:
        struct = _struct_of(model)
        config = struct.__struct_config__
        fields = {f.name: f for f in msgspec.structs.fields(struct)}
        expected = {n for n in model.model_fields if n != config.tag_field}
        assert set(fields) == expected, model.__name__
        if config.tag_field is not None:
            assert getattr(struct, config.tag_field) == config.tag
            assert get_args(model.model_fields[config.tag_field].annotation) == (config.tag,)
        for name, info in model.model_fields.items():
            if name == config.tag_field:
                continue
            field = fields[name]
            assert field.encode_name == (info.alias or name), (model.__name__, name)
            if info.is_required():
                assert field.required, (model.__name__, name)
                continue
            ours = (
                field.default if field.default is not msgspec.NODEFAULT else field.default_factory()
            )
            theirs = info.get_default(call_default_factory=True)
            assert differences(theirs, ours, f"{model.__name__}.{name}") == []


def test_methods_answer_the_same_on_both_forms() -> None:
    spec = validated(EVERY_KIND)
    loaded = loaded_as_deployed(spec)
    for agent in spec.agents:
        for ask in ("budget_for", "compaction_for"):
            assert differences(getattr(spec, ask)(agent), getattr(loaded, ask)(agent)) == []
        for ask in ("model_for", "description_of"):
            assert getattr(spec, ask)(agent) == getattr(loaded, ask)(agent)
        for protocol in ("a2a", "mcp"):
            assert spec.serves(agent, protocol) == loaded.serves(agent, protocol)  # type: ignore[arg-type]
        assert spec.agents[agent].team_links() == loaded.agents[agent].team_links()
    assert loaded.description_of("boss") == "d"
    telemetry = spec.deployment.telemetry
    assert telemetry is not None and loaded.deployment.telemetry is not None
    assert telemetry.traces_url() == loaded.deployment.telemetry.traces_url()
    assert [t.url_params() for t in spec.tools.values() if hasattr(t, "url")] == [
        t.url_params() for t in loaded.tools.values() if hasattr(t, "url")
    ]
    for name, server in spec.mcp_servers.items():
        assert server.connect_timeout == loaded.mcp_servers[name].connect_timeout
    for name, flow in spec.workflows.items():
        assert flow.agents() == loaded.workflows[name].agents()
        assert flow.models() == loaded.workflows[name].models()
        assert [s.kind for s in flow.steps] == [s.kind for s in loaded.workflows[name].steps]
    assert spec.web.search is not None and loaded.web.search is not None
    assert spec.web.search.endpoint() == loaded.web.search.endpoint()


def test_an_engine_runs_a_validated_spec_on_its_structs_made_once() -> None:
    spec = validated(EVERY_KIND)
    engine = Engine(spec, MemoryStore())
    assert isinstance(engine.spec, plain.AgentfnSpec)
    assert Engine(spec, MemoryStore()).spec is engine.spec  # one conversion per spec
    assert engine.spec.spec_hash() == spec.spec_hash()
    assert isinstance(engine.spec.tools["h"], plain.HttpTool)
    assert isinstance(engine.spec.models["bedrock"], plain.ModelConfig)


def test_a_changed_copy_of_a_spec_is_hashed_afresh() -> None:
    spec = validated(EVERY_KIND)
    before = spec.spec_hash()
    runs_on = spec.to_runtime()
    copy = spec.model_copy(update={"tools_package": "other_tools"})
    assert copy.spec_hash() != before
    assert copy.spec_hash() == AgentfnSpec.model_validate(copy.to_compiled()).spec_hash()
    assert copy.to_runtime().tools_package == "other_tools"
    assert runs_on.tools_package == "tools"


def test_every_kind_covers_every_member_of_every_union() -> None:
    """A new provider, tool type, hook type, ... must be added to EVERY_KIND above, or the
    run-time load of it would go untested."""
    used = {type(m) for m in _instances(validated(EVERY_KIND))}
    missing = sorted(c.__name__ for c in _union_members(AgentfnSpec) if c not in used)
    assert not missing, f"EVERY_KIND has none of: {', '.join(missing)}"


def _models(
    cls: type[BaseModel], found: list[type[BaseModel]] | None = None
) -> list[type[BaseModel]]:
    """Every model a spec can hold, and their bases below SpecModel."""
    found = [] if found is None else found
    if cls in found or cls.__name__ == "SpecModel" or not issubclass(cls, BaseModel):
        return found
    found.append(cls)
    for base in cls.__bases__:
        _models(base, found)

    def visit(annotation: Any) -> None:
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            _models(annotation, found)
        for arg in get_args(annotation):
            visit(arg)

    for info in cls.model_fields.values():
        visit(info.annotation)
    return found


def _struct_of(model: type[BaseModel]) -> Any:
    """The struct generated from `model`, from the module generated from its module."""
    module = sys.modules[f"runtime.spec.plain.{model.__module__.rpartition('.')[2]}"]
    return getattr(module, model.__name__)


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


@pytest.mark.parametrize(
    ("name", "spec"), shipped_specs(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_an_agents_hash_is_the_one_runs_in_flight_recorded(name: str, spec: AgentfnSpec) -> None:
    """Runs record an agent hash made, before the run-time structs, from the models' JSON
    without defaults (runtime.engine.compat): the structs must give the same hash, or a
    deployment of this version would end every run in flight with SPEC_CHANGED."""
    import hashlib

    from runtime.engine.compat import agent_hash
    from runtime.spec.graph import agent_closure, model_closure

    def unset(model: BaseModel) -> Any:
        return model.model_dump(mode="json", by_alias=True, exclude_defaults=True)

    def recorded(agent: str) -> str:  # the formula of the pydantic-era runtime.engine.compat
        agents = agent_closure(spec, agent)
        refs = {r for a in agents for r in spec.agents[a].tools}
        servers = {r.removeprefix("mcp:").partition("/")[0] for r in refs if r.startswith("mcp:")}
        relevant: dict[str, Any] = {
            "agents": {
                a: unset(spec.agents[a].model_copy(update={"triggers": []})) for a in agents
            },
            "models": {m: unset(spec.models[m]) for m in model_closure(spec, agents)},
            "tools": {t: unset(spec.tools[t]) for t in sorted(r for r in refs if r in spec.tools)},
            "mcp": {s: unset(spec.mcp_servers[s]) for s in sorted(servers)},
            "defaults": unset(spec.defaults),
            "tools_package": spec.tools_package,
        }
        if spec.hooks:
            relevant["hooks"] = [unset(h) for h in spec.hooks]
        canonical = json.dumps(relevant, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]

    loaded = loaded_as_deployed(spec)
    for agent in spec.agents:
        assert agent_hash(loaded, agent) == recorded(agent), agent
