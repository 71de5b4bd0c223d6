"""`agentfn dev` with teams: N demo `support` runs started at once (issue 26, target 4).

    .venv/bin/python bench/dev_teams.py [--runs 5 20 50] [--profile FILE]

A real `agentfn dev` subprocess on free loopback ports, driven over HTTP like
bench/speed_dev.py, but with the demo team `support`: it looks an order up, asks the
`researcher` (a child run with its own state machine execution), hands the conversation to
`billing`, whose refund waits for a person. A run counts when it reaches
`awaiting_approval`; the figure is the time from its POST to that status (p50 / p95 / max),
for each batch size, after two warm-up runs. Each client reads its run (GET /runs/{id})
every `--poll` seconds (0.1 by default, as speed_dev.py's clients do): those reads are load
on the same process too, and the longer a run waits, the more of them it makes.
Nothing is approved: each batch's runs stay waiting, as a person's would.

`--profile FILE` records the server with py-spy (`pip install py-spy`; needs ptrace) during
the largest batch and writes a flame graph there (SVG; any other suffix: py-spy's collapsed
stacks, one line per stack with its samples): where the stack serialises.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from speed_dev import running_dev  # noqa: E402

WAITING = "awaiting_approval"
ENDED = {"succeeded", "failed", "cancelled", WAITING}


POLL_SECONDS = 0.1


def team_run(
    api: str, n: int, poll: float = POLL_SECONDS, client: httpx.Client | None = None
) -> tuple[float, str]:
    """Start one `support` run and poll it until it waits for a person (or ends)."""
    http = client or httpx.Client()
    started = time.perf_counter()
    try:
        body: dict[str, Any] = http.post(
            f"{api}/agents/support/runs",
            json={"input": f"My grinder arrived damaged (ticket {n})", "wait_seconds": 0},
            timeout=120,
        ).json()
        while body.get("status") not in ENDED:
            time.sleep(poll)
            body = http.get(f"{api}/runs/{body['run_id']}", timeout=60).json()
    except (httpx.HTTPError, KeyError) as exc:
        return time.perf_counter() - started, type(exc).__name__
    finally:
        if client is None:
            http.close()
    return time.perf_counter() - started, str(body["status"])


def batch(api: str, count: int, poll: float) -> tuple[list[float], int]:
    # One client for the batch: httpx.get() would build a client, and its TLS context, for
    # every poll — CPU this 2-core machine's server would lose to the bench (~0.2 s a run).
    limits = httpx.Limits(max_connections=count + 10)
    with httpx.Client(limits=limits) as http, ThreadPoolExecutor(count) as pool:
        results = list(pool.map(lambda n: team_run(api, n, poll, http), range(count)))
    took = sorted(t for t, _ in results)
    waiting = sum(status == WAITING for _, status in results)
    others = sorted({s for _, s in results if s != WAITING})
    if others:
        print(f"    not waiting: {others}")
    return took, waiting


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc), in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def own_cpu_seconds() -> float:
    """This process's (the clients') user + system CPU time so far, in seconds."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def p95(took: list[float]) -> float:
    return took[max(0, int(0.95 * len(took)) - 1)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, nargs="+", default=[1, 5, 20, 50])
    parser.add_argument("--profile", type=Path, help="py-spy flame graph of the largest batch")
    parser.add_argument("--poll", type=float, default=POLL_SECONDS, help="seconds between GETs")
    args = parser.parse_args()
    load = os.getloadavg()
    print(f"agentfn dev, demo team `support` to {WAITING}, each client polling its run every "
          f"{args.poll} s; load {load[0]:.2f} {load[1]:.2f}")  # fmt: skip
    spy = None
    with running_dev(90) as (process, api, _):
        try:
            team_run(api, 0)  # warm: containers, caches
            team_run(api, 1)
            print(f"  {'at once':>8} {'waiting':>8} {'p50 s':>7} {'p95 s':>7} {'max s':>7}"
                  f" {'server CPU s/run':>17} {'bench CPU s/run':>16}")  # fmt: skip
            for count in args.runs:
                if args.profile and count == max(args.runs):
                    py_spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
                    form = "flamegraph" if args.profile.suffix == ".svg" else "raw"
                    record = ["record", "-o", str(args.profile), "-p", str(process.pid), "--gil"]
                    spy = subprocess.Popen(
                        [py_spy, *record, "--nonblocking", "--rate", "200", "--format", form],
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                    )
                    time.sleep(1)
                cpu, own = cpu_seconds(process.pid), own_cpu_seconds()
                took, waiting = batch(api, count, args.poll)
                cpu = (cpu_seconds(process.pid) - cpu) / count
                own = (own_cpu_seconds() - own) / count
                median = statistics.median(took)
                print(
                    f"  {count:>8} {waiting:>5}/{count:<3}"
                    f"{median:>6.2f} {p95(took):>7.2f} {took[-1]:>7.2f} {cpu:>17.2f} {own:>16.2f}"
                )
        finally:
            if spy is not None:
                spy.send_signal(2)
                spy.wait(timeout=60)
    print(f"  load after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
