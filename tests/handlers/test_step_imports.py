"""A step of a deployed agent imports no pydantic: not for its spec, not at all.

Importing pydantic and building models cost most of a cold start's own share (issue 26):
the function loads `agentfn.spec.json` into runtime.spec.plain's structs, and its records
are msgspec structs too (runtime.structs). A fresh process, as Lambda starts one, runs one
scripted step through handlers.step against moto's server on loopback; no module of the
validating spec is imported, and pydantic is not imported at all (the first agentfn module
that would bring it in is named).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import boto3

from infra.local.aws import LOCAL_BUCKET, LOCAL_TABLE, AwsClients, create_resources
from infra.local.dev_aws import MotoServer, pointed_at
from runtime.engine.loop import Engine
from runtime.spec import AgentfnSpec
from tests.helpers import ROOT

SPEC = {
    "version": 1,
    "models": {"m": {"provider": "scripted", "script": [{"text": "done"}]}},
    "agents": {"a": {"description": "One step.", "model": "m"}},
}

#: One step, as a first invocation; then which spec modules it imported, and for pydantic
#: the agentfn module whose import first brought it in.
STEP = """
import builtins, json, sys
first_importer = {}
real_import = builtins.__import__
def noting(name, globals=None, *args, **kwargs):
    if name.split(".")[0] == "pydantic" and "pydantic" not in sys.modules and not first_importer:
        first_importer["by"] = (globals or {}).get("__name__")
    return real_import(name, globals, *args, **kwargs)
builtins.__import__ = noting
import handlers.step
answer = handlers.step.handler({"action": "advance", "run_id": sys.argv[1]}, None)
print(json.dumps({
    "status": answer["status"],
    "spec_modules": sorted(m for m in sys.modules if m.startswith("runtime.spec")),
    "pydantic_by": first_importer.get("by"),
    "pydantic": "pydantic" in sys.modules,
}))
"""
#: The modules of the spec a step may import: the structs and what they share with the models.
RUN_TIME_FORM = ("runtime.spec.plain", "runtime.spec.shared", "runtime.spec.methods",
                 "runtime.spec.graph")  # fmt: skip


def test_a_step_imports_neither_the_spec_models_nor_pydantic(tmp_path: Path) -> None:
    spec = AgentfnSpec.model_validate(SPEC)
    path = tmp_path / "agentfn.spec.json"
    path.write_text(json.dumps(spec.to_compiled()))
    aws = MotoServer(0)
    with pointed_at(aws.url, aws.port):
        aws.start()
        try:
            clients = AwsClients(
                boto3.client("dynamodb"), boto3.client("s3"), LOCAL_TABLE, LOCAL_BUCKET
            )
            create_resources(clients)
            run_id = Engine(spec, clients.store()).start("a", "go").run_id
            env = {**os.environ, "AGENTFN_SPEC_PATH": str(path), "AGENTFN_AGENT": "a",
                   "AGENTFN_TABLE": LOCAL_TABLE, "AGENTFN_BUCKET": LOCAL_BUCKET,
                   "PYTHONPATH": str(ROOT)}  # fmt: skip
            done = subprocess.run([sys.executable, "-c", STEP, run_id], env=env, cwd=tmp_path,
                                  capture_output=True, text=True, timeout=120)  # fmt: skip
        finally:
            aws.stop()
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["status"] == "succeeded"
    validating = [m for m in seen["spec_modules"]
                  if m != "runtime.spec" and not m.startswith(RUN_TIME_FORM)]  # fmt: skip
    assert validating == [], "a step imported the spec's pydantic models"
    assert "runtime.spec.plain.root" in seen["spec_modules"]
    assert seen["pydantic_by"] is None, f"{seen['pydantic_by']} imports pydantic in a step"
    assert seen["pydantic"] is False
