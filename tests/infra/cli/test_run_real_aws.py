"""`agentfn run` emulates only the stack's own resources: a Bedrock model, a Lambda tool by
ARN and a declared Secrets Manager secret go where the user's environment sends them (here
a recording server on loopback, through AWS_ENDPOINT_URL_*, answering with real recorded
Bedrock responses), signed with the user's credentials and region, while the runs table
and the bucket never leave the machine; `--offline` keeps everything in moto.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import ROOT, run_agentfn

RECORDINGS = ROOT / "tests" / "fixtures" / "provider_recordings"
TOOL_ARN = "arn:aws:lambda:eu-west-1:111122223333:function:get-capital"

SPEC = """\
version: 1
secrets:
  crm-token: {source: secretsmanager, name: prod/crm-token}
models:
  claude:
    provider: bedrock
    model_id: us.anthropic.claude-sonnet-4-5-20250929-v1:0
    stream: false
  script:
    provider: scripted
    script:
      - {tool_calls: [{name: crm, arguments: {q: ORD-1}}]}
      - {text: "The CRM answered."}
tools:
  get_capital:
    type: lambda
    function_arn: "%(arn)s"
    description: Get the capital of a country.
    input_schema:
      type: object
      properties: {country: {type: string, description: The country name.}}
      required: [country]
  crm:
    type: http
    url: "%(url)s/crm"
    headers: {Authorization: "Bearer ${secret:crm-token}"}
    allow_private: [127.0.0.1]
    description: Look a customer up.
agents:
  geo:
    description: Answers with Bedrock and a Lambda tool.
    model: claude
    tools: [get_capital]
  desk:
    description: Calls the CRM with a secret token.
    model: script
    tools: [crm]
"""


class Recorder(ThreadingHTTPServer):
    """What the user's AWS (and the CRM) would be: answers and remembers every request."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests: list[dict[str, Any]] = []
        self.converse = [
            json.loads((RECORDINGS / f"bedrock__{name}.json").read_text())["response"]
            for name in ("text_and_tool_use", "after_tool_result")
        ]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: Recorder

    def log_message(self, *args: Any) -> None:
        pass

    def _answer(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        seen = {
            "method": self.command,
            "path": self.path,
            "headers": {k.lower(): v for k, v in self.headers.items()},
            "body": body.decode("utf-8", "replace"),
        }
        self.server.requests.append(seen)
        target = seen["headers"].get("x-amz-target", "")
        status, answer = 500, {"message": "not expected here"}
        if self.path.endswith("/converse") and self.server.converse:
            recorded = self.server.converse.pop(0)
            status, answer = recorded["status"], recorded["body"]
        elif "/functions/" in self.path and self.path.endswith("/invocations"):
            status, answer = 200, {"capital": "Paris"}
        elif target == "secretsmanager.GetSecretValue":
            status, answer = 200, {"Name": "prod/crm-token", "SecretString": "tok-123"}
        elif self.path.startswith("/crm"):
            status, answer = 200, {"customer": "Ada"}
        data = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_DELETE = _answer


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    server = Recorder()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _user_env(url: str, home: Path) -> dict[str, str]:
    """A user's AWS environment: their own keys and region, and every service's endpoint
    (DynamoDB and S3 included) sent to the recorder."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.pop("AGENTFN_STATE_DIR", None)
    env.update(
        {
            "HOME": str(home),
            "AWS_ACCESS_KEY_ID": "AKIAUSERSOWNKEY00000",
            "AWS_SECRET_ACCESS_KEY": "users-own-secret",
            "AWS_REGION": "us-west-2",
            "AWS_CONFIG_FILE": str(home / "none"),
            "AWS_SHARED_CREDENTIALS_FILE": str(home / "none"),
            "AWS_EC2_METADATA_DISABLED": "true",
            "AWS_ENDPOINT_URL": url,
            "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": url,
            "AWS_ENDPOINT_URL_LAMBDA": url,
            "AWS_ENDPOINT_URL_SECRETS_MANAGER": url,
            "AWS_ENDPOINT_URL_DYNAMODB": url,
            "AWS_ENDPOINT_URL_S3": url,
        }
    )
    return env


def _spec(tmp_path: Path, url: str) -> Path:
    spec = tmp_path / "agents.yaml"
    spec.write_text(SPEC % {"arn": TOOL_ARN, "url": url})
    return spec


def test_bedrock_lambda_tools_and_secrets_leave_the_embedded_aws_the_runs_table_does_not(
    tmp_path: Path, recorder: Recorder
) -> None:
    spec = _spec(tmp_path, recorder.url)
    env = _user_env(recorder.url, tmp_path)
    geo = run_agentfn("run", "geo", "What is the capital of France?", "-f", str(spec), env=env)
    assert geo.returncode == 0, geo.stderr
    assert "sunny" in geo.stdout  # the recorded final answer
    desk = run_agentfn("run", "desk", "Who ordered ORD-1?", "-f", str(spec), env=env)
    assert desk.returncode == 0, desk.stderr

    paths = [r["path"] for r in recorder.requests]
    converse = [r for r in recorder.requests if r["path"].endswith("/converse")]
    assert len(converse) == 2, paths
    assert "us.anthropic.claude-sonnet-4-5" in converse[0]["path"].replace("%3A", ":")
    sent = json.loads(converse[1]["body"])  # the tool's answer went back to the model
    assert "Paris" in json.dumps(sent["messages"][-1])
    (invoke,) = [r for r in recorder.requests if "/invocations" in r["path"]]
    assert "get-capital" in invoke["path"]
    assert json.loads(invoke["body"])["arguments"] == {"country": "France"}
    (secret,) = [
        r for r in recorder.requests if r["headers"].get("x-amz-target", "").startswith("secrets")
    ]
    assert json.loads(secret["body"])["SecretId"] == "prod/crm-token"
    (crm,) = [r for r in recorder.requests if r["path"].startswith("/crm")]
    assert crm["headers"]["authorization"] == "Bearer tok-123"
    for request in (*converse, secret):  # signed by the user, in the user's region
        scope = request["headers"]["authorization"]
        assert "Credential=AKIAUSERSOWNKEY00000/" in scope and "/us-west-2/" in scope, scope
    scope = invoke["headers"]["authorization"]  # a function is called in its ARN's region
    assert "Credential=AKIAUSERSOWNKEY00000/" in scope and "/eu-west-1/" in scope, scope

    # The stack's own resources stayed home: no DynamoDB or S3 request reached the
    # endpoint the user's environment names, and the runs are in the local state.
    for request in recorder.requests:
        target = request["headers"].get("x-amz-target", "")
        assert not target.startswith("DynamoDB"), request
        assert "/s3/" not in request["headers"].get("authorization", ""), request
    assert len(recorder.requests) == 5, paths
    log = (tmp_path / ".agentfn" / "local" / "aws.log").read_text()
    assert "What is the capital of France?" in log and "Who ordered ORD-1?" in log


def test_offline_keeps_every_aws_call_in_moto(tmp_path: Path, recorder: Recorder) -> None:
    spec = _spec(tmp_path, "http://127.0.0.1:9")
    spec.write_text(spec.read_text().replace("tools: [crm]", "tools: [get_capital]"))
    spec.write_text(
        spec.read_text().replace(
            "{tool_calls: [{name: crm, arguments: {q: ORD-1}}]}",
            "{tool_calls: [{name: get_capital, arguments: {country: France}}]}",
        )
    )
    env = _user_env(recorder.url, tmp_path)
    done = run_agentfn("run", "desk", "capital?", "-f", str(spec), "--offline", env=env)
    assert done.returncode == 0, done.stderr
    assert "✗ get_capital" in done.stderr  # moto has no such function: a tool error
    assert recorder.requests == []
    assert not (tmp_path / ".agentfn").exists()  # nothing kept


def _no_credentials(tmp_path: Path) -> dict[str, str]:
    """The environment of a machine with no AWS credentials, profile, region or secrets."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("AWS_") and not k.startswith("AGENTFN_SECRET_")
    }
    env.update(
        {
            "HOME": str(tmp_path),
            "AWS_CONFIG_FILE": str(tmp_path / "none"),
            "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
            "AWS_EC2_METADATA_DISABLED": "true",
            "AGENTFN_STATE_DIR": str(tmp_path / "state"),
        }
    )
    return env


def test_without_credentials_a_bedrock_agent_says_what_to_set(tmp_path: Path) -> None:
    spec = _spec(tmp_path, "http://127.0.0.1:9")
    env = _no_credentials(tmp_path)
    no_region = run_agentfn("run", "geo", "hi", "-f", str(spec), env=env)
    assert no_region.returncode == 1, no_region.stderr
    assert "model 'claude' (Bedrock us.anthropic.claude-sonnet-4-5" in no_region.stderr
    assert "no AWS region: set AWS_REGION" in no_region.stderr
    assert "INTERNAL" not in no_region.stderr
    no_keys = run_agentfn(
        "run", "geo", "hi", "-f", str(spec), env={**env, "AWS_DEFAULT_REGION": "eu-west-1"}
    )
    assert no_keys.returncode == 1, no_keys.stderr
    assert "model 'claude'" in no_keys.stderr and "no usable AWS credentials" in no_keys.stderr
    assert "AWS_PROFILE" in no_keys.stderr and "AWS_ACCESS_KEY_ID" in no_keys.stderr
    assert "INTERNAL" not in no_keys.stderr


def test_the_shipped_assistant_names_each_models_problem(tmp_path: Path) -> None:
    """README, Bedrock: with no credentials, `claude`'s and its fallback `gpt`'s errors are
    both named (the fallback's unreadable key once failed the run INTERNAL, hiding claude's)."""
    env = {**_no_credentials(tmp_path), "AWS_DEFAULT_REGION": "us-east-1"}
    done = run_agentfn("run", "assistant", "hi", "-f", str(ROOT / "agents.yaml"), env=env)
    assert done.returncode == 1, done.stderr
    assert "MODEL_ERROR: every model failed: claude: model 'claude' (Bedrock" in done.stderr
    assert "no usable AWS credentials" in done.stderr
    assert "; gpt: secret 'openai-api-key' could not be read" in done.stderr
    assert "AGENTFN_SECRET_OPENAI_API_KEY" in done.stderr and "INTERNAL" not in done.stderr
