"""What `sam build` ships: compiled code per function, third-party code once, in layers.

The Makefiles `agentfn build` stages are run here the way `sam build` runs them (the recipe,
with this interpreter as the runtime's Python); building a real layer needs pip and the
network, which the slow `sam build` test covers (tests/infra/sam/test_sam_tools.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from infra.sam import layer_build
from infra.sam.layers import A2A, DEPENDENCIES, MCP, POWERTOOLS, POWERTOOLS_API, SQL
from infra.sam.package import stage_package
from infra.sam.template import build_template
from runtime.spec import AgentfnSpec
from tests.helpers import DEMO_SPEC, ROOT, load_spec

TAG = sys.implementation.cache_tag  # e.g. cpython-311


def _recipe(makefile: Path, artifacts: Path) -> list[str]:
    """The command of the Makefile's rule, as make would run it."""
    line = next(x for x in makefile.read_text().splitlines() if x.startswith("\t"))
    command = line.strip().replace("$(PYTHON)", sys.executable)
    return command.replace('"$(ARTIFACTS_DIR)"', str(artifacts)).split()


def test_the_function_code_ships_bytecode_that_is_never_compiled_again(tmp_path: Path) -> None:
    spec = load_spec(DEMO_SPEC)
    package = stage_package(spec, ROOT, tmp_path)
    built = tmp_path / "built"
    subprocess.run(_recipe(package / "Makefile", built), cwd=package, check=True)
    assert sorted(p.name for p in built.iterdir()) == [
        "agentfn.spec.json",
        "data",  # the demo's SQLite database (databases.shop)
        "handlers",
        "knowledge_index",  # the BM25 index of knowledge_bases.policies
        "runtime",
        "tools",
    ]
    sources = list(built.rglob("*.py"))
    assert len(sources) > 50
    for source in sources:
        pyc = source.parent / "__pycache__" / f"{source.stem}.{TAG}.pyc"
        flags = int.from_bytes(pyc.read_bytes()[4:8], "little")
        assert flags == 0b01, source  # hash-based, unchecked: file times do not matter
    # Proof that a cold start reads no source: break every source, the imports still work.
    for source in sources:
        source.write_text("raise SystemExit('a source was compiled')\n")
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": str(built)}
    code = "import handlers.step, handlers.api, runtime.engine.loop, runtime.service; print('ok')"
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=built, env=env, capture_output=True, text=True
    )
    assert result.stdout.strip() == "ok", result.stderr


def _fake_distribution(site: Path, name: str, files: dict[str, str]) -> None:
    info = site / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    for path, text in files.items():
        (site / path).parent.mkdir(parents=True, exist_ok=True)
        (site / path).write_text(text)
    record = [f"{p},sha256=x,1" for p in files] + [f"{info.name}/RECORD,,"]
    (info / "RECORD").write_text("\n".join(record) + "\n")


def test_a_layer_keeps_one_copy_of_each_distribution_and_only_bytecode(tmp_path: Path) -> None:
    site = tmp_path / "python"
    _fake_distribution(site, "shared_dep", {"shared_dep/__init__.py": "VALUE = 1\n"})
    _fake_distribution(
        site,
        "own_pkg",
        {
            "own_pkg/__init__.py": "from shared_dep import VALUE\nfrom own_pkg.part import PART\n",
            "own_pkg/part.py": "PART = 'part'\n",
            "own_pkg/ui/bundle.js": "x" * 1000,
        },
    )
    (site / "bin").mkdir()
    assert layer_build.drop_distributions(site, {"shared-dep"}) == ["shared-dep"]
    assert not (site / "shared_dep").exists()
    assert not list(site.glob("shared_dep-*.dist-info"))
    layer_build.prune(site, ["bin", "own_pkg/ui/*.js"])
    layer_build.compile_sourceless(site)
    assert not list(site.rglob("*.py")) and not list(site.rglob("__pycache__"))
    assert sorted(p.name for p in (site / "own_pkg").iterdir()) == [
        "__init__.pyc",
        "part.pyc",
        "ui",
    ]
    assert not (site / "bin").exists() and not list((site / "own_pkg" / "ui").iterdir())
    # The layer beneath provides shared_dep; together they import, from bytecode alone.
    beneath = tmp_path / "beneath"
    (beneath / "shared_dep").mkdir(parents=True)
    (beneath / "shared_dep" / "__init__.py").write_text("VALUE = 1\n")
    env = {**os.environ, "PYTHONPATH": f"{site}{os.pathsep}{beneath}"}
    result = subprocess.run(
        [sys.executable, "-c", "import own_pkg; print(own_pkg.PART, own_pkg.VALUE)"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.stdout.strip() == "part 1", result.stderr


def test_pip_installs_wheels_for_the_functions_platform_only() -> None:
    args = layer_build.pip_platform_args(
        {"architecture": "arm64", "glibc_minor": 26, "python": "3.11"}
    )
    assert "--platform=manylinux2014_aarch64" in args
    assert "--platform=manylinux_2_26_aarch64" in args
    assert not any("2_27" in a or "x86_64" in a for a in args)
    assert {"--only-binary=:all:", "--python-version=3.11", "--implementation=cp"} <= set(args)


def test_every_function_takes_the_shared_layer_and_only_the_others_it_uses() -> None:
    spec = load_spec(DEMO_SPEC)
    template = build_template(spec)
    resources = template["Resources"]
    every = [{"Ref": DEPENDENCIES.logical_id}, {"Ref": POWERTOOLS.logical_id}]  # logs, metrics
    assert template["Globals"]["Function"]["Layers"] == every
    layers = {k for k, v in resources.items() if v["Type"] == "AWS::Serverless::LayerVersion"}
    assert layers == {
        DEPENDENCIES.logical_id,
        POWERTOOLS.logical_id,
        POWERTOOLS_API.logical_id,
        MCP.logical_id,
        SQL.logical_id,
        A2A.logical_id,  # the demo serves its agents over A2A and MCP
    }
    for layer in layers:
        assert resources[layer]["Metadata"]["BuildMethod"] == "makefile"
    functions = {k: v for k, v in resources.items() if v["Type"] == "AWS::Serverless::Function"}
    extra = {
        name: [r["Ref"] for r in f["Properties"].get("Layers", [])] for name, f in functions.items()
    }
    assert extra.pop("AgentShippingFunction") == [MCP.logical_id]  # the one agent with MCP
    # its resolver and idempotency; the MCP and A2A servers (the demo's `protocols`)
    assert extra.pop("ApiFunction") == [POWERTOOLS_API.logical_id, MCP.logical_id, A2A.logical_id]
    for agent in ("AgentAnalystFunction", "AgentHelpdeskFunction"):  # the database tools'
        assert extra.pop(agent) == [SQL.logical_id]
    assert all(layers == [] for layers in extra.values()), extra
    assert all(f["Metadata"] == {"BuildMethod": "makefile"} for f in functions.values())


def test_a_spec_without_mcp_has_no_mcp_layer() -> None:
    data = load_spec(DEMO_SPEC).to_compiled()
    data["defaults"]["protocols"] = {"a2a": None, "mcp": None}  # type: ignore[index]
    for agent in data["agents"].values():  # type: ignore[union-attr]
        agent["tools"] = [t for t in agent["tools"] if not t.startswith("mcp:")]
        agent["approval"] = []
    resources = build_template(AgentfnSpec.model_validate(data))["Resources"]
    assert MCP.logical_id not in json.dumps(resources)


def _split_powertools(tmp_path: Path) -> tuple[Path, Path]:
    """The two Powertools layers, cut from this venv's Powertools as the builder cuts them."""
    import aws_lambda_powertools

    installed = Path(aws_lambda_powertools.__file__).parent
    trees = []
    for layer in (POWERTOOLS, POWERTOOLS_API):
        site = tmp_path / layer.folder / "python"
        shutil.copytree(installed, site / "aws_lambda_powertools")
        if layer.only:
            layer_build.keep_only(site, list(layer.only))
        layer_build.prune(site, list(layer.prune), list(layer.spared))
        trees.append(site)
    return trees[0], trees[1]


def _files(site: Path) -> set[str]:
    return {str(p.relative_to(site)) for p in site.rglob("*") if p.is_file()}


def _imports(path: Path, code: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(path)}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)


def test_powertools_is_split_so_agents_ship_only_logger_and_metrics(tmp_path: Path) -> None:
    core, api = _split_powertools(tmp_path)
    assert not _files(core) & _files(api)  # each file in one layer only
    assert not (core / "aws_lambda_powertools" / "event_handler").exists()
    agents = "from aws_lambda_powertools import Logger, Metrics\n" + (
        "from aws_lambda_powertools.metrics.provider.cloudwatch_emf.cloudwatch import "
        "AmazonCloudWatchEMFProvider\nLogger(service='x').info('ok')\n"
    )
    result = _imports(core, agents)
    assert result.returncode == 0, result.stderr
    assert _imports(core, "import aws_lambda_powertools.event_handler").returncode != 0
    # Lambda merges the API function's layers into one /opt/python
    merged = tmp_path / "opt" / "python"
    for site in (core, api):
        shutil.copytree(site, merged, dirs_exist_ok=True)
    api_imports = (
        "from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response\n"
        "from aws_lambda_powertools.event_handler.openapi.params import Body, Header\n"
        "from aws_lambda_powertools.utilities.idempotency import idempotent_function\n"
        "from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer\n"
        "APIGatewayRestResolver(enable_validation=True)\n"
    )
    result = _imports(merged, api_imports)
    assert result.returncode == 0, result.stderr
    sizes = {
        s.parent.name: sum(p.stat().st_size for p in s.rglob("*") if p.is_file())
        for s in (core, api)
    }
    assert sizes["powertools"] < sizes["powertools-api"] / 3, sizes  # agents carry the small part


def test_a_layer_built_once_is_copied_from_the_cache_until_what_defines_it_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """AGENTFN_BUILD_CACHE: the second build of a layer copies the first's (the real install,
    pip and all, is what the `sam build` tests run); another description, or no cache, builds."""
    folder = tmp_path / "layer"
    folder.mkdir()
    described = {"requirements": ["shared-dep>=1"], "python": "3.11", "architecture": "arm64"}
    (folder / "layer.json").write_text(json.dumps(described))
    installs: list[dict[str, object]] = []

    def install(artifacts: Path, config: dict[str, object]) -> None:
        installs.append(config)
        (artifacts / "python" / "shared_dep").mkdir(parents=True)
        (artifacts / "python" / "shared_dep" / "__init__.pyc").write_bytes(
            b"built %d" % len(installs)
        )

    def files(artifacts: Path) -> dict[str, bytes]:
        return {
            str(p.relative_to(artifacts)): p.read_bytes()
            for p in artifacts.rglob("*")
            if p.is_file()
        }

    monkeypatch.setattr(layer_build, "_install_layer", install)
    monkeypatch.setenv(layer_build.CACHE_ENV, str(tmp_path / "cache"))
    layer_build.build_layer(tmp_path / "first", folder)
    layer_build.build_layer(tmp_path / "second", folder)
    assert len(installs) == 1
    assert (
        files(tmp_path / "second")
        == files(tmp_path / "first")
        == {"python/shared_dep/__init__.pyc": b"built 1"}
    )
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [
        layer_build.layer_key(json.dumps(described))
    ]  # nothing half-copied left beside it
    (folder / "layer.json").write_text(json.dumps({**described, "architecture": "x86_64"}))
    layer_build.build_layer(tmp_path / "third", folder)
    assert len(installs) == 2 and installs[1]["architecture"] == "x86_64"
    monkeypatch.delenv(layer_build.CACHE_ENV)
    layer_build.build_layer(tmp_path / "fourth", folder)
    assert len(installs) == 3


def test_function_code_built_once_is_copied_from_the_cache_until_a_file_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`sam build` builds each function of a `makefile` build alone, all from one package:
    with AGENTFN_BUILD_CACHE the first compiles it, the others copy it; any file changed
    (or added) is built again."""
    package = stage_package(load_spec(DEMO_SPEC), ROOT, tmp_path / "staged")
    names = ["agentfn.spec.json", "handlers", "runtime", "tools"]
    compiled: list[Path] = []
    real = layer_build._compile_code

    def counting(artifacts: Path, names: list[str], source: Path) -> None:
        compiled.append(artifacts)
        real(artifacts, names, source)

    monkeypatch.setattr(layer_build, "_compile_code", counting)
    monkeypatch.setenv(layer_build.CACHE_ENV, str(tmp_path / "cache"))
    layer_build.build_code(tmp_path / "first", names, package)
    layer_build.build_code(tmp_path / "second", names, package)
    assert compiled == [tmp_path / "first"]
    first = {p.relative_to(tmp_path / "first") for p in (tmp_path / "first").rglob("*")}
    assert first == {p.relative_to(tmp_path / "second") for p in (tmp_path / "second").rglob("*")}
    assert any(p.suffix == ".pyc" for p in first)  # compiled bytecode, copied
    (package / "tools" / "added.py").write_text("X = 1\n")
    layer_build.build_code(tmp_path / "third", names, package)
    assert compiled[-1] == tmp_path / "third"
    assert (tmp_path / "third" / "tools" / "__pycache__" / f"added.{TAG}.pyc").exists()
    (package / "agentfn.spec.json").write_text("{}")
    layer_build.build_code(tmp_path / "fourth", names, package)
    assert compiled[-1] == tmp_path / "fourth" and len(compiled) == 3


def test_what_the_layers_beneath_hold_is_resolved_once_with_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every layer above the first asks pip what the same `lower` requirements resolve to:
    with AGENTFN_BUILD_CACHE, pip answers once per platform and requirements."""
    asked: list[tuple[str, ...]] = []

    def pip(*args: str) -> subprocess.CompletedProcess[str]:
        asked.append(args)
        report = {
            "install": [{"metadata": {"name": "Pydantic_Core"}}, {"metadata": {"name": "httpx"}}]
        }
        return subprocess.CompletedProcess(args, 0, json.dumps(report), "")

    monkeypatch.setattr(layer_build, "_pip", pip)
    monkeypatch.setenv(layer_build.CACHE_ENV, str(tmp_path / "cache"))
    config: dict[str, object] = {"architecture": "arm64", "glibc_minor": 26, "python": "3.11"}
    lower = ["pydantic>=2.7,<3", "httpx>=0.27,<1"]
    assert layer_build.lower_distributions(config, lower) == {"pydantic-core", "httpx"}
    assert layer_build.lower_distributions(config, lower) == {"pydantic-core", "httpx"}
    assert len(asked) == 1 and "--dry-run" in asked[0]
    layer_build.lower_distributions({**config, "architecture": "x86_64"}, lower)
    layer_build.lower_distributions(config, lower[:1])
    assert len(asked) == 3  # another platform, other requirements: asked again
    monkeypatch.delenv(layer_build.CACHE_ENV)
    layer_build.lower_distributions(config, lower)
    assert len(asked) == 4
