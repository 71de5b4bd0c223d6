"""Loading the compiled spec into the run-time structs, without pydantic.

A deployed function reads `agentfn.spec.json` (written by `agentfn build` from a validated
spec) with `load_compiled`: msgspec builds the structs, checking only JSON types, so a cold
start neither imports pydantic nor builds a model. In process, the engine is given either
form and runs on this one (`runtime_spec`): a validated spec makes its structs once.
"""

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from runtime.spec.plain.root import AgentfnSpec
from runtime.spec.shared import compiled_hash
from runtime.structs import load as load_struct

if TYPE_CHECKING:
    from runtime.spec import root

    #: Either form of a spec, where the engine's code is handed one (`runtime_spec` makes
    #: the structs of a validated one).
    EitherSpec: TypeAlias = AgentfnSpec | root.AgentfnSpec
else:
    EitherSpec = AgentfnSpec  # for annotations only: the validating models stay unimported


def load(data: dict[str, Any], *, digest: str | None = None) -> AgentfnSpec:
    """The spec a compiled JSON document (`AgentfnSpec.to_compiled()`) holds. Its hash is
    the document's, which is what the validated spec's `spec_hash()` gives."""
    spec = load_struct(AgentfnSpec, data)  # first use under runtime.structs' lock
    spec.__dict__["_digest"] = digest or compiled_hash(data)
    return spec


def load_compiled(path: str | Path) -> AgentfnSpec:
    """Load the compiled spec JSON written by `agentfn build`: no YAML, no validation (done
    at build time) and no pydantic; relative paths start from the file's folder."""
    spec = load(json.loads(Path(path).read_text(encoding="utf-8")))
    return spec.at_project(Path(path).resolve().parent)


def runtime_spec(spec: EitherSpec) -> AgentfnSpec:
    """The spec the engine runs on: this one, or a validated spec's structs (made once)."""
    return spec if isinstance(spec, AgentfnSpec) else spec.to_runtime()
