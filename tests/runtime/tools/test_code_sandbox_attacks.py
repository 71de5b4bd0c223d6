"""code_execute's local sandbox under the second round of attacks (issue 22, points 2, 4, 5):
each test performs the attack as sandboxed code would, against the real runner (a real jail
process, real namespaces, a real memory cgroup), and checks that it fails. They need root on
Linux — where a wall cannot be made here, the test says why it is skipped."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from runtime.tools.sandbox.jail import probe_walls
from runtime.tools.sandbox.runner import can_isolate, memory_cgroup_missing, run_code
from tests.helpers import run_agentfn

ROOT_ONLY = "no namespaces here (they need Linux, and root or user namespaces open to this user)"
needs_isolation = pytest.mark.skipif(not can_isolate(), reason=ROOT_ONLY)
needs_memory_wall = pytest.mark.skipif(
    not can_isolate() or memory_cgroup_missing() is not None,
    reason=f"no memory cgroup for the whole call: {memory_cgroup_missing() or ROOT_ONLY}",
)


def _pids_running(marker: str) -> list[int]:
    """The host's processes whose command line carries `marker` (a value only one test uses)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmdline:
                found.append(int(entry))
    return found


@pytest.fixture
def leftovers() -> Iterator[list[str]]:
    """Markers of processes a test's sandboxed code starts: any still running afterwards is
    killed by its pid (so a failing test leaves nothing behind)."""
    markers: list[str] = []
    yield markers
    for marker in markers:
        for pid in _pids_running(marker):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture
def open_folder() -> Iterator[Path]:
    """A world-readable folder outside any 0700 parent, as a project checkout usually is."""
    folder = Path(tempfile.mkdtemp(prefix="agentfn-host-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


# --- point 2: the answer never carries a file the code itself could not read ---------------


@needs_isolation
def test_a_result_symlink_to_a_root_only_file_is_not_read_back(open_folder: Path) -> None:
    secret = open_folder / "root-only.json"
    secret.write_text(json.dumps({"secret": "ROOT ONLY FILE"}))
    secret.chmod(0o600)
    code = f"import os\nos.symlink({str(secret)!r}, 'result.json')\nprint('linked')"
    answer = run_code("python", code)
    assert "ROOT ONLY FILE" not in json.dumps(answer)
    assert answer["result"] is None
    # and the hand-over itself still works
    assert run_code("python", "result = {'n': 1}")["result"] == {"n": 1}


# --- point 4: nothing a call started outlives it, nor reaches a later call ----------------


SETSID_SLEEPER = """
import os
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        {detach}os.execv('/bin/sleep', ['sleep', '{seconds}'])
    os._exit(0)
{main}
"""
DETACH = "null = os.open('/dev/null', os.O_WRONLY); os.dup2(null, 1); os.dup2(null, 2); "


BOTH_PATHS = pytest.mark.parametrize(
    "isolate",
    [pytest.param(True, marks=needs_isolation, id="isolated"), pytest.param(False, id="plain")],
)


@BOTH_PATHS
def test_a_setsid_grandchild_is_killed_with_its_call(isolate: bool, leftovers: list[str]) -> None:
    marker = f"41.04{int(isolate)}7"
    leftovers.append(marker)
    code = SETSID_SLEEPER.format(seconds=marker, main="print('done')", detach=DETACH)
    answer = run_code("python", code, isolate=isolate)
    assert answer["exit_code"] == 0 and "cleanup" in answer["walls"]
    time.sleep(0.3)
    assert _pids_running(marker) == []


@BOTH_PATHS
def test_a_grandchild_holding_stdout_does_not_stretch_the_timeout(
    isolate: bool, leftovers: list[str]
) -> None:
    markers = [f"23.04{int(isolate)}9", f"23.04{int(isolate)}1"]
    leftovers.extend(markers)
    started = time.monotonic()
    slow = run_code(
        "python",
        SETSID_SLEEPER.format(seconds=markers[0], main="import time\ntime.sleep(20)", detach=""),
        timeout=2,
        isolate=isolate,
    )
    assert slow["timed_out"] and time.monotonic() - started < 5
    started = time.monotonic()
    quick = run_code(
        "python",
        SETSID_SLEEPER.format(seconds=markers[1], main="print('bye')", detach=""),
        timeout=2,
        isolate=isolate,
    )
    assert quick["stdout"] == "bye\n" and time.monotonic() - started < 5
    time.sleep(0.3)
    assert _pids_running(markers[0]) == _pids_running(markers[1]) == []


def _as_nobody() -> None:
    os.setgroups([])
    os.setgid(65534)
    os.setuid(65534)


SYSTEM_PYTHON = shutil.which("python3", path="/usr/bin:/bin") or "python3"


def _nobody_cannot(python: str, isolate: bool) -> str | None:
    """Why the runner cannot be tried as nobody here (with `python`), or None."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "trying the runner as another user needs root (without root it is the default)"
    check = subprocess.run([python, "-c", "pass"], preexec_fn=_as_nobody, check=False)
    if check.returncode != 0:
        return f"{python} does not start as nobody"
    if isolate and shutil.which("unshare") is None:
        return "no unshare (util-linux) to check for user namespaces"
    if isolate:
        userns = ["unshare", "--user", "--map-root-user", "--pid", "--fork", "--net", "true"]
        if subprocess.run(userns, preexec_fn=_as_nobody, check=False).returncode != 0:
            return "this kernel gives no user namespaces to an unprivileged user"
    return None


def _as_nobody_request(python: str, body: dict[str, object]) -> dict[str, object]:
    """One call through `python -m runtime.tools.sandbox.runner`, as nobody."""
    done = subprocess.run(
        [python, "-c", "from runtime.tools.sandbox.runner import main; main()"],
        input=json.dumps(body),
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path(__file__).parents[3])},
        cwd="/",
        preexec_fn=_as_nobody,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return dict(json.loads(done.stdout))


@pytest.mark.skipif(
    _nobody_cannot(sys.executable, False) is not None,
    reason=str(_nobody_cannot(sys.executable, False)),
)
def test_without_namespaces_the_call_still_ends_everything_it_started(
    leftovers: list[str],
) -> None:
    """The deployed sandbox function (Lambda: no root, no namespaces) runs this path: every
    process the code starts still dies with the call, the wait on output is bounded, and
    `walls` says exactly what held."""
    leftovers.extend(["44.0441", "44.0443"])
    code = SETSID_SLEEPER.format(
        seconds="44.0441", main="import os\nresult = os.getuid()", detach=DETACH
    )
    plain = {"language": "python", "timeout": 5, "isolate": False}
    answer = _as_nobody_request(sys.executable, {**plain, "code": code})
    assert answer["result"] == 65534
    assert answer["walls"] == ["limits", "environment", "cleanup"]
    started = time.monotonic()
    held = SETSID_SLEEPER.format(seconds="44.0443", main="print('bye')", detach="")
    quick = _as_nobody_request(sys.executable, {**plain, "code": held, "timeout": 2})
    assert quick["stdout"] == "bye\n" and time.monotonic() - started < 5
    time.sleep(0.3)
    assert _pids_running("44.0441") == _pids_running("44.0443") == []


@pytest.mark.skipif(
    _nobody_cannot(SYSTEM_PYTHON, True) is not None,
    reason=str(_nobody_cannot(SYSTEM_PYTHON, True)),
)
def test_without_root_user_namespaces_give_the_same_walls_but_user(
    open_folder: Path, leftovers: list[str]
) -> None:
    """A developer's Linux machine: no root, but user namespaces. The call gets its network,
    its root and its processes (not another uid outside: `user` is not claimed), and the
    attacks of the root tests fail the same way."""
    dotenv = open_folder / ".env"
    dotenv.write_text("API_KEY=sk-from-the-project\n")
    dotenv.chmod(0o644)
    leftovers.append("44.0447")
    code = SETSID_SLEEPER.format(
        seconds="44.0447",
        main=(
            f"import os\nprint(open({str(dotenv)!r}).read() if os.path.exists({str(dotenv)!r})"
            " else 'hidden')\nos.wait()\n"  # the detaching child gone: itself and the sleeper
            "result = [p for p in os.listdir('/proc') if p.isdigit()]"
        ),
        detach=DETACH,
    )
    answer = _as_nobody_request(SYSTEM_PYTHON, {"language": "python", "code": code})
    assert answer["walls"] == [
        "network",
        "filesystem",
        "processes",
        "limits",
        "environment",
        "cleanup",
    ], answer
    assert answer["stdout"] == "hidden\n" and len(answer["result"]) <= 2
    time.sleep(0.3)
    assert _pids_running("44.0447") == []


POISONER = """
import glob, os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        end = time.time() + 6
        while time.time() < end:
            for folder in glob.glob(os.path.dirname(os.getcwd()) + '/*') + [os.getcwd()]:
                try:
                    with open(folder + '/result.json', 'w') as out:
                        out.write('"TAMPERED BY AN EARLIER RUN"')
                except OSError:
                    pass
            time.sleep(0.005)
    os._exit(0)
for name in ('/tmp/left-behind', '/dev/shm/left-behind', '/var/tmp/left-behind'):
    try:
        open(name, 'w').write('x')
    except OSError:
        pass
"""


@needs_isolation
def test_an_earlier_call_cannot_reach_a_later_call() -> None:
    run_code("python", POISONER)
    later = run_code(
        "python",
        "import os, time\ntime.sleep(0.5)\n"
        "print([p for p in ('/tmp/left-behind', '/dev/shm/left-behind', '/var/tmp/left-behind')"
        " if os.path.exists(p)])",
    )
    assert later["result"] is None, later
    assert later["stdout"] == "[]\n", later


# --- point 5: the walls hold for the whole call -------------------------------------------


HOGS = """
import os, time
children = []
for _ in range(6):
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        block = b'x' * (150 * 1024 * 1024)   # really resident, not just reserved
        os.write(write, b'1')
        time.sleep(6)
        os._exit(0)
    os.close(write)
    children.append((pid, read))
reported = [pid for pid, read in children if os.read(read, 1)]
time.sleep(0.5)
result = sum(1 for pid in reported if os.waitpid(pid, os.WNOHANG) == (0, 0))  # holding now
"""


@needs_memory_wall
def test_memory_is_bounded_for_the_whole_call_not_per_process() -> None:
    answer = run_code("python", HOGS, timeout=15, memory_mb=256)
    assert answer["result"] is not None, answer
    assert answer["result"] * 150 <= 256, f"{answer['result']} processes held 150 MB each at once"
    assert "memory" in answer["walls"]


@needs_isolation
def test_a_unix_socket_outside_is_out_of_reach(open_folder: Path) -> None:
    path = open_folder / "host.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    path.chmod(0o777)  # only the sandbox's walls may stop the code, not the socket's mode
    server.listen(1)
    server.settimeout(8)
    accepted: list[bool] = []

    def serve() -> None:
        try:
            connection, _ = server.accept()
        except OSError:
            return
        accepted.append(True)
        connection.sendall(b"HOST SOCKET ANSWERED")
        connection.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    code = (
        "import socket\ns = socket.socket(socket.AF_UNIX)\n"
        f"s.connect({str(path)!r})\nprint(s.recv(100))"
    )
    answer = run_code("python", code, timeout=5)
    server.close()
    thread.join(2)
    assert accepted == [] and "HOST SOCKET" not in answer["stdout"], answer


@needs_isolation
def test_world_readable_project_files_are_hidden(open_folder: Path) -> None:
    dotenv = open_folder / ".env"
    dotenv.write_text("API_KEY=sk-from-the-project\n")
    dotenv.chmod(0o644)
    answer = run_code("python", f"print(open({str(dotenv)!r}).read())")
    assert "sk-from-the-project" not in answer["stdout"]
    assert "FileNotFoundError" in answer["stderr"]
    listing = run_code("python", "import os\nresult = sorted(os.listdir('/'))")["result"]
    assert "work" not in listing and "home" not in listing, listing


@needs_isolation
def test_other_processes_and_their_command_lines_are_hidden() -> None:
    witness = subprocess.Popen(["/bin/sh", "-c", "sleep 31; : host-secret-argument"])
    try:
        code = (
            "import os\nseen = []\nfor pid in filter(str.isdigit, os.listdir('/proc')):\n"
            "    try:\n        seen.append(open(f'/proc/{pid}/cmdline').read())\n"
            "    except OSError:\n        pass\nresult = seen"
        )
        answer = run_code("python", code)
    finally:
        witness.kill()
        witness.wait()
    assert "host-secret-argument" not in json.dumps(answer), answer
    assert len(answer["result"]) <= 2, answer["result"]  # itself (and at most its supervisor)


@needs_isolation
def test_walls_name_what_held_in_that_call(monkeypatch: pytest.MonkeyPatch) -> None:
    full = {"network", "filesystem", "processes", "user", "limits", "environment", "cleanup"}
    if os.geteuid() != 0:  # namespaces from a user namespace: the uid outside is the caller's
        full.remove("user")
    walls = set(run_code("python", "print(1)")["walls"])
    assert full <= walls
    assert ("memory" in walls) == (memory_cgroup_missing() is None)
    outside = set(run_code("python", "print(1)", isolate=False)["walls"])
    assert outside.isdisjoint({"network", "filesystem", "processes", "user", "memory"})
    assert {"limits", "environment"} <= outside
    # without a memory cgroup the call runs, and says memory was held per process only
    monkeypatch.setattr("runtime.tools.sandbox.cgroup.MOUNTS", "/nonexistent-mounts")
    without = set(run_code("python", "print(1)")["walls"])
    assert "memory" not in without and full <= without


def test_the_probe_reports_what_it_finds_not_what_was_asked() -> None:
    """Run in the test's own process (the host: its network, its files, its processes), the
    probe that vouches for each wall finds none of the isolation walls."""
    here = probe_walls(
        isolate=True,
        uid=os.getuid() + 1,
        hidden=[str(Path(__file__).parent)],
        limits={},
        env_keys=sorted(os.environ),
        allowed_env=["PATH"],
    )
    assert {"network", "filesystem", "processes", "user", "environment"}.isdisjoint(here)


HELD_OPEN_RUN = """\
version: 1
models:
  coder: {provider: scripted, script: [
    {tool_calls: [{name: code_execute, arguments: {language: python, timeout: 3, code: "CODE"}}]},
    {text: "Ran it."}]}
agents:
  coder:
    description: Runs code.
    model: coder
    tools: ["builtin:code_execute"]
"""


@needs_isolation
def test_agentfn_run_ends_soon_after_the_codes_timeout(
    tmp_path: Path, leftovers: list[str]
) -> None:
    """The issue's run: `timeout: 3`, a setsid grandchild holding stdout; `agentfn run` took
    41 s (the agent's 30 s tool timeout, then the wait for the pipe). Now the call answers
    at its timeout and the run ends a few seconds later."""
    leftovers.append("45.0437")
    code = SETSID_SLEEPER.format(seconds="45.0437", main="import time\ntime.sleep(60)", detach="")
    spec = tmp_path / "agents.yaml"
    spec.write_text(HELD_OPEN_RUN.replace("CODE", json.dumps(code)[1:-1]))
    started = time.monotonic()
    done = run_agentfn("run", "coder", "go", "-f", str(spec), "--json")
    took = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    (call,) = json.loads(done.stdout)["tool_calls"]
    assert call["output"]["timed_out"] is True
    assert took < 25, f"agentfn run took {took:.1f} s"  # 33 s on main with a 25 s sleeper
    assert _pids_running("45.0437") == []
