"""Record and replay: `agentfn eval --record` against a model served by a real HTTP server
on loopback (an OpenAI-compatible fake), then replay with the server stopped; a changed
system prompt is a cassette mismatch naming the difference; a repeated case replays each
recorded repetition and passes on its pass ratio."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import run_agentfn

KEY = "fake-loopback-key-6f1c2a9b7d3e4f50"


class FakeOpenAI:
    """Chat Completions on 127.0.0.1: two tool calls first (the order, the time), then an
    answer naming the order's status once the tools' results are in the conversation; asked for "yes or no", the next
    of `answers`, in turn (a model that is not always right)."""

    def __init__(self, answers: list[str]):
        self.answers, self.asked = answers, 0
        self.requests: list[dict[str, Any]] = []
        self.keys: list[str] = []
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with fake._lock:
                    fake.requests.append(body)
                    fake.keys.append(self.headers.get("Authorization", ""))
                    payload = json.dumps(fake.answer(body)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body["messages"]
        results = [m for m in messages if m["role"] == "tool"]
        if "yes or no" in messages[0]["content"]:
            message = {"role": "assistant", "content": self.answers[self.asked % len(self.answers)]}
            self.asked += 1
        elif not results:
            message: dict[str, Any] = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_eval_1",
                        "type": "function",
                        "function": {"name": "lookup_order", "arguments": '{"order_id":"ORD-7"}'},
                    },
                    {
                        "id": "call_eval_2",
                        "type": "function",
                        "function": {"name": "get_time_date", "arguments": "{}"},
                    },
                ],
            }
        else:
            found = next(m for m in results if m["tool_call_id"] == "call_eval_1")
            status = json.loads(found["content"])["status"]
            message = {"role": "assistant", "content": f"Order ORD-7 is {status}."}
        return {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": 1790000000,
            "model": "fake-1",
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
                }
            ],
            "usage": {"prompt_tokens": 40, "completion_tokens": 8, "total_tokens": 48},
        }

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI(["yes", "yes", "no"])
    server.thread.start()
    try:
        yield server
    finally:
        server.stop()


def _spec(url: str, prompt: str) -> str:
    return f"""\
version: 1
defaults: {{model: house}}
secrets:
  house-key: {{source: secretsmanager, name: house/key}}
models:
  house:
    provider: openai_compatible
    model_id: fake-1
    base_url: "{url}"
    api_key: ${{secret:house-key}}
    retry: {{max_attempts: 1}}
tools:
  lookup_order:
    type: python
    handler: tools.orders:lookup_order
    description: Look an order up.
    effect: read_only
agents:
  clerk:
    description: Looks orders up.
    system_prompt: {prompt}
    tools: [lookup_order]
  oracle:
    description: Answers yes or no.
    system_prompt: Answer yes or no.
"""


EVALS = """\
version: 1
cases:
  - name: status_from_the_tool
    agent: clerk
    input: Where is ORD-7?
    expect:
      status: succeeded
      tools:
        calls: [{tool: lookup_order, args: {order_id: ORD-7}}, {tool: get_time_date}]
      answer: {contains: "in transit"}
  - name: mostly_yes
    agent: oracle
    input: Is it sunny?
    repeat: 3
    pass_ratio: 0.6
    expect: {answer: {equals: "yes"}}
"""


def _project(tmp_path: Path, url: str, prompt: str = "You look orders up.") -> Path:
    (tmp_path / "agents.yaml").write_text(_spec(url, prompt), encoding="utf-8")
    (tmp_path / "tools").mkdir(exist_ok=True)
    (tmp_path / "tools" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "tools" / "orders.py").write_text(
        "def lookup_order(order_id: str) -> dict:\n"
        "    return {'order_id': order_id, 'status': 'in transit'}\n",
        encoding="utf-8",
    )
    (tmp_path / "evals").mkdir(exist_ok=True)
    (tmp_path / "evals" / "orders.yaml").write_text(EVALS, encoding="utf-8")
    return tmp_path


def _env(tmp_path: Path, key: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTFN_SECRET_")}
    env["AGENTFN_STATE_DIR"] = str(tmp_path / "state")
    if key is not None:
        env["AGENTFN_SECRET_HOUSE_KEY"] = key
    return env


def test_a_recorded_case_replays_with_the_server_stopped_and_a_changed_prompt_mismatches(
    tmp_path: Path, fake: FakeOpenAI
) -> None:
    project = _project(tmp_path, fake.url)
    # Without --record a real model is never called, even with its server up and its key set.
    unrecorded = run_agentfn("eval", "-k", "status", cwd=project, env=_env(tmp_path, KEY))
    assert unrecorded.returncode == 1, unrecorded.stderr + unrecorded.stdout
    assert "cassette: no cassette evals/cassettes/orders/status_from_the_tool.json" in (
        unrecorded.stdout
    )
    assert fake.requests == []

    recorded = run_agentfn("eval", "-k", "status", "--record", cwd=project, env=_env(tmp_path, KEY))
    assert recorded.returncode == 0, recorded.stderr + recorded.stdout
    assert len(fake.requests) == 2 and fake.keys == [f"Bearer {KEY}"] * 2
    assert [m["role"] for m in fake.requests[1]["messages"]][-2:] == ["tool", "tool"]
    cassette = project / "evals" / "cassettes" / "orders" / "status_from_the_tool.json"
    text = cassette.read_text(encoding="utf-8")
    assert KEY not in text  # the key is redacted, in the header and anywhere else
    exchanges = json.loads(text)["repetitions"][0]
    assert [e["request"]["model"] for e in exchanges] == ["house", "house"]
    assert exchanges[0]["request"]["headers"]["authorization"] == "<redacted>"
    system = exchanges[0]["request"]["body"]["json"]["messages"][0]
    assert system["role"] == "system" and system["content"].startswith("You look orders up.")

    fake.stop()  # offline from here on: nothing answers on that port any more
    replayed = run_agentfn("eval", "-k", "status", cwd=project, env=_env(tmp_path, None))
    assert replayed.returncode == 0, replayed.stderr + replayed.stdout
    assert "orders.yaml::status_from_the_tool  PASS" in replayed.stdout

    # Recorded on another day: the replayed run's clock starts then, so its prompt's
    # `Today is …` and get_time_date's date and weekday are the recorded ones.
    document = json.loads(text)
    recorded_at = datetime.fromtimestamp(document["recorded_at"], UTC)
    then_at = datetime.fromtimestamp(1_790_000_000.0, UTC)
    document["recorded_at"] = 1_790_000_000.0
    moved = json.dumps(document)
    for fmt in ("%Y-%m-%d", "%A"):
        moved = moved.replace(recorded_at.strftime(fmt), then_at.strftime(fmt))
    cassette.write_text(moved, encoding="utf-8")
    assert then_at.strftime("%Y-%m-%d") in moved and recorded_at.date() != then_at.date()
    assert '\\"date\\": \\"' + then_at.strftime("%Y-%m-%d") in moved  # get_time_date's
    earlier = run_agentfn("eval", "-k", "status", cwd=project, env=_env(tmp_path, None))
    assert earlier.returncode == 0, earlier.stderr + earlier.stdout

    _project(tmp_path, fake.url, prompt="You look orders up and apologise.")
    report = tmp_path / "report.md"
    changed = run_agentfn(
        "eval", "-k", "status", "--report", str(report), cwd=project, env=_env(tmp_path, None)
    )
    assert changed.returncode == 1, changed.stderr + changed.stdout
    assert "cassette: cassette mismatch: model 'house'" in changed.stdout
    why = report.read_text(encoding="utf-8")
    assert 'body.json.messages[0].content: recorded "You look orders up.\\n\\nToday is' in why
    assert 'now "You look orders up and apologise.' in why
    assert "refresh it with --record" in why


def test_a_repeated_case_replays_each_recorded_repetition_against_its_pass_ratio(
    tmp_path: Path, fake: FakeOpenAI
) -> None:
    project = _project(tmp_path, fake.url)
    recorded = run_agentfn("eval", "-k", "mostly", "--record", cwd=project, env=_env(tmp_path, KEY))
    assert fake.asked == 3  # three real calls: yes, yes, no (in whatever order they ran)
    assert recorded.returncode == 0, recorded.stderr + recorded.stdout
    assert "PASS 2/3 (need 60%)" in recorded.stdout
    fake.stop()

    replayed = run_agentfn("eval", "-k", "mostly", cwd=project, env=_env(tmp_path, None))
    assert replayed.returncode == 0, replayed.stderr + replayed.stdout
    assert "PASS 2/3 (need 60%)" in replayed.stdout

    evals = project / "evals" / "orders.yaml"
    evals.write_text(EVALS.replace("pass_ratio: 0.6", "pass_ratio: 0.9"), encoding="utf-8")
    strict = run_agentfn(
        "eval", "-k", "mostly", "--junit", "j.xml", cwd=project, env=_env(tmp_path, None)
    )
    assert strict.returncode == 1, strict.stderr + strict.stdout
    assert "FAIL 2/3 (need 90%)" in strict.stdout
    assert "expect.answer.equals: the answer differs" in strict.stdout


class FakeBedrock:
    """Bedrock's Converse API on 127.0.0.1 (boto3 reaches it through
    AWS_ENDPOINT_URL_BEDROCK_RUNTIME): answers every question with `answer`."""

    def __init__(self, answer: str):
        self.paths: list[str] = []
        self.signed: list[str] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["Content-Length"]))
                fake.paths.append(self.path)
                fake.signed.append(self.headers.get("Authorization", ""))
                payload = json.dumps(
                    {
                        "output": {"message": {"role": "assistant", "content": [{"text": answer}]}},
                        "stopReason": "end_turn",
                        "usage": {"inputTokens": 12, "outputTokens": 3, "totalTokens": 15},
                        "metrics": {"latencyMs": 5},
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


BEDROCK_SPEC = """\
version: 1
defaults: {model: claude}
models:
  claude:
    provider: bedrock
    model_id: us.anthropic.claude-sonnet-4-20250514-v1:0
    region: us-east-1
    retry: {max_attempts: 1}
agents:
  oracle:
    description: Answers yes or no.
    system_prompt: Answer yes or no.
"""


def test_a_bedrock_case_records_through_boto3_and_replays_offline(tmp_path: Path) -> None:
    (tmp_path / "agents.yaml").write_text(BEDROCK_SPEC, encoding="utf-8")
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "oracle.yaml").write_text(
        "version: 1\ncases:\n  - {name: says_yes, agent: oracle, input: Sunny?, "
        "expect: {answer: {equals: 'yes'}, max_tokens: 15}}\n",
        encoding="utf-8",
    )
    bedrock = FakeBedrock("yes")
    env = _env(tmp_path, None)
    aws = {"AWS_ACCESS_KEY_ID": "AKIAFAKEEVALTEST0001", "AWS_SECRET_ACCESS_KEY": "fake-secret"}
    try:
        recorded = run_agentfn(
            "eval",
            "--record",
            cwd=tmp_path,
            env={**env, **aws, "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": bedrock.url},
        )
    finally:
        bedrock.stop()
    assert recorded.returncode == 0, recorded.stderr + recorded.stdout
    assert bedrock.paths == ["/model/us.anthropic.claude-sonnet-4-20250514-v1%3A0/converse"]
    assert bedrock.signed[0].startswith("AWS4-HMAC-SHA256 Credential=AKIAFAKEEVALTEST0001/")
    cassette = tmp_path / "evals" / "cassettes" / "oracle" / "says_yes.json"
    exchange = json.loads(cassette.read_text(encoding="utf-8"))["repetitions"][0][0]
    assert exchange["request"]["headers"]["Authorization"] == "<redacted>"
    assert exchange["response"]["body"]["json"]["output"]["message"]["content"] == [{"text": "yes"}]

    # Offline: no endpoint, no credentials of the user's; the answer comes from the cassette.
    replayed = run_agentfn("eval", cwd=tmp_path, env=env)
    assert replayed.returncode == 0, replayed.stderr + replayed.stdout
    assert "oracle.yaml::says_yes  PASS" in replayed.stdout
