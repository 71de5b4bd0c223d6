"""Runs untrusted code (Python or JavaScript) in a child process walled off as far as the
host allows. The same runner serves `agentfn run`/`dev` (a subprocess) and the deployed
sandbox function (inside a Lambda with no IAM permissions and no network route).

Walls (the answer's `walls` lists those that held; on a host that can isolate, a namespace
that cannot be made stops the run instead of running without it):
- no network: a network namespace of its own (Linux, as root), where nothing is reachable;
- another user (`nobody`): no access to the caller's files, and a process limit that holds;
- resource limits: CPU seconds, address space, processes, file size, open files;
- a scrubbed environment (no variable of the caller, so no secret) and an empty temporary
  working directory, removed afterwards;
- a wall-clock timeout that kills the whole process group; stdout/stderr capped.
A value the code leaves in `result` (JSON-able) comes back as `result`.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
from typing import Any

CLONE_NEWNET = 0x40000000
NOBODY = 65534
OUTPUT_CHARS = 100_000
MAX_PROCESSES = 64

PYTHON_WRAPPER = """
import json, sys
namespace = {"__name__": "__main__"}
code = open("main.py", encoding="utf-8").read()
try:
    exec(compile(code, "main.py", "exec"), namespace)
finally:
    if "result" in namespace:
        with open("result.json", "w", encoding="utf-8") as out:
            json.dump(namespace["result"], out, default=repr)
"""
JS_WRAPPER = """
const fs = require('fs');
const vm = require('vm');
const context = vm.createContext({console, setTimeout, clearTimeout, Buffer, JSON, Math, Date});
try { vm.runInContext(fs.readFileSync('main.js', 'utf8'), context, {filename: 'main.js'}); }
finally {
  if (typeof context.result !== 'undefined')
    fs.writeFileSync('result.json', JSON.stringify(context.result));
}
"""


def _walls(cpu_seconds: int, memory_mb: int, isolate: bool) -> Any:
    def enter() -> None:  # in the child, before exec
        os.setsid()
        if isolate:
            libc = ctypes.CDLL(None, use_errno=True)
            if libc.unshare(CLONE_NEWNET) != 0:
                os._exit(125)  # the wall the host promised did not hold: run nothing
        limits = {
            resource.RLIMIT_CPU: cpu_seconds,
            resource.RLIMIT_AS: memory_mb * 1024 * 1024,
            resource.RLIMIT_FSIZE: 10 * 1024 * 1024,
            resource.RLIMIT_NOFILE: 64,
            resource.RLIMIT_NPROC: MAX_PROCESSES,
            resource.RLIMIT_CORE: 0,
        }
        for kind, value in limits.items():
            with contextlib.suppress(ValueError, OSError):  # a limit the host lacks
                resource.setrlimit(kind, (value, value))
        if isolate:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)

    return enter


def can_isolate() -> bool:
    """Whether this host can give the child a network namespace and another user (Linux, as
    root). In Lambda it cannot: there the function itself has no network and no grants."""
    return sys.platform == "linux" and os.getuid() == 0


def run_code(
    language: str, code: str, timeout: float = 30.0, memory_mb: int = 256, isolate: bool = True
) -> dict[str, Any]:
    """{exit_code, signal, timed_out, stdout, stderr, result, walls}; never raises for what
    the code does (a crash, a kill, a limit are all answers). `walls` says which held."""
    isolate = isolate and can_isolate()
    if language == "python":
        command, file = [sys.executable, "-I", "-S", "-c", PYTHON_WRAPPER], "main.py"
    elif language == "javascript":
        node = shutil.which("node")
        if node is None:
            return {"error": "javascript needs Node.js, which this sandbox does not have"}
        # V8 reserves far more address space than it uses: its heap is capped instead
        command = [node, f"--max-old-space-size={memory_mb}", "-e", JS_WRAPPER]
        file = "main.js"
    else:
        return {"error": f"language must be python or javascript, not {language!r}"}
    folder = tempfile.mkdtemp(prefix="agentfn-sandbox-")
    try:
        with open(os.path.join(folder, file), "w", encoding="utf-8") as source:
            source.write(code)
        if isolate:
            os.chown(folder, NOBODY, NOBODY)
            os.chown(os.path.join(folder, file), NOBODY, NOBODY)
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": folder, "LANG": "C.UTF-8"}
        memory = memory_mb if language == "python" else memory_mb * 16
        process = subprocess.Popen(
            command,
            cwd=folder,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=_walls(int(timeout) + 1, memory, isolate),
        )
        timed_out = False
        try:
            out, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(process.pid, signal.SIGKILL)
            out, err = process.communicate()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)  # what it left running (forked children)
        result = None
        result_path = os.path.join(folder, "result.json")
        if os.path.exists(result_path) and os.path.getsize(result_path) <= OUTPUT_CHARS:
            with open(result_path, encoding="utf-8") as produced:
                try:
                    result = json.load(produced)
                except ValueError:
                    result = None
        code_ = process.returncode
        return {
            "exit_code": code_,
            "signal": signal.Signals(-code_).name if code_ is not None and code_ < 0 else None,
            "timed_out": timed_out,
            "stdout": out.decode("utf-8", "replace")[:OUTPUT_CHARS],
            "stderr": err.decode("utf-8", "replace")[:OUTPUT_CHARS],
            "result": result,
            "walls": [*(["network", "user"] if isolate else []), "limits", "environment"],
        }
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    """`python -m runtime.tools.sandbox.runner` reads {language, code, timeout, memory_mb} on
    stdin and prints the answer (how a host that cannot fork from its own process runs it)."""
    request = json.load(sys.stdin)
    print(json.dumps(run_code(**request)))


if __name__ == "__main__":
    main()
