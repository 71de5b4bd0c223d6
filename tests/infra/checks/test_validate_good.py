"""Good specs validate, keep every feature, and survive the compile round-trip."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import yaml

from infra.cli.commands import json_schema
from runtime.spec import AgentfnSpec, HttpTool, PythonTool, ScriptedModel, load_compiled
from runtime.spec.models import AzureOpenAIModel, BedrockModel
from runtime.spec.tools import HttpMcpServer, LambdaTool, StdioMcpServer
from tests.helpers import DEMO_SPEC, FULL_SPEC, ROOT
from tests.spec_forms import differences


def test_every_feature_spec_is_valid_and_parsed_into_the_right_types(
    full_spec: AgentfnSpec,
) -> None:
    spec = full_spec
    assert {type(m).__name__ for m in spec.models.values()} == {
        "BedrockModel",
        "OpenAIModel",
        "AzureOpenAIModel",
        "AnthropicModel",
        "GeminiModel",
        "OllamaModel",
        "OpenAICompatibleModel",
        "ScriptedModel",
    }
    claude = spec.models["claude"]
    assert isinstance(claude, BedrockModel)
    assert claude.fallbacks == ["haiku", "gpt"]
    assert claude.retry.base_delay == 0.5 and claude.retry.max_delay == 30 and claude.timeout == 120
    azure = spec.models["azure"]
    assert isinstance(azure, AzureOpenAIModel) and azure.deployment == "gpt4o-prod"
    assert isinstance(spec.tools["lookup_account"], HttpTool)
    assert spec.tools["lookup_account"].url_params() == ["customer_id"]
    assert isinstance(spec.tools["refund"], PythonTool)
    assert isinstance(spec.tools["charge"], LambdaTool)
    assert isinstance(spec.mcp_servers["orders"], HttpMcpServer)
    assert isinstance(spec.mcp_servers["time"], StdioMcpServer)
    assert spec.mcp_servers["legacy"].enabled is False
    support = spec.agents["support"]
    assert support.approval[0].decisions == ["approve", "reject", "edit"]
    assert support.approval[1].destructive is True and support.approval[1].timeout == 1800
    assert support.session.ttl == 7 * 86400
    assert support.lambda_.memory == 2048 and support.lambda_.timeout == 900
    assert spec.defaults.input_timeout == 2 * 86400
    assert spec.deployment.retention == 14 * 86400


def test_scripted_entries_keep_tool_calls_errors_and_structured_text(
    full_spec: AgentfnSpec,
) -> None:
    demo = full_spec.models["demo"]
    assert isinstance(demo, ScriptedModel)
    first, second, third = demo.script
    assert [c.name for c in first.tool_calls] == ["lookup_account", "quote"]
    assert first.tool_calls[0].id == "call-1"
    assert isinstance(first.tool_calls[1].arguments, str)  # raw (invalid) JSON kept for tests
    assert first.usage is not None and first.usage.input_tokens == 120
    assert second.error is not None and second.error.status == 429
    assert third.text == {"answer": "done"}


def test_demo_spec_is_valid(demo_spec: AgentfnSpec) -> None:
    assert {"support", "triage", "billing", "assistant"} <= set(demo_spec.agents)
    assert demo_spec.agents["support"].output_schema is not None


def test_compiled_spec_round_trips_with_the_same_hash(
    full_spec: AgentfnSpec, tmp_path: Path
) -> None:
    compiled = tmp_path / "agentfn.spec.json"
    compiled.write_text(json.dumps(full_spec.to_compiled()))
    again = load_compiled(compiled)  # the run-time structs a function reads
    assert differences(full_spec, again) == []
    assert again.spec_hash() == full_spec.spec_hash()


def test_spec_hash_changes_with_behaviour(full_spec: AgentfnSpec) -> None:
    data = full_spec.to_compiled()
    data["agents"]["support"]["max_turns"] = 9  # type: ignore[index]
    assert AgentfnSpec.model_validate(data).spec_hash() != full_spec.spec_hash()


def test_committed_json_schema_is_current() -> None:
    committed = (ROOT / "schema" / "agents.schema.json").read_text(encoding="utf-8")
    assert committed == json_schema(), "run: agentfn schema -o schema/agents.schema.json"


def test_json_schema_accepts_the_good_specs_and_rejects_a_typo() -> None:
    """What an editor checks with the schema agrees with `agentfn validate`."""
    schema = json.loads(json_schema())
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for path in (DEMO_SPEC, FULL_SPEC):
        data = yaml.safe_load(path.read_text())
        errors = [e.message for e in validator.iter_errors(data)]
        assert errors == [], (path, errors)
    bad = yaml.safe_load(DEMO_SPEC.read_text())
    bad["agents"]["support"]["tols"] = []
    assert any("tols" in e.message for e in validator.iter_errors(bad))


def test_demo_spec_points_editors_at_the_committed_schema() -> None:
    first = DEMO_SPEC.read_text().splitlines()[0]
    assert first == "# yaml-language-server: $schema=./schema/agents.schema.json"
    assert (ROOT / "schema" / "agents.schema.json").exists()
