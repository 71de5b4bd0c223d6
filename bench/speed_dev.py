"""`agentfn dev` under load and over time (part 4 of bench/speed.py).

A real `agentfn dev` subprocess on free loopback ports, driven over HTTP with the demo
agent `orders` (a model turn, a Python tool, a model turn): 200 connections opened at once
(each must be answered, none reset), 50 runs started at once (each must succeed; p95 of
start-to-result), then 1,000 runs (8 at a time), and the same single run before and after
them, with the server's resident memory.
"""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from table import row

ROOT = Path(__file__).resolve().parent.parent
TERMINAL = {"succeeded", "failed", "cancelled"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _memory_mb(pid: int) -> tuple[float, float]:
    """(resident now, peak resident) of a process, in MB (Linux /proc)."""
    fields = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
    )
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def wait_until_answering(api: str, seconds: float) -> None:
    """Until `agentfn dev` at `api` lists its agents (it is starting), or `seconds` pass."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{api}/agents", timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.1)


def demo_run(api: str, n: int = 0) -> tuple[float, str]:
    """Start one run (waiting inline, as the API does) and follow it to its end."""
    started = time.perf_counter()
    try:
        body: dict[str, Any] = httpx.post(
            f"{api}/agents/orders/runs",
            json={"input": f"Where is my grinder? (customer {n})", "wait_seconds": 10},
            timeout=120,
        ).json()
        while body.get("status") not in TERMINAL:
            time.sleep(0.1)
            body = httpx.get(f"{api}/runs/{body['run_id']}", timeout=60).json()
    except (httpx.HTTPError, KeyError) as exc:  # a reset connection, an error answer
        return time.perf_counter() - started, type(exc).__name__
    return time.perf_counter() - started, str(body["status"])


def connections(port: int, count: int) -> tuple[int, list[str], float]:
    """Open `count` connections at once, each asking GET /agents: (answered, errors, the
    slowest answer in seconds). A full listen backlog drops or resets connections: Linux
    drops the SYN (unless tcp_abort_on_overflow), and the client tries again 1 s, 3 s… later."""
    answered, errors, slowest = 0, [], 0.0
    lock = threading.Lock()
    ready = threading.Barrier(count)

    def one() -> None:
        nonlocal answered, slowest
        try:
            ready.wait(timeout=30)
            started = time.perf_counter()
            with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
                s.sendall(b"GET /agents HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                status = s.makefile("rb").readline()
            with lock:
                slowest = max(slowest, time.perf_counter() - started)
                if status.startswith(b"HTTP/1.") and b" 200 " in status:
                    answered += 1
                else:
                    errors.append(status.decode(errors="replace").strip() or "no answer")
        except Exception as exc:
            with lock:
                errors.append(type(exc).__name__)

    threads = [threading.Thread(target=one) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answered, errors, slowest


@contextmanager
def running_dev(seconds: float) -> Iterator[tuple[subprocess.Popen[bytes], str, int]]:
    """`agentfn dev --offline` on free loopback ports (the process, its API's URL and port)
    until the block ends, then stopped. Offline: every AWS call in memory, so a benchmark
    neither writes the project's `.agentfn/local/` nor meets a dev that holds it."""
    api_port, aws_port = _free_port(), _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "AGENTFN_"))}
    env["PYTHONPATH"] = str(ROOT)
    command = [sys.executable, "-m", "infra.cli", "dev", "--offline", "--port", str(api_port)]
    process = subprocess.Popen(
        [*command, "--aws-port", str(aws_port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    api = f"http://127.0.0.1:{api_port}"
    try:
        wait_until_answering(api, seconds)
        yield process, api, api_port
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def dev_server(runs: int) -> None:
    print(f"\n4. `agentfn dev`: the demo agent `orders` over HTTP, {runs} runs")
    with running_dev(60) as (process, api, api_port):
        for n in range(3):
            demo_run(api, n)  # warm: the containers, the engine's caches
        first = statistics.median(demo_run(api)[0] for _ in range(5))
        answered, errors, slowest = connections(api_port, 200)
        row("200 connections at once: answered", f"{answered}/200", "all, no reset",
            answered == 200)  # fmt: skip
        row("200 connections at once: slowest answer", f"{slowest:.2f} s")
        if errors:
            print(f"    errors: {sorted(set(errors))[:5]}")
        with ThreadPoolExecutor(50) as pool:
            results = list(pool.map(lambda n: demo_run(api, n), range(50)))
        took = sorted(t for t, _ in results)
        ok = sum(status == "succeeded" for _, status in results)
        p95 = took[int(0.95 * len(took)) - 1]
        row("50 runs at once: succeeded", f"{ok}/50", "all", ok == 50)
        row("50 runs at once: p50 / p95 / max", f"{took[24]:.1f} / {p95:.1f} / {took[-1]:.1f} s",
            "p95 < 10 s", p95 < 10)  # fmt: skip
        started = time.perf_counter()
        with ThreadPoolExecutor(8) as pool:
            statuses = [s for _, s in pool.map(lambda n: demo_run(api, n), range(runs))]
        rate = runs / (time.perf_counter() - started)
        row(f"{runs} more runs, 8 at a time", f"{rate:.0f} runs/s")
        bad = len(statuses) - statuses.count("succeeded")
        if bad:
            print(f"    {bad} runs did not succeed")
        after = statistics.median(demo_run(api)[0] for _ in range(5))
        row("one run after 1 / after them (median of 5)", f"{first:.2f} / {after:.2f} s",
            "≈ same", after <= 1.5 * first)  # fmt: skip
        now, peak = _memory_mb(process.pid)
        row("dev server memory: now / peak", f"{now:.0f} / {peak:.0f} MB")
