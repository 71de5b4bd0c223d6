"""`deployment.telemetry` in agents.yaml: located errors, secrets allowed in its headers
(resolved at run time), and the OTLP URL it exports to."""

from __future__ import annotations

from pathlib import Path

import pytest

from infra.checks.validate import validate_file
from runtime.spec import AgentfnSpec
from runtime.spec.telemetry import TelemetrySettings
from tests.infra.checks.test_validate_bad import _write_project, h

AGENT = "agents:\n  a: {description: d, model: m}\n"

CASES = {
    "plain http to another host": (
        h("""
        deployment:
          telemetry:
            otlp_endpoint: http://collector.example.com:4318  #!
        """)
        + AGENT,
        "otlp_endpoint must use https",
    ),
    "a credential in plaintext": (
        h("""
        deployment:
          telemetry:
            otlp_endpoint: https://otlp.example.com
            headers:
              Authorization: Bearer abc123  #!
        """)
        + AGENT,
        "looks like a credential written in plaintext",
    ),
    "an undeclared secret": (
        h("""
        deployment:
          telemetry:
            otlp_endpoint: https://otlp.example.com
            headers:
              x-honeycomb-team: ${secret:honeycomb}  #!
        """)
        + AGENT,
        "secret 'honeycomb' is not declared",
    ),
    "nowhere to send": (
        h("""
        deployment:
          telemetry:
            capture_content: true  #!
        """)
        + AGENT,
        "set otlp_endpoint, xray: true, or both",
    ),
    "a misspelt key": (
        h("""
        deployment:
          telemetry:
            otlp_endpoint: https://otlp.example.com
            capture_contents: true  #!
        """)
        + AGENT,
        "unknown key 'capture_contents'",
    ),
}


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_bad_telemetry_is_reported_at_its_line(case: str, tmp_path: Path) -> None:
    text, message = CASES[case]
    spec, line = _write_project(tmp_path, text)
    result = validate_file(spec)
    assert not result.ok
    matching = [i for i in result.issues if message in i.message]
    assert matching, [str(i) for i in result.issues]
    assert matching[0].line == line, [str(i) for i in result.issues]


def test_secrets_in_telemetry_headers_are_allowed(tmp_path: Path) -> None:
    text = (
        h("""
        secrets:
          otel-token: {source: ssm, name: /agentfn/otel}
        deployment:
          telemetry:
            otlp_endpoint: https://otlp.example.com/v1/traces
            headers: {Authorization: "Bearer ${secret:otel-token}"}
            capture_content: true
            xray: true  #!
        """)
        + AGENT
    )
    spec_file, _ = _write_project(tmp_path, text)
    result = validate_file(spec_file)
    assert result.ok and result.spec is not None, [str(i) for i in result.issues]
    telemetry = result.spec.deployment.telemetry
    assert telemetry is not None and telemetry.xray and telemetry.capture_content
    assert telemetry.headers == {"Authorization": "Bearer ${secret:otel-token}"}


@pytest.mark.parametrize(
    ("written", "posted_to"),
    [
        ("https://otlp.example.com", "https://otlp.example.com/v1/traces"),
        ("https://otlp.example.com/", "https://otlp.example.com/v1/traces"),
        ("https://api.example.com/otlp/v1/traces", "https://api.example.com/otlp/v1/traces"),
        ("http://localhost:4318", "http://localhost:4318/v1/traces"),
        ("http://127.0.0.1:4318/v1/traces", "http://127.0.0.1:4318/v1/traces"),
    ],
)
def test_the_traces_url(written: str, posted_to: str) -> None:
    assert TelemetrySettings(otlp_endpoint=written).traces_url() == posted_to  # type: ignore[arg-type]


def test_no_telemetry_by_default(demo_spec: AgentfnSpec) -> None:
    assert demo_spec.deployment.telemetry is None
