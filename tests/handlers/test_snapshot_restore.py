"""SnapStart, simulated: a function's SnapStart init builds its service (handlers.snapshot),
the test plays Lambda's runtime (a stand-in `snapshot_restore_py` on the path records the
hooks), runs the before-snapshot hooks, and forks the process twice: two copies restored
from one snapshot, each answering a step against moto's server on loopback.

With the after-restore hooks, the copies draw their own random numbers and trace ids, own
their own lease owner id, sign with the credentials of their own environment and read
secrets again; without them (the control) they share all of it, which is what makes the
test able to fail."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from runtime.spec import AgentfnSpec

ROOT = Path(__file__).resolve().parents[2]
FAKE_RUNTIME = '''
"""Stand-in for Lambda's snapshot_restore_py: records the hooks; the test plays Lambda."""
before, after = [], []
def register_before_snapshot(hook, *args, **kwargs): before.append((hook, args, kwargs))
def register_after_restore(hook, *args, **kwargs): after.append((hook, args, kwargs))
'''
COPIES = """
import json, os, random, sys, time
import handlers.step as step  # the SnapStart init: the service is built here
import snapshot_restore_py as lambda_runtime
from runtime import secrets
from runtime.observability.ids import new_trace_id

service = step._service
ddb = service.engine.store._ddb
made_at_init = ddb.made and service.events.made
secrets._fetched[("ssm", "x")] = (time.monotonic() + 300, "read before the snapshot")
for hook, args, kwargs in lambda_runtime.before if sys.argv[1] == "renew" else []:
    hook(*args, **kwargs)
in_snapshot = ddb.made  # a client (sockets, credentials) in the snapshot?
# CPython reseeds `random` in a forked child (os.register_at_fork); a snapshot's restore does
# not: each copy is given back the state the snapshot holds.
state = random.getstate()
copies = []
for copy, run_id in enumerate(sys.argv[2:]):
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # a copy restored from the snapshot
        os.close(read)
        random.setstate(state)
        os.environ["AWS_SESSION_TOKEN"] = f"token-of-copy-{copy}"  # this copy's credentials
        started = time.perf_counter()
        if sys.argv[1] == "renew":
            for hook, args, kwargs in lambda_runtime.after:
                hook(*args, **kwargs)
        drawn = {"trace": new_trace_id(0), "random": random.random()}  # the first draws
        answer = step.handler({"action": "advance", "run_id": run_id}, None)
        seen = {
            **drawn,
            "ms": (time.perf_counter() - started) * 1000,
            "status": answer["status"],
            "owner": service.engine.owner,
            "token": ddb._request_signer._credentials.token,
            "secret_cached": ("ssm", "x") in secrets._fetched,
        }
        os.write(write, json.dumps(seen).encode())
        os._exit(0)
    os.close(write)
    data = b""
    while chunk := os.read(read, 65536):
        data += chunk
    os.waitpid(pid, 0)
    copies.append(json.loads(data))
print(json.dumps({"made_at_init": made_at_init, "in_snapshot": in_snapshot, "copies": copies}))
"""


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict[str, str], Any]]:
    """moto's server on loopback, the run table and bucket, and a one-agent compiled spec;
    the environment of the agent's function at a SnapStart init."""
    from infra.local.aws import LOCAL_BUCKET, LOCAL_TABLE, AwsClients, create_resources
    from infra.local.dev_aws import MotoServer, pointed_at
    from runtime.engine.loop import Engine

    folder = tmp_path_factory.mktemp("snapstart")
    (folder / "snapshot_restore_py.py").write_text(FAKE_RUNTIME, encoding="utf-8")
    spec = AgentfnSpec.model_validate(
        {
            "version": 1,
            "models": {"m": {"provider": "scripted", "script": [{"text": "done"}]}},
            "agents": {"a": {"description": "One step.", "model": "m"}},
        }
    )
    (folder / "agentfn.spec.json").write_text(json.dumps(spec.to_compiled()), encoding="utf-8")
    aws = MotoServer(0)
    with pointed_at(aws.url, aws.port):
        aws.start()
        import boto3

        clients = AwsClients(
            boto3.client("dynamodb"), boto3.client("s3"), LOCAL_TABLE, LOCAL_BUCKET
        )
        create_resources(clients)
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(folder), str(ROOT)]),
            "AWS_SESSION_TOKEN": "token-at-init",
            "AWS_LAMBDA_INITIALIZATION_TYPE": "snap-start",
            "_HANDLER": "handlers.step.handler",
            "AGENTFN_AGENT": "a",
            "AGENTFN_SPEC_PATH": str(folder / "agentfn.spec.json"),
        }
        try:
            yield env, lambda: Engine(spec, clients.store()).start("a", "go").run_id
        finally:
            aws.stop()


def _copies(stack: tuple[dict[str, str], Any], mode: str) -> dict[str, Any]:
    env, start = stack
    runs = [start(), start()]
    result = subprocess.run(
        [sys.executable, "-c", COPIES, mode, *runs],
        env=env, cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    found: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return found


def test_restored_copies_renew_what_they_must_not_share(
    stack: tuple[dict[str, str], Any],
) -> None:
    found = _copies(stack, "renew")
    assert found["made_at_init"]  # the service and botocore's data are in the snapshot
    assert not found["in_snapshot"]  # but no client: no socket, no credentials
    first, second = found["copies"]
    for copy, seen in enumerate(found["copies"]):
        assert seen["status"] == "succeeded"  # each copy answers its step
        assert seen["token"] == f"token-of-copy-{copy}"  # its own credentials, not the init's
        assert not seen["secret_cached"]  # secrets are read again
    assert first["owner"] != second["owner"]  # lease owners
    assert first["trace"] != second["trace"]  # trace ids
    assert first["random"] != second["random"]


def test_without_the_hooks_copies_share_it_all(stack: tuple[dict[str, str], Any]) -> None:
    """The control, no hook run: what they renew really is shared by copies of a snapshot."""
    found = _copies(stack, "no hooks")
    first, second = found["copies"]
    assert first["owner"] == second["owner"]
    assert first["trace"] == second["trace"]
    assert first["random"] == second["random"]
    assert first["token"] == second["token"] == "token-at-init"
    assert first["secret_cached"] and second["secret_cached"]


def test_without_lambdas_runtime_nothing_is_registered_and_nothing_built() -> None:
    """A local run: no `snapshot_restore_py`, no SnapStart init, the handler imports light."""
    from handlers import snapshot

    assert snapshot.register() is False
    code = "import handlers.step, sys; print(handlers.step._service, 'pydantic' in sys.modules)"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "_HANDLER": "handlers.step.handler"}
    env.pop("AWS_LAMBDA_INITIALIZATION_TYPE", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout  # fmt: skip
    assert out.split() == ["None", "False"]


@pytest.mark.parametrize("module", ["handlers.api", "handlers.workflow", "handlers.live"])
def test_each_functions_snapstart_init_prepares_once_and_registers_the_hooks(
    stack: tuple[dict[str, str], Any], module: str
) -> None:
    """The API function imports handlers.step too: only the handler's own module prepares,
    so the service is built once; every published function registers both hooks."""
    env, _ = stack
    env = {**env, "_HANDLER": f"{module}.handler", "AGENTFN_WORKFLOW": ""}
    code = (
        f"import {module} as entry, handlers.step as step, snapshot_restore_py as rt; "
        "print(getattr(entry, '_service', None) is not None, "
        "entry is step or step._service is None, len(rt.before), len(rt.after))"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True,
                         text=True, timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    built, once, before, after = out.stdout.split()[-4:]
    assert (built, once, before, after) == (str(module != "handlers.live"), "True", "1", "1")
