"""Builds what `sam build` puts in the Lambda package: compiled code and dependency layers.

`agentfn build` copies this file next to each Makefile it stages (infra.sam.package), and
`sam build` runs it (`BuildMethod: makefile`) with the Lambda runtime's own Python
(`python3.13` on PATH, or in the build container with `--use-container`), so the bytecode
it writes is the bytecode the functions load. It uses the standard library only.

    python layer_build.py code  ARTIFACTS_DIR NAME...  # the function code: copy, compile
    python layer_build.py layer ARTIFACTS_DIR          # a layer, as layer.json describes it

Either is kept and reused when AGENTFN_BUILD_CACHE names a folder (CACHE_ENV).

The function code keeps its sources (tracebacks show the lines) next to `__pycache__`
bytecode marked `unchecked-hash`: the zip does not keep file times exactly, and a timestamp
check would make Python compile every module again on each cold start (where it cannot
write the result: the package is read-only). All bytecode, the layers' too, is compiled
without the column tables (`-X no_debug_ranges`, see `_compile`): a fifth smaller.

A layer is installed with pip for the functions' platform (Amazon Linux's glibc, the
architecture, the Python version: wheels only), without what the layers beneath it already
hold (`lower` requirements: one copy of each distribution), then compiled to bytecode that
replaces the sources (smaller than both, and nothing to compile at a cold start), less the
files nothing at run time reads (`prune`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

#: A folder where built layers and function code are kept, by what defines them (layer_key,
#: code_key): set, what was built once is copied from there by every later build of the same
#: thing (the other functions of the stack, a second `sam build`, two stacks that ship the
#: same layer: the test suite's). A layer's key holds its requirements as written, not what
#: they resolve to: a newer release of a dependency is not picked up until the folder is
#: emptied. Unset (the default), every build installs and compiles everything.
CACHE_ENV = "AGENTFN_BUILD_CACHE"


def build_code(artifacts: Path, names: list[str], source: Path = Path(".")) -> None:
    """Copy the code (`names`: folders and files of the package) and compile it in place;
    with CACHE_ENV set, copy it from there when the same code was built before (`sam build`
    builds every function of a `makefile` build on its own, each from the same package)."""
    cache = os.environ.get(CACHE_ENV, "").strip()
    kept = Path(cache) / f"code-{code_key(source, names)}" if cache else None
    if kept is not None and kept.is_dir():
        shutil.copytree(kept, artifacts, dirs_exist_ok=True)
        return
    _compile_code(artifacts, names, source)
    if kept is not None:
        _keep(artifacts, kept)


def code_key(source: Path, names: list[str]) -> str:
    """What built function code depends on: every file it copies (path and bytes), this
    recipe's own text, and the Python that compiles it."""
    digest = _recipe_digest()
    for name in names:
        path = source / name
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for file in files:
            if "__pycache__" in file.parts or file.suffix == ".pyc" or not file.exists():
                continue  # not copied (build_code's ignore)
            digest.update(f"{file.relative_to(source).as_posix()}\0".encode())
            digest.update(hashlib.sha256(file.read_bytes()).digest())
    return digest.hexdigest()[:32]


def _recipe_digest() -> Any:
    """A sha256 that starts with this file's own text and the Python that runs it."""
    digest = hashlib.sha256(Path(__file__).read_bytes())
    digest.update(f"{sys.version}|{sys.executable}\0".encode())
    return digest


def _compile_code(artifacts: Path, names: list[str], source: Path) -> None:
    artifacts.mkdir(parents=True, exist_ok=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in names:
        path = source / name
        if path.is_dir():
            shutil.copytree(path, artifacts / name, ignore=ignore, dirs_exist_ok=True)
        elif path.exists():
            shutil.copy2(path, artifacts / name)
    compiled = _compile(artifacts)
    if compiled.returncode != 0:
        raise SystemExit(f"the function code does not compile:\n{compiled.stdout}")


def pip_platform_args(config: dict[str, object]) -> list[str]:
    """Wheels for the runtime's platform: manylinux up to its glibc, its architecture and
    Python version, binary only (nothing is compiled for the wrong machine)."""
    arch = "aarch64" if config["architecture"] == "arm64" else "x86_64"
    glibc = int(str(config["glibc_minor"]))
    tags = [f"manylinux2014_{arch}"] + [f"manylinux_2_{n}_{arch}" for n in range(17, glibc + 1)]
    args = [f"--platform={tag}" for tag in tags]
    version = str(config["python"])
    return [*args, "--implementation=cp", f"--python-version={version}", "--only-binary=:all:"]


def _pip(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pip", "--disable-pip-version-check", *args]
    answer = subprocess.run(command, capture_output=True, text=True)
    if answer.returncode != 0:
        raise SystemExit(f"pip failed ({answer.returncode}): {answer.stderr.strip()[-2000:]}")
    return answer


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def lower_distributions(config: dict[str, object], requirements: list[str]) -> set[str]:
    """The distributions `requirements` resolve to (what the layers beneath hold); with
    CACHE_ENV set, the answer is kept there (every layer above the first asks it again)."""
    if not requirements:
        return set()
    platform = pip_platform_args(config)
    cache = os.environ.get(CACHE_ENV, "").strip()
    digest = _recipe_digest()
    digest.update("\0".join([*platform, "", *requirements]).encode())
    kept = Path(cache) / f"lower-{digest.hexdigest()[:32]}.json" if cache else None
    if kept is not None and kept.is_file():
        return set(json.loads(kept.read_text(encoding="utf-8")))
    with tempfile.TemporaryDirectory() as nowhere:  # pip wants a target for a platform
        answer = _pip(
            "install", "--dry-run", "--ignore-installed", "--quiet", "--report", "-",
            "--target", nowhere, *platform, *requirements,
        )  # fmt: skip
    report = json.loads(answer.stdout)
    names = {_normal(item["metadata"]["name"]) for item in report.get("install", [])}
    if kept is not None:
        kept.parent.mkdir(parents=True, exist_ok=True)
        scratch = kept.with_name(f".{kept.name}.{os.getpid()}")
        scratch.write_text(json.dumps(sorted(names)), encoding="utf-8")
        os.replace(scratch, kept)  # whole or not at all
    return names


def drop_distributions(target: Path, names: set[str]) -> list[str]:
    """Remove every installed distribution of `names` (its RECORD lists its files)."""
    dropped = []
    for info in sorted(target.glob("*.dist-info")):
        name = _normal(info.name[: -len(".dist-info")].rsplit("-", 1)[0])
        if name not in names:
            continue
        record = info / "RECORD"
        for line in record.read_text(encoding="utf-8").splitlines() if record.exists() else []:
            path = (target / line.split(",")[0]).resolve()
            if target.resolve() in path.parents and path.is_file():
                path.unlink()
        shutil.rmtree(info, ignore_errors=True)
        dropped.append(name)
    for folder in sorted((p for p in target.rglob("*") if p.is_dir()), reverse=True):
        if not any(folder.iterdir()):
            folder.rmdir()  # what the removed distributions leave empty
    return dropped


def prune(target: Path, patterns: list[str], spared: list[str] | None = None) -> None:
    """Delete what nothing at run time reads (scripts, a web UI's bundles, …), except the
    paths `spared` names (globs, like the patterns)."""
    kept = {path for pattern in spared or [] for path in target.glob(pattern)}
    for pattern in patterns:
        for path in target.glob(pattern):
            if path in kept:
                continue
            shutil.rmtree(path) if path.is_dir() else path.unlink()


def keep_only(target: Path, patterns: list[str]) -> None:
    """Keep only the paths `patterns` name (and the folders above them): a layer that adds
    parts of a distribution whose other parts a layer beneath holds. Lambda merges every
    layer into /opt, so one package's files may come from two layers, each file once."""
    kept = {path for pattern in patterns for path in target.glob(pattern)}
    for path in sorted(target.rglob("*"), reverse=True):
        inside = any(path == k or k in path.parents for k in kept)
        above = any(path in k.parents for k in kept)
        if inside or above:
            continue
        shutil.rmtree(path) if path.is_dir() else path.unlink()


def compile_sourceless(target: Path) -> None:
    """Bytecode in place of each source (`module.pyc` beside where `module.py` was). A file
    that does not compile (a test fixture, say) keeps its source."""
    for cache in list(target.rglob("__pycache__")):
        shutil.rmtree(cache)
    _compile(target, legacy=True)
    for source in target.rglob("*.py"):
        if source.with_suffix(".pyc").exists():
            source.unlink()


def _compile(target: Path, *, legacy: bool = False) -> subprocess.CompletedProcess[str]:
    """compileall of `target` into `unchecked-hash` bytecode (`legacy`: beside the sources,
    `module.pyc`), by an interpreter run with `-X no_debug_ranges`: the bytecode leaves out
    the column of every instruction, a fifth of its size zipped. Tracebacks keep the file,
    the line and (where the source ships) its text, without the `^^^` under the expression."""
    command = [sys.executable, "-X", "no_debug_ranges", "-m", "compileall", "-q"]
    command += ["--invalidation-mode", "unchecked-hash", *(["-b"] if legacy else []), str(target)]
    return subprocess.run(command, capture_output=True, text=True)


def build_layer(artifacts: Path, folder: Path = Path(".")) -> None:
    """Build the layer `layer.json` describes into `artifacts`; with CACHE_ENV set, copy it
    from there when it was built before (and keep it there once built)."""
    described = (folder / "layer.json").read_text(encoding="utf-8")
    cache = os.environ.get(CACHE_ENV, "").strip()
    kept = Path(cache) / layer_key(described) if cache else None
    if kept is not None and kept.is_dir():
        shutil.copytree(kept, artifacts, dirs_exist_ok=True)
        return
    _install_layer(artifacts, json.loads(described))
    if kept is not None:
        _keep(artifacts, kept)


def layer_key(described: str) -> str:
    """What a built layer depends on: its description (requirements, platform, pruning), this
    recipe's own text, and the Python that compiles its bytecode."""
    digest = _recipe_digest()
    digest.update(described.encode())
    return digest.hexdigest()[:32]


def _keep(artifacts: Path, kept: Path) -> None:
    """Copy the built layer to `kept` whole or not at all (a copy beside it, renamed): two
    builds of one layer at once both succeed, the first to finish is kept."""
    kept.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".building-", dir=kept.parent))
    try:
        shutil.copytree(artifacts, scratch, dirs_exist_ok=True)
        os.rename(scratch, kept)
    except OSError:  # kept by another build meanwhile
        shutil.rmtree(scratch, ignore_errors=True)


def _install_layer(artifacts: Path, config: dict[str, Any]) -> None:
    target = artifacts / "python"  # where Lambda puts a layer's Python code on sys.path
    target.mkdir(parents=True, exist_ok=True)
    own, lower = list(config["requirements"]), list(config.get("lower", []))
    with tempfile.TemporaryDirectory() as scratch:
        # One resolution for everything, so this layer's versions agree with those beneath.
        _pip(
            "install", "--quiet", "--no-compile", "--target", scratch,
            *pip_platform_args(config), *lower, *own,
        )  # fmt: skip
        drop_distributions(Path(scratch), lower_distributions(config, lower))
        for item in Path(scratch).iterdir():
            shutil.move(str(item), target / item.name)
    if config.get("only"):
        keep_only(target, list(config["only"]))
    prune(target, list(config.get("prune", [])), list(config.get("spared", [])))
    compile_sourceless(target)


def main(argv: list[str]) -> None:
    if len(argv) >= 2 and argv[0] == "code":
        build_code(Path(argv[1]), argv[2:])
    elif len(argv) == 2 and argv[0] == "layer":
        build_layer(Path(argv[1]))
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    os.environ.setdefault("PIP_NO_INPUT", "1")
    main(sys.argv[1:])
