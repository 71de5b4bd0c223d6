"""The supervisor of one `code_execute` call. The runner starts it with `python -I -S` (this
module and runtime.tools.sandbox.namespaces use the standard library only: no virtualenv),
sends its orders as one JSON object on stdin, and reads its answers on the status pipe, one
JSON line each: `{"walls": [...]}` written by the code's own process just before it becomes
the code (probed there, with the code's rights and namespaces, never assumed), then
`{"exit_code", "timed_out", "walls"}` when the call is over.

With `isolate` (Linux, as root): the call joins its memory cgroup and takes new PID,
network, IPC and UTS namespaces; the supervisor becomes PID 1 there, takes a mount namespace,
builds a root of its own (a tmpfs with the interpreter's folders bound read-only, a private
/tmp and /dev/shm, a /proc that shows only the call's processes), pivots into it, and forks
the code as a uid of its own, with no capabilities. When the code ends or its time is up,
PID 1 kills what is left and exits; the kernel then kills anything still in the namespace.
Without root, the same happens from a user namespace of the call's own (the caller mapped to
its root), and the code runs in a nested one, as another uid there, with no capability over
the call's namespaces. Without `isolate` (Lambda, macOS) the supervisor is a child subreaper
instead: whatever the code forks, setsid or not, comes back to it and is killed before the
answer.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import resource
import select
import signal
import sys
import time
from typing import Any

from runtime.tools.sandbox import namespaces as ns

LIMITS = {
    "cpu": resource.RLIMIT_CPU,
    "address_space": resource.RLIMIT_AS,
    "processes": resource.RLIMIT_NPROC,
    "file_size": resource.RLIMIT_FSIZE,
    "open_files": resource.RLIMIT_NOFILE,
    "core": resource.RLIMIT_CORE,
}
ISOLATION = ("network", "filesystem", "processes", "user")
WORKDIR = "/tmp"  # inside the call's own root: its one writable folder, private to the call


# --- probes: run in the code's own process, after it has its final rights ---------------


def _only_loopback() -> bool:
    """No interface but loopback in this process's network namespace."""
    try:
        with open("/proc/self/net/dev", encoding="ascii") as table:
            names = [line.split(":", 1)[0].strip() for line in table.readlines()[2:]]
    except OSError:
        return False
    return names == ["lo"]


def _alone() -> bool:
    """Only this process (and its PID 1) in /proc: a PID namespace, and a fresh /proc."""
    try:
        pids = {int(entry) for entry in os.listdir("/proc") if entry.isdigit()}
    except OSError:
        return False
    return bool(pids) and pids <= {1, os.getpid()}


def _unprivileged(uid: int) -> bool:
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            fields = dict(line.split(":", 1) for line in status if ":" in line)
    except OSError:
        return False
    capabilities = [int(fields.get(key, "1").strip(), 16) for key in ("CapEff", "CapPrm")]
    ids = {*os.getresuid(), *os.getresgid()}
    return ids == {uid} and uid != 0 and os.getgroups() == [] and capabilities == [0, 0]


def probe_walls(
    isolate: bool,
    uid: int,
    hidden: list[str],
    limits: dict[str, int],
    env_keys: list[str],
    allowed_env: list[str],
) -> list[str]:
    """The walls that hold for the calling process, each checked rather than assumed."""
    walls = []
    if isolate:
        walls += ["network"] if _only_loopback() else []
        reachable = [path for path in hidden if os.path.lexists(path)]
        walls += ["filesystem"] if hidden and not reachable else []
        walls += ["processes"] if _alone() else []
        walls += ["user"] if _unprivileged(uid) else []
    held = {name: resource.getrlimit(LIMITS[name])[0] for name in limits}
    walls += ["limits"] if limits and held == limits else []
    walls += ["environment"] if set(env_keys) <= set(allowed_env) else []
    return walls


# --- the supervisor -----------------------------------------------------------------------


def _say(fd: int, message: dict[str, Any]) -> None:
    os.write(fd, (json.dumps(message) + "\n").encode())


def _join_cgroup(cgroup: dict[str, Any] | None) -> bool:
    """Joins the call's memory cgroup; true only if this process is now in it and its limit
    reads back as asked (every process the call starts inherits both)."""
    if not cgroup:
        return False
    try:
        with open(cgroup["procs"], "w", encoding="ascii") as procs:
            procs.write(str(os.getpid()))
        with open("/proc/self/cgroup", encoding="ascii") as own:
            member = any(
                line.split(":", 2)[1:] == [cgroup["hierarchy"], cgroup["relative"]]
                for line in own.read().splitlines()
            )
        with open(cgroup["limit_file"], encoding="ascii") as limit:
            return member and int(limit.read().strip()) == cgroup["limit"]
    except (OSError, ValueError):
        return False


def _children() -> list[int]:
    me, found = os.getpid(), []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as stat:
                    parent = int(stat.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if parent == me:
                found.append(int(entry))
    return found


def _kill_all(child: int, isolate: bool) -> bool:
    """Kills every process the call started; true once none is left (ECHILD)."""
    for _ in range(10_000):
        if isolate:  # PID 1: -1 reaches every process of the namespace but itself
            with contextlib.suppress(ProcessLookupError):
                os.kill(-1, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child, signal.SIGKILL)
        if sys.platform == "linux":  # a subreaper: orphans of any depth come back here
            for pid in _children():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return sys.platform == "linux"
    return False


def _exec_code(orders: dict[str, Any], status: int, result: int) -> None:
    """In the forked child: take the code's rights, probe, and become the code."""
    try:
        os.setsid()
        signal.pthread_sigmask(signal.SIG_SETMASK, set())
        os.dup2(result, 3)
        null = os.open("/dev/null", os.O_RDONLY)
        os.dup2(null, 0)
        with contextlib.suppress(OSError), open("/proc/self/oom_score_adj", "w") as adjust:
            adjust.write("1000")  # the memory limit's OOM killer takes the code, not PID 1
        for name, value in orders["limits"].items():
            resource.setrlimit(LIMITS[name], (value, value))
        uid = orders["uid"]
        if orders["isolate"] and orders["rootless"]:
            ns.own_user_namespace(uid)
        elif orders["isolate"]:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
        if ns.LIBC is not None:
            ns.call("prctl", ns.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        os.chdir(orders["workdir"])
        walls = probe_walls(
            orders["isolate"],
            uid,
            orders["hidden"],
            orders["limits"],
            list(orders["env"]),
            orders["allowed_env"],
        )
        if orders["rootless"] and "user" in walls:  # outside it is still the caller's uid
            walls.remove("user")
        required = ISOLATION[:3] if orders["rootless"] else ISOLATION
        missing = [wall for wall in required if orders["isolate"] and wall not in walls]
        if missing:  # the host promised them: run nothing rather than run without them
            _say(status, {"error": f"the sandbox's walls did not hold: {', '.join(missing)}"})
            os._exit(125)
        _say(status, {"walls": walls})
        os.closerange(4, status)  # the status pipe stays until exec (close-on-exec) to say
        os.closerange(status + 1, 1024)  # why, should exec fail
        os.set_inheritable(status, False)
        env = {**orders["env"], "HOME": orders["workdir"]}
        os.execve(orders["command"][0], orders["command"], env)
    except BaseException as exc:  # a child must never return into the supervisor
        try:
            _say(status, {"error": f"the code could not start: {exc}"})
        finally:
            os._exit(126)


def _wait_for(child: int, deadline: float) -> int | None:
    """The code's wait status, or None at the deadline; reaps orphans on the way. Wakes on
    SIGCHLD where the platform can wait for a signal with a timeout."""
    wakeable = hasattr(signal, "sigtimedwait")
    if wakeable:  # blocked, so that one arriving between two checks stays pending
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
    while True:
        pid, wait_status = os.waitpid(-1, os.WNOHANG)
        if pid == child:
            return wait_status
        if pid:
            continue  # an orphan the code left: reaped, and keep waiting for the code
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        if wakeable:
            signal.sigtimedwait({signal.SIGCHLD}, min(left, 1.0))
        else:
            time.sleep(min(left, 0.01))


def _supervise(orders: dict[str, Any], status: int, result: int, memory: bool) -> None:
    folder = orders["workdir"]
    with open(os.path.join(folder, orders["file"]), "w", encoding="utf-8") as source:
        source.write(orders["code"])
    if orders["isolate"] and not orders["rootless"]:
        os.chown(os.path.join(folder, orders["file"]), orders["uid"], orders["uid"])
    started = time.monotonic()
    child = os.fork()
    if child == 0:
        _exec_code(orders, status, result)
    os.close(result)  # only the code may hold the result pipe, so its end is the code's end
    code_status = _wait_for(child, started + orders["timeout"])
    cleaned = _kill_all(child, orders["isolate"])
    if code_status is None:  # timed out: the kill above ended it
        exit_code, timed_out = -signal.SIGKILL, True
    else:
        exit_code, timed_out = os.waitstatus_to_exitcode(code_status), False
    walls = [*(["memory"] if memory else []), *(["cleanup"] if cleaned else [])]
    _say(status, {"exit_code": exit_code, "timed_out": timed_out, "walls": walls})


def _isolated(orders: dict[str, Any], status: int, result: int, memory: bool) -> None:
    """Outside: the namespaces, then PID 1 of them; this process waits for it and tidies up."""
    root = orders["workdir"]  # the runner's empty folder: the new root's mount point
    uid, gid = os.geteuid(), os.getegid()
    flags = ns.NAMESPACES & ~ns.CLONE_NEWNS  # this process stays in the host's mount namespace
    ns.call("unshare", flags | (ns.CLONE_NEWUSER if orders["rootless"] else 0))
    if orders["rootless"]:  # root inside a user namespace of the call's own, and only there
        ns.user_map(0, uid, gid)
    ns.undumpable()
    lifeline_read, lifeline_write = os.pipe()
    init = os.fork()
    if init == 0:  # PID 1 of the new namespaces: never returns into the caller's code
        try:
            os.close(lifeline_write)
            ns.call("prctl", ns.PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            if select.select([lifeline_read], [], [], 0)[0]:  # the outer process is gone
                os._exit(1)
            ns.call("unshare", ns.CLONE_NEWNS)
            ns.build_root(root, orders["binds"], orders["tmp_mb"])
            _supervise({**orders, "workdir": WORKDIR}, status, result, memory)
        except BaseException as exc:
            _say(status, {"error": f"the sandbox could not be built: {exc!r}"})
        finally:
            os._exit(0)
    os.close(status)
    os.close(result)
    os.waitpid(init, 0)


def _plain(orders: dict[str, Any], status: int, result: int) -> None:
    """Without root: the runner's private folder, and a subreaper that takes back every
    orphan (the runner removes the folder, also if the code kills this process)."""
    if ns.LIBC is not None:
        ns.call("prctl", ns.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    ns.undumpable()
    _supervise(orders, status, result, memory=False)


def main() -> None:
    orders = json.load(sys.stdin)
    orders["rootless"] = os.geteuid() != 0
    # its own pipes, above the code's 0-3, and nothing readable through /proc by the code
    status = fcntl.fcntl(orders["status_fd"], fcntl.F_DUPFD, 10)
    result = fcntl.fcntl(orders["result_fd"], fcntl.F_DUPFD, 10)
    os.close(orders["status_fd"])
    os.close(orders["result_fd"])
    try:
        if orders["isolate"]:
            _isolated(orders, status, result, _join_cgroup(orders.get("cgroup")))
        else:
            _plain(orders, status, result)
    except OSError as exc:
        _say(status, {"error": f"the sandbox could not be set up: {exc}"})


if __name__ == "__main__":
    main()
