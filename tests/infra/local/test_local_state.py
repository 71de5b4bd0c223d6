"""The local state `agentfn run` keeps beside the spec outlives the process: a session goes
on in the next process, a run left waiting is decided and finished by another command
(without calling its earlier tools again), concurrent processes share it without losing
a write, a torn last write is cut off, and `agentfn local reset` clears it."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import run_agentfn

COUNTING_TOOLS = """\
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def note(text: str) -> str:
    with open(HERE / "note.calls", "a") as calls:
        calls.write(text + "\\n")
    return "noted"


def refund(amount: float) -> str:
    with open(HERE / "refund.calls", "a") as calls:
        calls.write(f"{amount}\\n")
    return "refunded"
"""

APPROVAL_SPEC = """\
version: 1
models:
  m:
    provider: scripted
    script:
      - {tool_calls: [{name: note, arguments: {text: first}}]}
      - {tool_calls: [{name: refund, arguments: {amount: 12.5}}]}
      - {text: "Noted and refunded."}
tools:
  note: {type: python, handler: "tools.counting_ops:note", description: Take a note.}
  refund: {type: python, handler: "tools.counting_ops:refund", description: Refund.}
agents:
  clerk:
    description: Notes, then refunds once a person allows it.
    model: m
    tools: [note, refund]
    approval: [{tools: [refund]}]
"""

CHAT_SPEC = """\
version: 1
models:
  local: {provider: ollama, model_id: tiny, base_url: "%(url)s/v1", stream: false}
agents:
  chat:
    description: Chats, remembering the session.
    model: local
"""


def _project(tmp_path: Path, spec: str) -> tuple[Path, dict[str, str]]:
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "__init__.py").write_text("")
    (tmp_path / "tools" / "counting_ops.py").write_text(COUNTING_TOOLS)
    path = tmp_path / "agents.yaml"
    path.write_text(spec)
    env = {k: v for k, v in os.environ.items() if k not in {"AGENTFN_STATE_DIR", "AGENTFN_URL"}}
    return path, env


def _calls(tmp_path: Path, tool: str) -> list[str]:
    path = tmp_path / f"{tool}.calls"
    return path.read_text().splitlines() if path.exists() else []


def test_a_waiting_run_is_approved_by_another_process_without_calling_its_tools_again(
    tmp_path: Path,
) -> None:
    spec, env = _project(tmp_path, APPROVAL_SPEC)
    waiting = run_agentfn("run", "clerk", "note and refund", "-f", str(spec), env=env)
    assert waiting.returncode == 3, waiting.stderr
    assert _calls(tmp_path, "note") == ["first"] and _calls(tmp_path, "refund") == []
    # Each pending call is shown whole: tool, arguments, the rule; and how to decide later.
    assert "• refund" in waiting.stderr and '"amount": 12.5' in waiting.stderr
    assert "rule: clerk.approval[0] (tools ['refund']" in waiting.stderr
    run_id = waiting.stderr.split("agentfn approve ")[1].split()[0]
    assert f"agentfn approve {run_id} [--tool-call-id ID] [--edit JSON]" in waiting.stderr

    status = run_agentfn("status", run_id, "-f", str(spec), env=env)
    assert status.returncode == 0, status.stderr
    assert "awaiting_approval" in status.stdout and "refund" in status.stdout

    approved = run_agentfn("approve", run_id, "-f", str(spec), env=env)
    assert approved.returncode == 0, approved.stderr
    assert "Noted and refunded." in approved.stdout
    assert _calls(tmp_path, "note") == ["first"]  # not called again
    assert _calls(tmp_path, "refund") == ["12.5"]

    done = run_agentfn("status", run_id, "-f", str(spec), "--json", env=env)
    assert done.returncode == 0, done.stderr
    contract = json.loads(done.stdout)
    assert contract["status"] == "succeeded" and contract["result"] == "Noted and refunded."
    assert [c["tool_name"] for c in contract["tool_calls"]] == ["note", "refund"]
    events = run_agentfn("events", run_id, "-f", str(spec), env=env)
    assert "approval_decided" in events.stdout and "run_completed" in events.stdout


def test_approve_with_a_tool_name_decides_only_that_tool(tmp_path: Path) -> None:
    spec, env = _project(tmp_path, APPROVAL_SPEC)
    other = run_agentfn("run", "clerk", "go", "-f", str(spec), "--approve", "note", env=env)
    assert other.returncode == 3, other.stderr  # refund was not named: it still waits
    assert _calls(tmp_path, "refund") == []
    named = run_agentfn("run", "clerk", "go", "-f", str(spec), "--approve", "refund", env=env)
    assert named.returncode == 0, named.stderr
    assert 'approved by flag: refund {"amount": 12.5}' in named.stderr
    assert _calls(tmp_path, "refund") == ["12.5"]
    bare = run_agentfn("run", "clerk", "go", "-f", str(spec), "--approve", env=env)
    assert bare.returncode == 0, bare.stderr
    assert 'approved by flag: refund {"amount": 12.5}' in bare.stderr  # says what it approved


class ChatServer(ThreadingHTTPServer):
    """An OpenAI-compatible server on loopback that remembers every request."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _ChatHandler)
        self.bodies: list[dict[str, Any]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _ChatHandler(BaseHTTPRequestHandler):
    server: ChatServer

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        self.server.bodies.append(body)
        said = body["messages"][-1]["content"]
        answer = {
            "id": "c1",
            "object": "chat.completion",
            "model": "tiny",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": f"heard: {said}"},
                }
            ],
            "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
        }
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def chat() -> Iterator[ChatServer]:
    server = ChatServer()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def _contents(body: dict[str, Any]) -> list[str]:
    return [str(m.get("content")) for m in body["messages"] if m["role"] != "system"]


def test_a_session_continues_in_a_new_process(tmp_path: Path, chat: ChatServer) -> None:
    spec, env = _project(tmp_path, CHAT_SPEC % {"url": chat.url})
    first = run_agentfn("run", "chat", "my name is Ada", "--session", "S", "-f", str(spec), env=env)
    assert first.returncode == 0, first.stderr
    second = run_agentfn(
        "run", "chat", "what is my name?", "--session", "S", "-f", str(spec), env=env
    )
    assert second.returncode == 0, second.stderr
    assert _contents(chat.bodies[0]) == ["my name is Ada"]
    assert _contents(chat.bodies[1]) == [
        "my name is Ada",
        "heard: my name is Ada",
        "what is my name?",
    ]
    other = run_agentfn("run", "chat", "hello", "--session", "T", "-f", str(spec), env=env)
    assert other.returncode == 0, other.stderr
    assert _contents(chat.bodies[2]) == ["hello"]  # another session: its own history

    cleared = run_agentfn("local", "reset", "-f", str(spec), env=env)
    assert cleared.returncode == 0 and "cleared" in cleared.stderr
    again = run_agentfn("run", "chat", "still there?", "--session", "S", "-f", str(spec), env=env)
    assert again.returncode == 0, again.stderr
    assert _contents(chat.bodies[3]) == ["still there?"]


def test_concurrent_processes_share_the_state_without_losing_a_run(
    tmp_path: Path, chat: ChatServer
) -> None:
    spec, env = _project(tmp_path, CHAT_SPEC % {"url": chat.url})

    def one(n: int) -> str:
        done = run_agentfn(
            "run", "chat", f"message {n}", "--session", f"S{n}", "-f", str(spec), "--json", env=env
        )
        assert done.returncode == 0, done.stderr
        return str(json.loads(done.stdout)["run_id"])

    with ThreadPoolExecutor(4) as pool:
        run_ids = list(pool.map(one, range(4)))
    for run_id in run_ids:  # every run is there, whole, seen from another process
        status = run_agentfn("status", run_id, "-f", str(spec), "--json", env=env)
        assert json.loads(status.stdout)["status"] == "succeeded", status.stderr
    for n in range(4):  # and each session goes on from its own run
        last = run_agentfn("run", "chat", "again", "--session", f"S{n}", "-f", str(spec), env=env)
        assert last.returncode == 0, last.stderr
        assert _contents(chat.bodies[-1]) == [f"message {n}", f"heard: message {n}", "again"]


def test_a_torn_last_write_is_cut_off_and_the_rest_kept(tmp_path: Path, chat: ChatServer) -> None:
    spec, env = _project(tmp_path, CHAT_SPEC % {"url": chat.url})
    first = run_agentfn("run", "chat", "kept", "--session", "S", "-f", str(spec), env=env)
    assert first.returncode == 0, first.stderr
    log = tmp_path / ".agentfn" / "local" / "aws.log"
    with open(log, "a") as torn:  # a process died in the middle of an append
        torn.write('{"method":"POST","path":"/","qu')
    second = run_agentfn("run", "chat", "after", "--session", "S", "-f", str(spec), env=env)
    assert second.returncode == 0, second.stderr
    assert _contents(chat.bodies[1])[0] == "kept"
    assert all(json.loads(line) for line in log.read_text().splitlines())


def test_on_a_terminal_each_pending_call_is_shown_then_asked(tmp_path: Path) -> None:
    import pty
    import select
    import subprocess
    import sys

    from tests.helpers import ROOT

    spec, env = _project(tmp_path, APPROVAL_SPEC)
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "infra.cli", "run", "clerk", "go", "-f", str(spec)],
        cwd=ROOT,
        env={**env, "PYTHONPATH": str(ROOT)},
        stdin=follower,
        stdout=follower,
        stderr=follower,
    )
    os.close(follower)
    shown, answered = b"", False
    while True:
        ready, _, _ = select.select([leader], [], [], 60)
        if not ready:
            break
        try:
            piece = os.read(leader, 4096)
        except OSError:
            break
        if not piece:
            break
        shown += piece
        if not answered and b"Approve refund? [y/N]" in shown:
            os.write(leader, b"y\n")
            answered = True
    assert process.wait(timeout=60) == 0, shown.decode()
    os.close(leader)
    text = shown.decode().replace("\r\n", "\n")
    before = text[: text.index("Approve refund?")]
    assert "• refund" in before and '"amount": 12.5' in before
    assert "rule: clerk.approval[0]" in before
    assert "Noted and refunded." in text
    assert _calls(tmp_path, "refund") == ["12.5"]


COMPACT = """\
import sys
from pathlib import Path
import infra.local.local_snapshot as snapshot
from infra.local.local_state import LocalAwsServer
snapshot.COMPACT_AFTER = 0
server = LocalAwsServer(Path(sys.argv[1]))
server.start()
server.stop()
"""


def test_a_compacted_log_keeps_every_run_and_session(tmp_path: Path, chat: ChatServer) -> None:
    """Past its size limit the log is rewritten as a snapshot (tables, items in batches,
    objects) when a process opens it: the runs, their results and the sessions go on."""
    import subprocess
    import sys

    from tests.helpers import ROOT

    spec, env = _project(tmp_path, CHAT_SPEC % {"url": chat.url})
    first = run_agentfn("run", "chat", "one", "--session", "S", "-f", str(spec), "--json", env=env)
    assert first.returncode == 0, first.stderr
    run_id = json.loads(first.stdout)["run_id"]
    log = tmp_path / ".agentfn" / "local" / "aws.log"
    lines = len(log.read_text().splitlines())
    subprocess.run(
        [sys.executable, "-c", COMPACT, str(log.parent)],
        cwd=ROOT,
        env={**env, "PYTHONPATH": str(ROOT)},
        check=True,
        timeout=120,
    )
    compacted = log.read_text().splitlines()
    assert 0 < len(compacted) < lines
    assert any("DynamoDB_20120810.BatchWriteItem" in line for line in compacted)
    status = run_agentfn("status", run_id, "-f", str(spec), "--json", env=env)
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["result"] == "heard: one"
    second = run_agentfn("run", "chat", "two", "--session", "S", "-f", str(spec), env=env)
    assert second.returncode == 0, second.stderr
    assert _contents(chat.bodies[-1]) == ["one", "heard: one", "two"]


def test_a_process_sees_the_log_compacted_under_it(tmp_path: Path) -> None:
    """A process that had the state open when another compacted it starts again from the
    new log: what it held before is still there, and its next write lands in the new log."""
    import subprocess
    import sys

    from infra.local.aws import local_aws
    from infra.local.local_snapshot import empty_backends
    from tests.helpers import ROOT

    directory = tmp_path / "state"
    with local_aws(directory) as clients:
        table = clients.table
        clients.dynamodb.put_item(TableName=table, Item={"pk": {"S": "a"}, "sk": {"S": "1"}})
        blob = bytes(range(256)) * 4  # not text: kept as base64
        clients.s3.put_object(
            Bucket=clients.bucket, Key="runs/x/out", Body=blob, ContentType="application/x-raw"
        )
        subprocess.run(
            [sys.executable, "-c", COMPACT, str(directory)],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            check=True,
            timeout=120,
        )
        got = clients.dynamodb.get_item(TableName=table, Key={"pk": {"S": "a"}, "sk": {"S": "1"}})
        assert got["Item"]["pk"] == {"S": "a"}
        clients.dynamodb.put_item(TableName=table, Item={"pk": {"S": "b"}, "sk": {"S": "2"}})
    empty_backends()  # as a new process starts: from the log alone
    with local_aws(directory) as clients:
        keys = clients.dynamodb.scan(TableName=clients.table)["Items"]
        assert sorted(k["pk"]["S"] for k in keys) == ["a", "b"]
        kept = clients.s3.get_object(Bucket=clients.bucket, Key="runs/x/out")
        assert kept["Body"].read() == blob and kept["ContentType"] == "application/x-raw"


HANGING_TOOLS = (
    COUNTING_TOOLS
    + """

def hang() -> str:
    import time

    (HERE / "hang.started").write_text("")
    time.sleep(120)
    return "never"
"""
)

KILLED_SPEC = """\
version: 1
models:
  m:
    provider: scripted
    script:
      - {tool_calls: [{name: note, arguments: {text: kept}}]}
      - {tool_calls: [{name: hang, arguments: {}}]}
      - {text: "unreached"}
tools:
  note: {type: python, handler: "tools.counting_ops:note", description: Take a note.}
  hang: {type: python, handler: "tools.counting_ops:hang", description: Hangs., timeout: 5m}
agents:
  slow:
    description: Notes, then hangs.
    model: m
    tools: [note, hang]
"""


def test_a_killed_run_keeps_every_turn_it_committed(tmp_path: Path) -> None:
    """kill -9 in the middle of a run: what the engine committed before is in the state."""
    import re
    import signal
    import subprocess
    import sys
    import time

    from tests.helpers import ROOT

    spec, env = _project(tmp_path, KILLED_SPEC)
    (tmp_path / "tools" / "counting_ops.py").write_text(HANGING_TOOLS)
    process = subprocess.Popen(
        [sys.executable, "-m", "infra.cli", "run", "slow", "go", "-f", str(spec)],
        cwd=ROOT,
        env={**env, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 90
    while not (tmp_path / "hang.started").exists():
        assert time.monotonic() < deadline and process.poll() is None, "the run never hung"
        time.sleep(0.1)
    process.send_signal(signal.SIGKILL)
    process.wait(30)
    log = (tmp_path / ".agentfn" / "local" / "aws.log").read_text()
    run_id = re.search(r"run_started\W+at\W+[0-9.]+\W+run_id\W+([0-9a-f]{32})", log)
    assert run_id is not None
    events = run_agentfn("events", run_id.group(1), "-f", str(spec), env=env)
    assert events.returncode == 0, events.stderr
    assert "✓ note" in events.stdout  # the first turn's tool result, committed before the kill
    assert _calls(tmp_path, "note") == ["kept"]


def test_a_question_is_answered_and_a_waiting_run_cancelled_from_another_process(
    tmp_path: Path,
) -> None:
    from tests.helpers import DEMO_SPEC

    env = {**os.environ, "AGENTFN_STATE_DIR": str(tmp_path / "state")}
    env.pop("AGENTFN_URL", None)
    asked = run_agentfn("run", "triage", "where is my order?", env=env)
    assert asked.returncode == 3, asked.stderr
    run_id = asked.stderr.split("agentfn reply ")[1].split()[0]
    answered = run_agentfn("reply", run_id, "ORD-1002", "-f", str(DEMO_SPEC), env=env)
    assert answered.returncode == 0, answered.stderr
    assert "milk jug" in answered.stdout

    (tmp_path / "p").mkdir()
    spec, own = _project(tmp_path / "p", APPROVAL_SPEC)
    waiting = run_agentfn("run", "clerk", "go", "-f", str(spec), env=own)
    assert waiting.returncode == 3, waiting.stderr
    waiting_id = waiting.stderr.split("agentfn approve ")[1].split()[0]
    cancelled = run_agentfn("cancel", waiting_id, "-f", str(spec), "--json", env=own)
    assert cancelled.returncode == 0, cancelled.stderr
    assert json.loads(cancelled.stdout)["status"] == "cancelled"
    again = run_agentfn("approve", waiting_id, "-f", str(spec), env=own)
    assert again.returncode == 1 and "cancelled" in again.stderr
    assert _calls(tmp_path / "p", "refund") == []
