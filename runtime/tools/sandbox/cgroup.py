"""A memory cgroup per `code_execute` call, so that `memory_mb` bounds everything the call
runs together — not each process on its own, which eight forks multiplied by eight.

It is made inside the cgroup this process already belongs to (never elsewhere in the host's
tree): with cgroup v2 where the memory controller is delegated to it, else with the v1
memory hierarchy. When neither can be made (no root, a container without a writable cgroup
filesystem) the call runs without it, and its `walls` then lack "memory": the per-process
address-space limit and the per-call process limit still hold (at most their product).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

MOUNTS = "/proc/self/mounts"
OWN = "/proc/self/cgroup"
MEMINFO = "/proc/meminfo"


@dataclass(frozen=True)
class CallCgroup:
    """One call's cgroup: the jail joins it (`procs`) and checks `limit_file` reads `limit`."""

    directory: str
    procs: str
    limit_file: str
    limit: int
    hierarchy: str  # the controller field of /proc/self/cgroup: "" on v2, "memory" on v1
    relative: str  # its path as /proc/self/cgroup names it

    def remove(self) -> None:
        """Removes it once the call's processes are gone (the kernel lets go a moment later)."""
        for _ in range(50):
            try:
                os.rmdir(self.directory)
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.02)


def _mount_points() -> dict[str, str]:
    """{"v2": mount point, "memory": v1 memory mount point}, those that exist."""
    found: dict[str, str] = {}
    for line in Path(MOUNTS).read_text(encoding="utf-8").splitlines():
        fields = line.split()
        if len(fields) >= 4 and fields[2] == "cgroup2":
            found.setdefault("v2", fields[1])
        elif len(fields) >= 4 and fields[2] == "cgroup" and "memory" in fields[3].split(","):
            found.setdefault("memory", fields[1])
    return found


def _swap_in_use() -> bool:
    for line in Path(MEMINFO).read_text(encoding="ascii").splitlines():
        if line.startswith("SwapTotal:"):
            return int(line.split()[1]) > 0
    return True


def _place() -> tuple[str, str, str, str]:
    """(parent folder, hierarchy field, relative path, limit file name) or a ValueError."""
    mounts = _mount_points()
    for line in Path(OWN).read_text(encoding="ascii").splitlines():
        _, controllers, relative = line.split(":", 2)
        if controllers == "" and "v2" in mounts:
            parent = mounts["v2"] + relative.rstrip("/")
            enabled = Path(parent, "cgroup.subtree_control").read_text(encoding="ascii")
            if "memory" in enabled.split():
                return parent, "", relative.rstrip("/"), "memory.max"
        elif "memory" in controllers.split(",") and "memory" in mounts:
            parent = mounts["memory"] + relative.rstrip("/")
            return parent, controllers, relative.rstrip("/"), "memory.limit_in_bytes"
    raise ValueError("no memory cgroup this process may divide (v2 delegated, or v1)")


def make_call_cgroup(limit_bytes: int) -> CallCgroup:
    """A fresh cgroup limited to `limit_bytes` of memory (swap included); OSError/ValueError
    when this host cannot make one."""
    parent, hierarchy, relative, limit_name = _place()
    name = f"agentfn-sandbox-{secrets.token_hex(6)}"
    directory = os.path.join(parent, name)
    os.mkdir(directory)
    try:
        Path(directory, limit_name).write_text(str(limit_bytes), encoding="ascii")
        swap = "memory.swap.max" if hierarchy == "" else "memory.memsw.limit_in_bytes"
        swap_value = "0" if hierarchy == "" else str(limit_bytes)
        if Path(directory, swap).exists():
            Path(directory, swap).write_text(swap_value, encoding="ascii")
        elif _swap_in_use():
            raise ValueError("swap is on and its use cannot be limited: the limit would leak")
        limit = int(Path(directory, limit_name).read_text(encoding="ascii").strip())
    except (OSError, ValueError):
        with contextlib.suppress(OSError):
            os.rmdir(directory)
        raise
    return CallCgroup(
        directory=directory,
        procs=os.path.join(directory, "cgroup.procs"),
        limit_file=os.path.join(directory, limit_name),
        limit=limit,
        hierarchy=hierarchy,
        relative=f"{relative}/{name}",
    )


def memory_cgroup_missing() -> str | None:
    """Why no call can have a memory cgroup here, or None when one can be made."""
    try:
        make_call_cgroup(64 * 1024 * 1024).remove()
    except (OSError, ValueError) as exc:
        return str(exc)
    return None
