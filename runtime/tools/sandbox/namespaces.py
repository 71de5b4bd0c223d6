"""The namespaces and the root of a `code_execute` call, by system call (ctypes on libc):
what the jail needs and nothing else, standard library only — it runs in the jail's
interpreter, started with -I -S, before the code and outside any virtualenv."""

from __future__ import annotations

import ctypes
import os
import sys
from typing import Any

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWUSER = 0x20000000, 0x40000000, 0x10000000
NAMESPACES = CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWPID | CLONE_NEWNET
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_MOVE, MS_REC, MS_PRIVATE = 32, 4096, 8192, 16384, 1 << 18
MS_NOATIME, MS_NODIRATIME, MS_RELATIME = 1024, 2048, 1 << 21
# a bind's flags that a user namespace may not drop (statvfs's ST_* bits → MS_* bits)
KEPT_FLAGS = {2: MS_NOSUID, 4: MS_NODEV, 8: MS_NOEXEC, 1024: MS_NOATIME, 2048: MS_NODIRATIME}
KEPT_FLAGS[4096] = MS_RELATIME
MNT_DETACH = 2
PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41, "ppc64le": 203, "s390x": 217}
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 1, 4, 36, 38
DEVICES = ("null", "zero", "full", "random", "urandom")

LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform == "linux" else None


def call(name: str, *args: Any) -> None:
    """libc's `name(*args)`, an OSError naming it when it fails (or on a platform without)."""
    if LIBC is None or getattr(LIBC, name)(*args) != 0:
        errno = ctypes.get_errno() if LIBC is not None else 0
        raise OSError(errno, f"{name}{args[:2]}: {os.strerror(errno)}")


def _bytes(text: str | None) -> bytes | None:
    return text.encode() if text is not None else None


def mount(source: str | None, target: str, kind: str | None, flags: int, data: str = "") -> None:
    """mount(2)."""
    call("mount", _bytes(source), _bytes(target), _bytes(kind), flags, _bytes(data))


def bind(root: str, source: str, read_only: bool = True) -> None:
    """`source` at the same path under `root`, read-only and nosuid, keeping the flags a user
    namespace may not drop; a symlink is copied as a symlink."""
    target = root + source
    if os.path.islink(source):  # /bin -> usr/bin on a merged-/usr system
        os.makedirs(os.path.dirname(target), exist_ok=True)
        os.symlink(os.readlink(source), target)
        return
    if os.path.isdir(source):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        open(target, "a").close()
    mount(source, target, None, MS_BIND)
    flags = MS_BIND | MS_REMOUNT | MS_NOSUID | (MS_RDONLY if read_only else 0)
    held = os.statvfs(source).f_flag
    flags |= sum(flag for bit, flag in KEPT_FLAGS.items() if held & bit)
    mount(None, target, None, flags)


def build_root(root: str, binds: list[str], tmp_mb: int) -> None:
    """A root of the call's own: nothing of the host but the runtime's folders, read-only."""
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=4m,mode=755")
    for source in binds:
        if os.path.lexists(source):
            bind(root, source)
    os.makedirs(root + "/proc")
    mount("proc", root + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=2")
    os.makedirs(root + "/dev")
    mount("tmpfs", root + "/dev", "tmpfs", MS_NOSUID, "size=64k,mode=755")
    for device in DEVICES:
        bind(root, "/dev/" + device, read_only=False)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0")):
        os.symlink(target, f"{root}/dev/{name}")
    os.symlink("/proc/self/fd/1", root + "/dev/stdout")
    os.symlink("/proc/self/fd/2", root + "/dev/stderr")
    scratch = f"size={tmp_mb}m,mode=1777"
    for folder in ("/tmp", "/dev/shm"):
        os.makedirs(root + folder)
        mount("tmpfs", root + folder, "tmpfs", MS_NOSUID | MS_NODEV, scratch)
    os.makedirs(root + "/var", exist_ok=True)
    os.symlink("/tmp", root + "/var/tmp")
    mount(None, root + "/dev", None, MS_REMOUNT | MS_RDONLY | MS_NOSUID)
    mount(None, root, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
    enter(root)


def enter(root: str) -> None:
    """Makes `root` this namespace's root and drops the host's from it altogether
    (pivot_root, then a lazy unmount), so no unmount inside can ever uncover it."""
    os.chdir(root)
    number = PIVOT_ROOT.get(os.uname().machine)
    if number is None or LIBC is None:  # an architecture not listed: move and chroot
        mount(root, "/", None, MS_MOVE)
        os.chroot(".")
    else:
        if LIBC.syscall(number, b".", b".") != 0:
            errno = ctypes.get_errno()
            raise OSError(errno, f"pivot_root: {os.strerror(errno)}")
        call("umount2", b".", MNT_DETACH)
    os.chdir("/")


def write(path: str, text: str) -> None:
    with open(path, "w", encoding="ascii") as target:
        target.write(text)


def user_map(inside: int, outside: int, gid_outside: int) -> None:
    write("/proc/self/setgroups", "deny")
    write("/proc/self/uid_map", f"{inside} {outside} 1")
    write("/proc/self/gid_map", f"{inside} {gid_outside} 1")


def own_user_namespace(uid: int) -> None:
    """Without root: the code gets a user namespace of its own inside the call's, as `uid`,
    so it holds no capability over the call's mount, network or PID namespaces."""
    outside, gid_outside = os.geteuid(), os.getegid()
    call("prctl", PR_SET_DUMPABLE, 1, 0, 0, 0)  # else its own maps are not its to write
    call("unshare", CLONE_NEWUSER)
    user_map(uid, outside, gid_outside)
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)


def undumpable() -> None:
    """Nothing of the supervisor (its pipes, its memory) readable through /proc by the code,
    which may run as the same user."""
    if LIBC is not None:
        call("prctl", PR_SET_DUMPABLE, 0, 0, 0, 0)
