"""Live runs, measured (`.venv/bin/python bench/live.py`, about 30 s).

1. Time to first chunk: a fake OpenAI-compatible provider streams an answer over real HTTP
   on loopback (20 chunks, 20 ms apart) and notes when it sent its first byte
   (CLOCK_MONOTONIC, shared by every process on Linux). Measured from that moment to when
   the first text appears
   - on the terminal: `agentfn run` in a pseudo-terminal, its first answer bytes read there;
   - over SSE: `agentfn dev` serving the same spec, a client streaming the run it starts
     (`POST … Accept: text/event-stream`), its first `chunk` event read.
   Target: within 20 ms of the provider's first byte.
2. 100 watchers of one run: `agentfn dev` with the demo; a `billing` run waits for approval,
   100 SSE clients attach to it, the run is approved; each must see every event once, in
   order, and the answer's chunks.
"""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
from speed_dev import wait_until_answering

ROOT = Path(__file__).resolve().parent.parent
AGENTFN = [sys.executable, "-m", "infra.cli"]
WORDS = [f"word{i} " for i in range(20)]
FIRST_BYTES: list[float] = []


class FakeProvider(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        assert body.get("stream") is True, body
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for index, word in enumerate(WORDS):
            chunk = {"choices": [{"index": 0, "delta": {"content": word}, "finish_reason": None}]}
            self._chunk(f"data: {json.dumps(chunk)}\n\n".encode(), first=index == 0)
            time.sleep(0.02)
        done = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 12, "completion_tokens": 20}}  # fmt: skip
        self._chunk(f"data: {json.dumps(done)}\n\ndata: [DONE]\n\n".encode())
        self.wfile.write(b"0\r\n\r\n")

    def _chunk(self, data: bytes, first: bool = False) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()
        if first:
            FIRST_BYTES.append(time.monotonic())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def provider() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeProvider)
    server.handle_error = lambda request, address: None  # type: ignore[method-assign]  # a client hanging up
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()


def spec_file(folder: Path, base_url: str) -> Path:
    path = folder / "agents.yaml"
    path.write_text(
        "version: 1\n"
        "models:\n"
        f'  fake: {{provider: openai_compatible, model_id: fake-1, base_url: "{base_url}"}}\n'
        "agents:\n"
        "  writer: {description: Writes., model: fake, system_prompt: Write.}\n"
    )
    return path


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "AGENTFN_"))}
    return {**env, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1", "NO_PROXY": "127.0.0.1"}


def terminal_first_chunk(spec: Path) -> float:
    """ms from the provider's first byte to the first answer bytes on a terminal."""
    FIRST_BYTES.clear()
    master, slave = pty.openpty()
    process = subprocess.Popen(
        [*AGENTFN, "run", "writer", "go", "-f", str(spec)],
        stdin=slave, stdout=slave, stderr=slave, cwd=ROOT, env=_env(),
    )  # fmt: skip
    os.close(slave)
    seen, output = None, b""
    try:
        while process.poll() is None or select.select([master], [], [], 0)[0]:
            if select.select([master], [], [], 0.5)[0]:
                try:
                    piece = os.read(master, 4096)
                except OSError:
                    break
                output += piece
                if seen is None and b"word0" in output:
                    seen = time.monotonic()
    finally:
        os.close(master)
        process.wait(timeout=30)
    assert seen is not None and FIRST_BYTES, output[-500:]
    return (seen - FIRST_BYTES[0]) * 1000


@contextmanager
def dev_server(spec: Path | None) -> Iterator[str]:
    port, aws = _free_port(), _free_port()
    command = [*AGENTFN, "dev", "--offline", "--port", str(port), "--aws-port", str(aws)]
    if spec is not None:
        command += ["-f", str(spec)]
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    process = subprocess.Popen(command, cwd=ROOT, env=_env(), **quiet)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_answering(url, 30)
        yield url
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=20)


def sse_first_chunk(url: str) -> float:
    FIRST_BYTES.clear()
    with httpx.stream(
        "POST", f"{url}/agents/writer/runs", json={"input": "go"},
        headers={"Accept": "text/event-stream"}, timeout=30,
    ) as response:  # fmt: skip
        seen = None
        for line in response.iter_lines():
            if seen is None and line.startswith("event: chunk"):
                seen = time.monotonic()
    assert seen is not None and FIRST_BYTES
    return (seen - FIRST_BYTES[0]) * 1000


def watchers(url: str, count: int = 100) -> dict[str, Any]:
    started = httpx.post(
        f"{url}/agents/billing/runs",
        json={"input": "Refund ORD-1001, it arrived broken", "wait_seconds": 0}, timeout=20,
    ).json()  # fmt: skip
    run_id = started["run_id"]
    while httpx.get(f"{url}/runs/{run_id}", timeout=10).json()["status"] != "awaiting_approval":
        time.sleep(0.05)
    seen: dict[int, tuple[list[int], int]] = {}

    def watch(n: int) -> None:
        numbers, chunks, event = [], 0, ""
        with httpx.stream("GET", f"{url}/runs/{run_id}/stream", timeout=60) as response:
            for line in response.iter_lines():
                if line.startswith("event:"):
                    event = line[6:].strip()
                elif line.startswith("data:"):
                    if event == "chunk":
                        chunks += 1
                    else:
                        numbers.append(json.loads(line[5:])["seq"])
        seen[n] = (numbers, chunks)

    threads = [threading.Thread(target=watch, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    time.sleep(2.0)  # every watcher attached and waiting on the live tail
    began = time.monotonic()
    httpx.post(f"{url}/runs/{run_id}/approval", json={"approved": True}, timeout=30)
    for thread in threads:
        thread.join(timeout=60)
    took = time.monotonic() - began
    full = max((numbers for numbers, _ in seen.values()), key=len)
    everything = list(range(len(full)))
    complete = sum(1 for numbers, chunks in seen.values() if numbers == everything and chunks)
    return {"watchers": count, "complete": complete, "events": len(full), "seconds": took}


def main() -> None:
    with provider() as base_url, tempfile.TemporaryDirectory() as folder:
        spec = spec_file(Path(folder), base_url)
        terminal = [terminal_first_chunk(spec) for _ in range(5)]
        with dev_server(spec) as url:
            sse = [sse_first_chunk(url) for _ in range(10)]
    print("time to first chunk after the provider's first byte (ms): median, max")
    print(
        f"  terminal (agentfn run, a pty): {statistics.median(terminal):.1f}, {max(terminal):.1f}"
    )
    print(
        f"  SSE (agentfn dev, POST, Accept: text/event-stream): {statistics.median(sse):.1f}, ",
        end="",
    )
    print(f"{max(sse):.1f}")
    with dev_server(None) as url:
        result = watchers(url)
    print(
        f"{result['watchers']} SSE watchers of one run: {result['complete']} saw all "
        f"{result['events']} events in order, and the answer's chunks; the run's end reached "
        f"them all {result['seconds']:.2f} s after the approval"
    )


if __name__ == "__main__":
    main()
