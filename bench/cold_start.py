"""A cold first invocation of an agent function, without and with SnapStart (issue 26).

Run:  .venv/bin/python bench/cold_start.py [--tries N] [--keep DIR] [--imports]

Each figure is given in wall time and in CPU time up to the answer (`time.process_time()`);
on a shared machine the CPU time is the steadier, and the verdicts read it.

Without SnapStart (bench/speed.py's measurement): spawn to done of a first invocation of the
function as `sam build` ships it (bytecode, package read-only, one scripted step against
moto's server on loopback), next to the floor: the same AWS requests made by a bare boto3
script. The difference is agentfn's own share.

With SnapStart, simulated: a process does the function's SnapStart init
(`AWS_LAMBDA_INITIALIZATION_TYPE=snap-start`: handlers.snapshot builds the service), a
stand-in `snapshot_restore_py` runs the before-snapshot hooks, and the process forks: the
child is a copy restored from that snapshot. Timed: from the after-restore hooks to the
step's answer. Its floor is the same for a bare boto3 script restored the same way (boto3
imported and the clients' service data loaded before the fork, the clients made and the
requests sent after it). Not simulated: Lambda's own restore of the microVM, which the
function does not control (AWS reports it as `Restore Duration`).

`--imports`: one more first invocation, which lists the agentfn modules that import pydantic
during the step, and the spec modules it loads (the compiled spec is read into
runtime.spec.plain's structs: none of the validating models should be there).
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")

import speed  # noqa: E402

from infra.sam import layer_build  # noqa: E402

FAKE_RUNTIME = """
before, after = [], []
def register_before_snapshot(hook, *a, **k): before.append(hook)
def register_after_restore(hook, *a, **k): after.append(hook)
"""
#: The SnapStart init, the snapshot's hooks, then one restored copy per run id (forked).
RESTORED = """
import json, os, sys, time
import handlers.step as step
import snapshot_restore_py as lambda_runtime
for hook in lambda_runtime.before:
    hook()
for run_id in sys.argv[1:]:
    read, write = os.pipe()
    if os.fork() == 0:
        started, cpu = time.perf_counter(), time.process_time()
        for hook in lambda_runtime.after:
            hook()
        answer = step.handler({"action": "advance", "run_id": run_id}, None)
        assert answer["status"] == "succeeded", answer
        took = f"{time.perf_counter() - started} {time.process_time() - cpu}"
        os.write(write, took.encode())
        os._exit(0)
    os.close(write)
    print("took", os.read(read, 100).decode())
    os.wait()
"""
#: The first invocation, noting which agentfn modules import pydantic, and the spec's modules.
IMPORTS = """
import builtins, json, sys
importers = []
real = builtins.__import__
def noting(name, globals=None, locals=None, fromlist=(), level=0):
    who = (globals or {}).get("__name__", "")
    if name.split(".")[0] == "pydantic" and who.split(".")[0] in ("runtime", "handlers"):
        importers.append(who)
    return real(name, globals, locals, fromlist, level)
builtins.__import__ = noting
import handlers.step
answer = handlers.step.handler({"action": "advance", "run_id": sys.argv[1]}, None)
assert answer["status"] == "succeeded", answer
spec = sorted(m for m in sys.modules if m.startswith("runtime.spec."))
print(json.dumps({"importers": list(dict.fromkeys(importers)), "spec": spec}))
"""
#: The floor after a restore: boto3 imported and its service data loaded before the fork.
RESTORED_FLOOR = """
import os, pickle, sys, time, boto3
from botocore.exceptions import ClientError
with open(sys.argv[1], "rb") as recorded:
    calls = pickle.load(recorded)
services = sorted({service for service, _, _ in calls})
for service in services:
    boto3.client(service)  # loads the service data, as the init does
core = boto3.DEFAULT_SESSION._session
for _ in range(int(sys.argv[2])):
    read, write = os.pipe()
    if os.fork() == 0:
        started, cpu = time.perf_counter(), time.process_time()
        clients = {}
        for service, operation, params in calls:
            if service not in clients:
                clients[service] = boto3.client(service)
            try:
                clients[service]._make_api_call(operation, params)
            except ClientError:
                pass
        took = f"{time.perf_counter() - started} {time.process_time() - cpu}"
        os.write(write, took.encode())
        os._exit(0)
    os.close(write)
    print("took", os.read(read, 100).decode())
    os.wait()
"""


def took(output: str) -> tuple[list[float], list[float]]:
    """The timings a script printed (`took WALL CPU`, seconds), among the function's logs."""
    lines = [line.split() for line in output.splitlines() if line.startswith("took ")]
    return [float(w) for _, w, _ in lines], [float(c) for _, _, c in lines]


def spawned(script: str, args: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """speed.spawn's wall time (spawn to the script's `print`), and the CPU time the process
    used until then (user + system; not its exit, where a process that did not freeze its
    objects pays a last garbage collection): on a shared machine the steadier of the two."""
    code = script.replace("print(time.time())", "print(time.process_time(), time.time())")
    assert code != script, "the script must end by printing time.time()"
    started = time.time()
    done = subprocess.run([sys.executable, "-c", code, *args], env=env, cwd=cwd, check=True,
                          capture_output=True, text=True)  # fmt: skip
    cpu, end = done.stdout.split()[-2:]
    return float(end) - started, float(cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tries", type=int, default=7)
    parser.add_argument("--keep", type=Path, help="build the shipped package here, and keep it")
    parser.add_argument("--imports", action="store_true", help="list who imports pydantic")
    args = parser.parse_args()
    from infra.local.dev_aws import MotoServer, pointed_at
    from runtime.engine.loop import Engine
    from runtime.spec import load_compiled

    with tempfile.TemporaryDirectory() as scratch:
        work = args.keep or Path(scratch)
        shipped = work / "compiled"
        if (shipped / "deps").exists():  # kept: the dependencies as they were, today's code
            shutil.rmtree(work / "project", ignore_errors=True)
            shutil.rmtree(shipped / "code", ignore_errors=True)
            package = speed.one_step_project(work / "project")
            names = ["agentfn.spec.json", "handlers", "runtime"]
            layer_build.build_code(shipped / "code", names, package)
        else:
            speed.shipped_variants(work)
        code, deps = shipped / "code", shipped / "deps"
        # built without SnapStart (python3.11 here), which leaves the snapshot module out
        shutil.copy(ROOT / "handlers" / "snapshot.py", code / "handlers")
        fake = Path(scratch) / "fake"
        fake.mkdir()
        (fake / "snapshot_restore_py.py").write_text(FAKE_RUNTIME, encoding="utf-8")
        aws = MotoServer(0)
        with pointed_at(aws.url, aws.port):
            aws.start()
            clients = speed.stack_clients()
            spec = load_compiled(code / "agentfn.spec.json")
            engine = Engine(spec, clients.store())
            env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "AGENTFN_AGENT": "a",
                   "AGENTFN_SPEC_PATH": str(code / "agentfn.spec.json"),
                   "PYTHONPATH": os.pathsep.join([str(code), str(deps)])}  # fmt: skip
            calls = Path(scratch) / "calls.pickle"
            record = [sys.executable, "-c", speed.RECORDED, engine.start("a", "go").run_id]
            subprocess.run([*record, str(calls)], env=env, cwd=code, check=True,
                           capture_output=True)  # fmt: skip
            wall: dict[str, list[float]] = {"boto3": [], "floor": [], "cold": []}
            cpu: dict[str, list[float]] = {"boto3": [], "floor": [], "cold": []}
            for _ in range(args.tries):
                run = engine.start("a", "go").run_id
                scripts = {"boto3": (speed.IMPORT_BOTO3, []), "floor": (speed.FLOOR, [str(calls)]),
                           "cold": (speed.FIRST_INVOCATION, [run])}  # fmt: skip
                for name, (script, script_args) in scripts.items():
                    seconds, used = spawned(script, script_args, env, code)
                    wall[name].append(seconds)
                    cpu[name].append(used)
            path = os.pathsep.join([str(code), str(deps), str(fake)])
            snap_env = {**env, "AWS_LAMBDA_INITIALIZATION_TYPE": "snap-start",
                        "_HANDLER": "handlers.step.handler", "PYTHONPATH": path}  # fmt: skip
            runs = [engine.start("a", "go").run_id for _ in range(args.tries)]
            restored = subprocess.run(
                [sys.executable, "-c", RESTORED, *runs], env=snap_env, cwd=code, check=True,
                capture_output=True, text=True,
            ).stdout  # fmt: skip
            floor = subprocess.run(
                [sys.executable, "-c", RESTORED_FLOOR, str(calls), str(args.tries)],
                env=env, cwd=code, check=True, capture_output=True, text=True,
            ).stdout  # fmt: skip
            requests = len(pickle.loads(calls.read_bytes()))
            if args.imports:
                imports = subprocess.run(
                    [sys.executable, "-c", IMPORTS, engine.start("a", "go").run_id], env=env,
                    cwd=code, check=True, capture_output=True, text=True,
                ).stdout.splitlines()[-1]  # fmt: skip
        aws.stop()
    wall["restored"], cpu["restored"] = took(restored)
    wall["restored floor"], cpu["restored floor"] = took(floor)
    print(f"cold start of an agent function, best of {args.tries} ({speed.PY}): wall / CPU time")
    print("(the verdicts read CPU time: on a shared machine it moves far less than wall time)")
    print("without SnapStart (spawn to done):")
    show = {
        "boto3": "import boto3 alone",
        "floor": f"the floor: the step's {requests} AWS requests, bare boto3",
        "cold": "first invocation, as shipped",
    }
    for name, label in show.items():
        speed.row(label, f"{min(wall[name]) * 1000:.0f} / {min(cpu[name]) * 1000:.0f} ms")
    share("agentfn's own share (first invocation - floor)", wall, cpu, "cold", "floor")
    print("with SnapStart, simulated (after-restore hooks to the step's answer):")
    speed.row("the floor restored the same way", _ms(wall, cpu, "restored floor"))
    speed.row("first invocation of a restored copy", _ms(wall, cpu, "restored"))
    share("agentfn's own share (restored - its floor)", wall, cpu, "restored", "restored floor")
    if args.imports:
        seen = json.loads(imports)
        models = [m for m in seen["spec"] if not m.startswith(_RUN_TIME_SPEC)]
        print("imports during one step (--imports):")
        print("  agentfn modules importing pydantic:", ", ".join(seen["importers"]) or "none")
        print("  validating spec modules loaded:", ", ".join(models) or "none")
    rounded = {k: [round(v * 1000, 1) for v in vs] for k, vs in wall.items()}
    print("wall ms:", json.dumps(rounded))
    print("cpu ms:", json.dumps({k: [round(v * 1000, 1) for v in vs] for k, vs in cpu.items()}))


#: The spec modules a step may load: the run-time structs and what they share with the models.
_RUN_TIME_SPEC = ("runtime.spec.plain", "runtime.spec.shared", "runtime.spec.methods",
                  "runtime.spec.graph")  # fmt: skip


def _ms(wall: dict[str, list[float]], cpu: dict[str, list[float]], name: str) -> str:
    return f"{min(wall[name]) * 1000:.0f} / {min(cpu[name]) * 1000:.0f} ms"


def share(label: str, wall: dict[str, list[float]], cpu: dict[str, list[float]], run: str,
          floor: str) -> None:  # fmt: skip
    by_wall = min(wall[run]) - min(wall[floor])
    by_cpu = min(cpu[run]) - min(cpu[floor])
    speed.row(label, f"{by_wall * 1000:.0f} / {by_cpu * 1000:.0f} ms", "≤ 50 ms", by_cpu <= 0.05)


if __name__ == "__main__":
    main()
