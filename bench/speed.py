"""Speed where users feel it: cold start, package size, the embedded AWS, `agentfn dev`,
parallel sync tools. One command, every target of the speed issue, figures against targets.

Run:  .venv/bin/python bench/speed.py [--quick] [--no-sam]    (after `python3 scripts/dev.py setup`)

1. Cold start: spawn to done of a first invocation of an agent function (service built from
   its environment, one scripted step against moto's server on loopback), next to a bare
   `import boto3`, in the same run. As Lambda runs it: the package read-only (no bytecode
   written), its code and dependencies as shipped (compiled by the staged Makefile and the
   layer builder) and, for comparison, as sources only (what `sam build` shipped before).
   Budget: within 1.5x of `import boto3`.
2. Package size (`sam build` of the demo agents, `--no-sam` skips it): each function's code
   zip (budget < 1 MB), each layer, and an agent's total (budget < 5 MB without MCP).
3. The embedded AWS stays flat: a 200-turn run in process (turns 191-200 vs 1-10, budget
   1.5x) and `agentfn run` of it, spawn to exit (budget < 5 s).
4. `agentfn dev` (bench/speed_dev.py): 200 connections at once (none reset), 50 demo runs at
   once (all succeed, p95 < 10 s), a demo run after 1,000 runs as fast as after one, memory.
5. k read-only sync tools of 0.2 s in one step: about 0.2 s for every k up to the agent's
   parallelism (default 16); before, asyncio's default pool (cpu_count + 4 threads).
6. Framework time per turn in memory (bench/loop_overhead.py's runs): budget < 0.1 ms, and
   flat in N (bench/turn_breakdown.py takes a turn apart).

Needs pip's index for the dependencies (as `sam build` does). Figures vary by up to ±50% on
shared machines; each is the best (or the median, where said) of several tries.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pickle
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import yaml  # noqa: E402
from table import row  # noqa: E402

from infra.sam import layer_build  # noqa: E402
from infra.sam.layers import DEPENDENCIES  # noqa: E402

PY = f"python{sys.version_info.major}.{sys.version_info.minor}"
FIRST_INVOCATION = """
import sys, time
import handlers.step
answer = handlers.step.handler({"action": "advance", "run_id": sys.argv[1]}, None)
assert answer["status"] == "succeeded", answer
print(time.time())
"""
IMPORT_BOTO3 = "import time, boto3; print(time.time())"
#: The first invocation once more, writing down every AWS request it made (for FLOOR).
RECORDED = """
import pickle, sys, botocore.client
calls = []
make = botocore.client.BaseClient._make_api_call
def record(client, operation, params):
    calls.append((client.meta.service_model.service_name, operation, params))
    return make(client, operation, params)
botocore.client.BaseClient._make_api_call = record
import handlers.step
handlers.step.handler({"action": "advance", "run_id": sys.argv[1]}, None)
with open(sys.argv[2], "wb") as out:
    pickle.dump(calls, out)
"""
#: The floor under any function keeping its state in AWS: the same requests made by a bare
#: boto3 script (its clients made as it goes). Refused writes (a condition no longer
#: holds) cost the same round trip.
FLOOR = """
import pickle, sys, time, boto3
from botocore.exceptions import ClientError
with open(sys.argv[1], "rb") as recorded:
    calls = pickle.load(recorded)
clients = {}
for service, operation, params in calls:
    if service not in clients:
        clients[service] = boto3.client(service)
    try:
        clients[service]._make_api_call(operation, params)
    except ClientError:
        pass
print(time.time())
"""
#: The same, in stages, to show where the time goes (imports first, then the handler).
STAGES = """
import gc, json, os, sys, time
gc.disable()  # as in a first invocation (handlers.coldstart)
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
marks = [time.perf_counter()]
def mark(): marks.append(time.perf_counter())
import boto3; mark()
import pydantic.main; mark()
import runtime.spec; mark()
import runtime.engine.loop, runtime.service, runtime.store.dynamo; mark()
import handlers.step
service = handlers.step.build_service_from_environment(); mark()
service.engine.store._ddb.meta, service.events.meta; mark()
handlers.step.configure(service)
answer = handlers.step.handler({"action": "advance", "run_id": sys.argv[1]}, None); mark()
print(json.dumps([b - a for a, b in zip(marks, marks[1:])]))
"""
STAGE_NAMES = ("boto3", "pydantic", "spec models", "engine", "service", "2 clients", "step")


def agentfn(*args: str, cwd: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-m", "infra.cli", *args], cwd=cwd, env=env, capture_output=True
    )
    assert result.returncode == 0, result.stderr.decode()[-2000:]


# ---- 1. cold start -------------------------------------------------------------------------


def one_step_project(folder: Path) -> Path:
    arch = "x86_64" if platform.machine() in {"x86_64", "AMD64"} else "arm64"
    spec = {
        "version": 1,
        "deployment": {"architecture": arch},
        "models": {"m": {"provider": "scripted", "script": [{"text": "done"}]}},
        "agents": {"a": {"description": "One scripted step.", "model": "m"}},
    }
    folder.mkdir(parents=True)
    (folder / "agents.yaml").write_text(yaml.safe_dump(spec))
    agentfn("build", "-f", "agents.yaml", "-o", "template.yaml", "--runtime", PY, cwd=folder)
    return folder / ".agentfn" / "package"


def shipped_variants(work: Path) -> dict[str, list[Path]]:
    """PYTHONPATH of the function as shipped (compiled) and as sources only."""
    package = one_step_project(work / "project")
    compiled, sources = work / "compiled", work / "sources"
    names = ["agentfn.spec.json", "handlers", "runtime"]
    layer_build.build_code(compiled / "code", names, package)
    shutil.copytree(package, sources / "code", ignore=shutil.ignore_patterns("Makefile", "*.py"))
    for name in names[1:]:
        shutil.copytree(package / name, sources / "code" / name, dirs_exist_ok=True)
    deps = sources / "deps"
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-compile", "--target"]
    subprocess.run([*pip, str(deps), *DEPENDENCIES.requirements], check=True, capture_output=True)
    shutil.copytree(deps, compiled / "deps")
    layer_build.prune(compiled / "deps", list(DEPENDENCIES.prune))
    layer_build.compile_sourceless(compiled / "deps")
    return {
        "as shipped (bytecode)": [compiled / "code", compiled / "deps"],
        "sources only (before)": [sources / "code", sources / "deps"],
    }


def cold_start(tries: int) -> None:
    from infra.local.dev_aws import MotoServer, pointed_at
    from runtime.engine.loop import Engine
    from runtime.spec import load_compiled

    print("\n1. cold start: first invocation, spawn to done (moto server on loopback)")
    with tempfile.TemporaryDirectory() as scratch:
        variants = shipped_variants(Path(scratch))
        aws = MotoServer(0)
        with pointed_at(aws.url, aws.port):
            aws.start()
            clients = stack_clients()
            code = variants["as shipped (bytecode)"][0]
            spec = load_compiled(code / "agentfn.spec.json")
            engine = Engine(spec, clients.store())
            env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "AGENTFN_AGENT": "a"}
            env["AGENTFN_SPEC_PATH"] = str(code / "agentfn.spec.json")
            env["PYTHONPATH"] = os.pathsep.join(map(str, variants["as shipped (bytecode)"]))
            calls = Path(scratch) / "calls.pickle"
            run_id = engine.start("a", "go").run_id
            record = [sys.executable, "-c", RECORDED, run_id, str(calls)]
            subprocess.run(record, env=env, cwd=code, check=True, capture_output=True)
            times: dict[str, list[float]] = {"import boto3": [], "floor": []}
            for _ in range(tries):
                times["import boto3"].append(spawn(["-c", IMPORT_BOTO3], env, code))
                times["floor"].append(spawn(["-c", FLOOR, str(calls)], env, code))
                for name, path in variants.items():
                    run_id = engine.start("a", "go").run_id
                    env["PYTHONPATH"] = os.pathsep.join(map(str, path))
                    times.setdefault(name, []).append(
                        spawn(["-c", FIRST_INVOCATION, run_id], env, path[0])
                    )
            calls_made = calls.read_bytes()
            run_id = engine.start("a", "go").run_id
            env["PYTHONPATH"] = os.pathsep.join(map(str, variants["as shipped (bytecode)"]))
            stages = subprocess.run(
                [sys.executable, "-c", STAGES, run_id], env=env, cwd=code, check=True,
                capture_output=True, text=True,
            ).stdout  # fmt: skip
        aws.stop()
    base = min(times["import boto3"])
    labels = {
        "import boto3": "import boto3 alone",
        "floor": f"the step's {len(pickle.loads(calls_made))} AWS requests, bare boto3",
    }
    for name, values in times.items():
        ratio = min(values) / base
        ok = ratio <= 1.5 if name.startswith("as shipped") else None
        value = f"{min(values) * 1000:.0f} ms ({ratio:.2f}x)"
        row(
            labels.get(name, f"first invocation, {name}"),
            value,
            "≤ 1.5x" if ok is not None else "",
            ok,
        )
    own = min(times["as shipped (bytecode)"]) - min(times["floor"])
    row("agentfn's own share (first invocation - floor)", f"{own * 1000:.0f} ms")
    spent = zip(STAGE_NAMES, json.loads(stages.strip().splitlines()[-1]), strict=True)
    print("  as shipped, where the time goes (ms, after the interpreter's start):")
    print("    " + " · ".join(f"{name} {seconds * 1000:.0f}" for name, seconds in spent))


def spawn(args: list[str], env: dict[str, str], cwd: Path) -> float:
    """Seconds from spawning the interpreter to the moment the code printed it was done
    (a Lambda process lives on after its invocation: its exit is not part of it)."""
    started = time.time()
    done = subprocess.run(
        [sys.executable, *args], env=env, cwd=cwd, check=True, capture_output=True, text=True
    )
    return float(done.stdout.split()[-1]) - started


# ---- 2. package size -----------------------------------------------------------------------


def zipped(folder: Path) -> int:
    with tempfile.TemporaryDirectory() as scratch:
        return Path(shutil.make_archive(f"{scratch}/z", "zip", folder)).stat().st_size


def package_sizes() -> None:
    sam = ROOT / ".tools" / "sam" / "bin" / "sam"
    print("\n2. package size: `sam build` of the demo agents (zipped)")
    if not sam.exists() or shutil.which("make") is None:
        print("  skipped: needs the SAM CLI (python3 scripts/dev.py setup) and make")
        return
    with tempfile.TemporaryDirectory() as scratch:
        project = Path(scratch) / "demo"
        project.mkdir()
        shutil.copy(ROOT / "agents.yaml", project)
        shutil.copytree(ROOT / "tools", project / "tools")
        for folder in ("data", "knowledge"):  # the demo's SQLite file and knowledge base
            shutil.copytree(ROOT / folder, project / folder)
        agentfn("build", "-f", "agents.yaml", "-o", "template.yaml", "--runtime", PY, cwd=project)
        env = {**os.environ, "SAM_CLI_TELEMETRY": "0", "AWS_DEFAULT_REGION": "us-east-1"}
        env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env["PATH"]])
        build = [str(sam), "build", "--template-file", "template.yaml", "--build-dir", "out"]
        subprocess.run(build, cwd=project, env=env, check=True, capture_output=True)
        built = project / "out"
        sizes = {p.name: zipped(p) for p in built.iterdir() if p.is_dir()}
    mb = 1_000_000
    code = max(v for k, v in sizes.items() if k.endswith("Function"))
    every = sizes["DependenciesLayer"] + sizes["PowertoolsLayer"]  # every function's layers
    row("largest function code zip", f"{code / mb:.2f} MB", "< 1 MB", code < mb)
    for layer in ("DependenciesLayer", "PowertoolsLayer", "PowertoolsApiLayer", "McpLayer"):
        row(f"{layer} (once for the stack)", f"{sizes.get(layer, 0) / mb:.2f} MB")
    row("agent without MCP: code + dependencies + Powertools", f"{(code + every) / mb:.2f} MB",
        "< 5 MB", code + every < 5 * mb)  # fmt: skip
    mcp = code + every + sizes.get("McpLayer", 0)
    row("agent with MCP: + the MCP SDK", f"{mcp / mb:.2f} MB")
    api = code + every + sizes.get("PowertoolsApiLayer", 0)
    row("API function: + the rest of Powertools", f"{api / mb:.2f} MB")
    functions = sum(1 for k in sizes if k.endswith("Function"))
    layers = sum(1 for k in sizes if k.endswith("Layer"))
    total = sum(sizes.values())
    row(f"whole stack ({functions} functions, {layers} layers)", f"{total / mb:.2f} MB")


# ---- 3. the embedded AWS -------------------------------------------------------------------


def embedded_aws_flat() -> None:
    from loop_overhead import run_once, spec_for

    from infra.local.aws import embedded_aws

    print("\n3. the embedded AWS (moto in process): a 200-turn run")
    with embedded_aws() as clients:
        total, turns = run_once(spec_for(200, "noop"), clients.store())
    first, last = statistics.median(turns[:10]), statistics.median(turns[-10:])
    row("200 turns in process", f"{total:.2f} s")
    row("turns 191-200 vs 1-10 (median)", f"{last * 1000:.1f} / {first * 1000:.1f} ms",
        "≤ 1.5x", last <= 1.5 * first)  # fmt: skip
    with tempfile.TemporaryDirectory() as scratch:
        project = Path(scratch)
        spec = spec_for(200, "noop").to_compiled()
        (project / "agents.yaml").write_text(yaml.safe_dump(json.loads(json.dumps(spec))))
        (project / "bench_tools").mkdir()
        shutil.copy(ROOT / "bench" / "bench_tools.py", project / "bench_tools" / "__init__.py")
        started = time.perf_counter()
        # --offline: moto in process, as the rows above (the default keeps the stack's state
        # in .agentfn/local/ through moto's server: a logged write per commit).
        agentfn("run", "a", "go", "-f", "agents.yaml", "--json", "--offline", cwd=project)
        took = time.perf_counter() - started
    row("`agentfn run` of it, spawn to exit", f"{took:.2f} s", "< 5 s", took < 5)


# ---- 5. parallel sync tools ----------------------------------------------------------------


def step_seconds(calls: int, default_pool: bool) -> float:
    import runtime.tools.python_tool as python_tool
    from runtime.engine.loop import Engine
    from runtime.spec import AgentfnSpec
    from runtime.store.memory import MemoryStore

    naps = [{"name": "nap", "arguments": {"seconds": 0.2, "i": i}} for i in range(calls)]
    spec = AgentfnSpec.model_validate(
        {
            "version": 1,
            "tools_package": "bench_tools",
            "models": {
                "m": {
                    "provider": "scripted",
                    "script": [{"tool_calls": naps}, {"text": "done"}],
                }
            },
            "tools": {
                "nap": {
                    "type": "python",
                    "handler": "bench_tools:nap",
                    "description": "Blocks.",
                    "effect": "read_only",
                }
            },
            "agents": {"a": {"description": "d", "model": "m", "tools": ["nap"]}},
        }
    )
    original = python_tool.run_blocking
    if default_pool:  # what python tools did before: asyncio's default executor

        async def to_thread(_pool: Any, func: Any, /, *args: Any, **kwargs: Any) -> Any:
            return await asyncio.to_thread(func, *args, **kwargs)

        python_tool.run_blocking = to_thread  # type: ignore[assignment]
    try:
        engine = Engine(spec, MemoryStore())
        started = time.perf_counter()
        head = asyncio.run(engine.run("a", "go"))
        assert head.status == "succeeded", head.error_message
        return time.perf_counter() - started
    finally:
        python_tool.run_blocking = original


def sync_tools() -> None:
    cpus = os.cpu_count() or 1
    print(f"\n5. k read-only sync tools of 0.2 s in one step ({cpus} CPUs; default 16 threads)")
    print(f"  {'k':>4} {'agent pool':>11} {'default pool (before)':>22}")
    for k in (1, 4, 8, 16, 17, 32):
        ours = min(step_seconds(k, False) for _ in range(2))
        before = step_seconds(k, True)
        ok = ours < 0.35 if k <= 16 else None
        verdict = "" if ok is None else ("  ok (≈ slowest)" if ok else "  MISSED")
        print(f"  {k:>4} {ours:>10.2f}s {before:>21.2f}s{verdict}")


# ---- 6. framework time per turn ------------------------------------------------------------


def per_turn() -> None:
    from loop_overhead import memory_figures

    print("\n6. framework time per turn in memory (scripted model, async tool; best of 9)")
    for n, figures in memory_figures("anoop").items():
        ms, first, last = figures["ms_per_turn"], figures["first10_ms"], figures["last10_ms"]
        row(f"N = {n}", f"{ms:.3f} ms", "< 0.1 ms", ms < 0.1)
        if n >= 200:
            row("  its last 10 turns vs its first 10 (median)", f"{last:.3f} / {first:.3f} ms",
                "flat (≤ 1.2x)", last <= 1.2 * first)  # fmt: skip
    print("  where a turn's time goes: .venv/bin/python bench/turn_breakdown.py")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer tries, 100 dev runs")
    parser.add_argument("--no-sam", action="store_true", help="skip the sam build")
    args = parser.parse_args()
    print(f"agentfn speed benchmark ({PY}, {os.cpu_count()} CPUs, {platform.machine()})")
    cold_start(3 if args.quick else 7)
    if not args.no_sam:
        package_sizes()
    embedded_aws_flat()
    from speed_dev import dev_server

    dev_server(100 if args.quick else 1000)
    sync_tools()
    per_turn()


def stack_clients() -> Any:
    """The stack's table and bucket on the embedded server the process is pointed at
    (infra.local.dev_aws.pointed_at), created, and clients for them."""
    import boto3

    from infra.local.aws import LOCAL_BUCKET, LOCAL_TABLE, AwsClients, create_resources

    clients = AwsClients(boto3.client("dynamodb"), boto3.client("s3"), LOCAL_TABLE, LOCAL_BUCKET)
    create_resources(clients)
    return clients


if __name__ == "__main__":
    main()
