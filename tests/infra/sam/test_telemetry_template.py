"""What `deployment.telemetry` adds to the stack: the SDK layer for the agents' functions
only, the grants their exporters need, and nothing at all when telemetry is off."""

from __future__ import annotations

from typing import Any

from infra.sam.api import API_FUNCTION
from infra.sam.layers import TELEMETRY
from infra.sam.naming import agent_function_id
from infra.sam.package import requirements
from infra.sam.template import build_template
from runtime.spec import AgentfnSpec
from tests.helpers import DEMO_SPEC, load_spec
from tests.infra.cfn import function_statements

TELEMETRY_ON = {
    "otlp_endpoint": "https://otlp.example.com",
    "headers": {"Authorization": "Bearer ${secret:otel-token}"},
    "xray": True,
}


def _with(telemetry: dict[str, Any] | None) -> AgentfnSpec:
    data = load_spec(DEMO_SPEC).to_compiled()
    data["secrets"]["otel-token"] = {"source": "ssm", "name": "/agentfn/otel"}
    data["deployment"]["telemetry"] = telemetry
    return AgentfnSpec.model_validate(data)


def _statements(template: dict[str, Any], function: str) -> list[dict[str, Any]]:
    return function_statements(template["Resources"], function)


def test_telemetry_off_adds_nothing() -> None:
    spec = _with(None)
    template = build_template(spec)
    assert TELEMETRY.logical_id not in template["Resources"]
    assert not any("opentelemetry" in r for r in requirements(spec))
    for agent in spec.agents:
        function = template["Resources"][agent_function_id(agent)]["Properties"]
        assert {"Ref": TELEMETRY.logical_id} not in function.get("Layers", [])
        assert all(
            s.get("Sid") != "WriteSpansToXRay"
            for s in _statements(template, agent_function_id(agent))
        )


def test_telemetry_on_ships_the_sdk_to_the_agents_and_grants_their_exporters() -> None:
    spec = _with(TELEMETRY_ON)
    template = build_template(spec)
    assert TELEMETRY.logical_id in template["Resources"]
    assert {"opentelemetry-sdk>=1.30,<2", "opentelemetry-exporter-otlp-proto-http>=1.30,<2"} <= set(
        requirements(spec)
    )
    api = template["Resources"][API_FUNCTION]["Properties"]
    assert {"Ref": TELEMETRY.logical_id} not in api.get("Layers", [])  # it only starts runs
    for agent in spec.agents:
        function_id = agent_function_id(agent)
        assert {"Ref": TELEMETRY.logical_id} in template["Resources"][function_id]["Properties"][
            "Layers"
        ]
        statements = _statements(template, function_id)
        xray = [s for s in statements if s.get("Sid") == "WriteSpansToXRay"]
        assert xray and xray[0]["Action"] == ["xray:PutSpans", "xray:PutSpansForIndexing"]
        parameters = [s for s in statements if s.get("Sid") == "ReadReferencedParameters"]
        assert parameters, agent  # the header's secret, read by the function's exporter
        assert "/agentfn/otel" in str(parameters[0]["Resource"])
