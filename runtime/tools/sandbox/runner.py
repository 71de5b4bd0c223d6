"""Runs untrusted code (Python or JavaScript) walled off as far as the host allows. The same
runner serves `agentfn run`/`dev` (a subprocess) and the deployed sandbox function (inside a
Lambda with no IAM permissions and no network route).

Each call is supervised by its own jail process (runtime.tools.sandbox.jail). Where the
host can make namespaces (Linux, as root or with user namespaces open to this user) the call
gets, each wall probed in that call and listed in the answer's `walls` only if it held:
- "network": a network namespace with nothing in it (no route out, no loopback service,
  no abstract Unix socket of the host);
- "filesystem": a root of its own — the interpreter's folders read-only, a private /tmp
  (also /var/tmp) and /dev/shm that die with the call; none of the host's files, sockets
  or other folders;
- "processes": a PID namespace with a /proc of its own: no other process is visible;
- "user" (as root only): a uid of its own per call, no capabilities, no way to gain any;
- "memory": a cgroup that bounds the memory of everything the call runs together;
- "limits": CPU seconds, address space and open files per process, processes per call
  (as root the per-call uid makes that count the call's own), file size;
- "environment": no variable of the caller (so no secret);
- "cleanup": every process the call started was killed before the answer.
Elsewhere (Lambda, macOS) only "limits", "environment" and, on Linux, "cleanup" hold. The
code's `result` comes back over a pipe the code writes itself: the runner never opens a
file the code could have named. Output is read until the call's timeout (plus a few seconds
for the jail to start and tidy up), never until whatever holds the pipe lets go.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import secrets
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any

from runtime.tools.sandbox.cgroup import CallCgroup, make_call_cgroup, memory_cgroup_missing

JAIL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jail.py")
PROJECT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(JAIL))))
# -I -S: no environment, no site-packages; only this project's folder is put on the path
LAUNCH = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "from runtime.tools.sandbox.jail import main; main()"
)
OUTPUT_CHARS = 100_000
MAX_PROCESSES = 64
SUPERVISOR_MB = 32  # the jail's own processes share the call's memory cgroup
SETUP_SECONDS = 5.0  # building the jail and tidying up, beyond the code's own timeout
UID_FIRST, UID_COUNT = 1_500_000_000, 100_000_000  # per-call uids, owned by no one
ALLOWED_ENV = ["PATH", "HOME", "LANG"]
RUNTIME_FOLDERS = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"]
ISOLATION = ["network", "filesystem", "processes"]  # and "user", as root
WALL_ORDER = [
    "network",
    "filesystem",
    "processes",
    "user",
    "memory",
    "limits",
    "environment",
    "cleanup",
]
__all__ = ["can_isolate", "memory_cgroup_missing", "run_code"]

PYTHON_WRAPPER = """
import json, os
namespace = {"__name__": "__main__"}
code = open("main.py", encoding="utf-8").read()
try:
    exec(compile(code, "main.py", "exec"), namespace)
finally:
    if "result" in namespace:
        data = json.dumps(namespace["result"], default=repr).encode()
        while data:
            data = data[os.write(3, data):]
"""
JS_WRAPPER = """
const fs = require('fs');
const vm = require('vm');
const context = vm.createContext({console, setTimeout, clearTimeout, Buffer, JSON, Math, Date});
try { vm.runInContext(fs.readFileSync('main.js', 'utf8'), context, {filename: 'main.js'}); }
finally {
  if (typeof context.result !== 'undefined') {
    const text = JSON.stringify(context.result);
    if (typeof text === 'string') fs.writeSync(3, text);
  }
}
"""


@functools.cache
def can_isolate() -> bool:
    """Whether this host can give a call its own namespaces: Linux, as root or with user
    namespaces open to this user, and namespaces that really can be made (a container may
    refuse them even to root; Lambda refuses them). Found out once, by running a call."""
    if sys.platform != "linux":
        return False
    answer = _run("python", "pass", timeout=10, memory_mb=256, isolate=True)
    return "error" not in answer and set(ISOLATION) <= set(answer["walls"])


def _runtime_folders(executable: str) -> list[str]:
    """The folders the code's interpreter needs, bound read-only into its root."""
    folders = [path for path in RUNTIME_FOLDERS if os.path.lexists(path)]
    prefix = os.path.dirname(os.path.dirname(executable))  # …/bin/python → …
    if not any(prefix == f or prefix.startswith(f + "/") for f in folders):
        folders.append(prefix)
    if os.path.exists("/etc/ld.so.cache"):  # how the loader finds the system's libraries
        folders.append("/etc/ld.so.cache")
    return folders


def _hidden(binds: list[str]) -> list[str]:
    """Host paths the code must not see, for the probe: this project, the caller's folder
    and the host's /etc — those the code's root does not carry (its own /tmp, /dev, /proc
    and the runtime's folders it does)."""
    carried = [*binds, "/tmp", "/var", "/dev", "/proc"]
    candidates = [os.path.dirname(JAIL), os.getcwd(), "/etc/passwd"]
    return [
        path
        for path in candidates
        if path != "/" and not any(path == c or path.startswith(c + "/") for c in carried)
    ]


def _command(language: str, memory_mb: int, isolate: bool) -> tuple[list[str], str] | str:
    if language == "python":
        python = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
        return [python if isolate else sys.executable, "-I", "-S", "-c", PYTHON_WRAPPER], "main.py"
    if language == "javascript":
        node = shutil.which("node")
        if node is None:
            return "javascript needs Node.js, which this sandbox does not have"
        # V8 reserves far more address space than it uses: its heap is capped instead
        return [os.path.realpath(node), f"--max-old-space-size={memory_mb}", "-e", JS_WRAPPER], (
            "main.js"
        )
    return f"language must be python or javascript, not {language!r}"


def _read_all(
    process: subprocess.Popen[bytes], pipes: dict[str, int], deadline: float
) -> tuple[dict[str, bytes], bool]:
    """Everything each pipe carries until all close or the deadline passes (then the jail is
    killed); each capped, so a flood costs reading, never memory."""
    caps = {"stdout": OUTPUT_CHARS * 4, "stderr": OUTPUT_CHARS * 4, "result": OUTPUT_CHARS + 1}
    caps["status"] = 1_000_000
    data = {name: bytearray() for name in pipes}
    with selectors.DefaultSelector() as selector:
        for name, fd in pipes.items():
            selector.register(fd, selectors.EVENT_READ, name)
        while selector.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(process.pid, signal.SIGKILL)
                return {name: bytes(value) for name, value in data.items()}, True
            for key, _ in selector.select(left):
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    selector.unregister(key.fd)
                elif len(data[key.data]) < caps[key.data]:
                    data[key.data] += chunk[: caps[key.data] - len(data[key.data])]
    return {name: bytes(value) for name, value in data.items()}, False


def _cgroup(memory_mb: int) -> CallCgroup | None:
    with contextlib.suppress(OSError, ValueError):
        return make_call_cgroup((memory_mb + SUPERVISOR_MB) * 1024 * 1024)
    return None


def run_code(
    language: str, code: str, timeout: float = 30.0, memory_mb: int = 256, isolate: bool = True
) -> dict[str, Any]:
    """{exit_code, signal, timed_out, stdout, stderr, result, walls}; never raises for what
    the code does (a crash, a kill, a limit are all answers). `walls` says which held."""
    return _run(language, code, timeout, memory_mb, isolate and can_isolate())


def _run(language: str, code: str, timeout: float, memory_mb: int, isolate: bool) -> dict[str, Any]:
    command = _command(language, memory_mb, isolate)
    if isinstance(command, str):
        return {"error": command}
    argv, file = command
    memory = memory_mb if language == "python" else memory_mb * 16
    limits = {
        "cpu": int(timeout) + 1,
        "address_space": memory * 1024 * 1024,
        "processes": MAX_PROCESSES,
        "file_size": 10 * 1024 * 1024,
        "open_files": 64,
        "core": 0,
    }
    cgroup = _cgroup(memory_mb) if isolate else None
    folder = tempfile.mkdtemp(prefix="agentfn-sandbox-")  # the jail's, removed here
    result_read, result_write = os.pipe()
    status_read, status_write = os.pipe()
    orders = {
        "isolate": isolate,
        "workdir": folder,
        "command": argv,
        "file": file,
        "code": code,
        "timeout": timeout,
        "limits": limits,
        "uid": UID_FIRST + secrets.randbelow(UID_COUNT) if isolate else os.getuid(),
        "env": {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"},  # HOME: the jail's
        "allowed_env": ALLOWED_ENV,
        "binds": _runtime_folders(argv[0]),
        "hidden": _hidden(_runtime_folders(argv[0])),
        "tmp_mb": memory_mb,
        "cgroup": cgroup.__dict__ if cgroup else None,
        "status_fd": status_write,
        "result_fd": result_write,
    }
    try:
        process = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", LAUNCH, PROJECT],
            env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=(status_write, result_write),
            start_new_session=True,
        )
        os.close(status_write)
        os.close(result_write)
        assert process.stdin and process.stdout and process.stderr
        with contextlib.suppress(BrokenPipeError):
            process.stdin.write(json.dumps(orders).encode())
        process.stdin.close()
        pipes = {
            "stdout": process.stdout.fileno(),
            "stderr": process.stderr.fileno(),
            "result": result_read,
            "status": status_read,
        }
        data, overran = _read_all(process, pipes, time.monotonic() + timeout + SETUP_SECONDS)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)  # the jail's session: nothing may stay
        process.wait()
        process.stdout.close()
        process.stderr.close()
    finally:
        for fd in (result_read, status_read):
            with contextlib.suppress(OSError):
                os.close(fd)
        if cgroup is not None:
            cgroup.remove()
        shutil.rmtree(folder, ignore_errors=True)
    return _answer(data, overran)


def _answer(data: dict[str, bytes], overran: bool) -> dict[str, Any]:
    reports = []
    for line in data["status"].decode("utf-8", "replace").splitlines():
        with contextlib.suppress(ValueError):
            reports.append(json.loads(line))
    errors = [report["error"] for report in reports if "error" in report]
    if errors:
        return {"error": errors[0]}
    probed: list[str] = next(
        (report["walls"] for report in reports if "exit_code" not in report), []
    )
    final = next((report for report in reports if "exit_code" in report), None)
    if final is None and not overran:  # the supervisor ended without a word: not the code
        tail = data["stderr"].decode("utf-8", "replace")[-300:]
        return {"error": f"the sandbox's supervisor ended without an answer: {tail}"}
    if final is None:  # still running past the timeout and its grace: killed from here
        final = {"exit_code": -signal.SIGKILL, "timed_out": True, "walls": []}
    walls = {*probed, *final["walls"]}
    result = None
    if len(data["result"]) <= OUTPUT_CHARS:
        with contextlib.suppress(ValueError):
            result = json.loads(data["result"]) if data["result"] else None
    code = final["exit_code"]
    return {
        "exit_code": code,
        "signal": signal.Signals(-code).name if code is not None and code < 0 else None,
        "timed_out": final["timed_out"],
        "stdout": data["stdout"].decode("utf-8", "replace")[:OUTPUT_CHARS],
        "stderr": data["stderr"].decode("utf-8", "replace")[:OUTPUT_CHARS],
        "result": result,
        "walls": [wall for wall in WALL_ORDER if wall in walls],
    }


def main() -> None:
    """`python -m runtime.tools.sandbox.runner` reads {language, code, timeout, memory_mb} on
    stdin and prints the answer (how a host that cannot fork from its own process runs it)."""
    request = json.load(sys.stdin)
    print(json.dumps(run_code(**request)))


if __name__ == "__main__":
    main()
