"""moto's packages that the embedded Step Functions interpreter imports but agentfn's state
machines never use, loaded only when something uses them (local only).

Why: moto's interpreter imports a module per service integration, and its AWS Batch one
does `from moto.batch.utils import JobStatus`. Importing `moto.batch` runs its `__init__`,
which imports Batch's backend, which imports EC2's, which loads EC2's AMI and region data
(~1.7 s of a 6.4 s `agentfn run` on this machine, every process: `agentfn run`, `dev`,
`eval`, every CLI test). agentfn's state machines call Lambda, DynamoDB and EventBridge,
never Batch.

`defer()` puts a stand-in for `moto.batch` in `sys.modules` whose `__path__` is the real
package's, so `moto.batch.utils` (a plain module) still imports as usual; the package's own
`__init__` runs the first time anything reads an attribute the stand-in does not have yet
(`moto.batch.batch_backends`, as moto's server does when a request for Batch arrives), and
from then on it is the real package. `python -X importtime` shows the difference.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
import types
from pathlib import Path
from typing import Any

#: The packages deferred: imported by moto's interpreter, never used by agentfn's stacks.
DEFERRED = ("moto.batch",)

_lock = threading.RLock()


class _Deferred(types.ModuleType):
    """A package whose `__init__` runs on the first read of an attribute it lacks."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)  # the import system's probes (__path__ is set)
        with _lock:
            if type(self) is _Deferred:
                self.__class__ = types.ModuleType  # type: ignore[assignment]  # one load
                spec = self.__spec__
                assert spec is not None and spec.loader is not None
                spec.loader.exec_module(self)
        return getattr(self, name)


def defer() -> None:
    """Install the stand-ins (idempotent; a package already imported is left as it is)."""
    with _lock:
        for name in DEFERRED:
            if name in sys.modules:
                continue
            parent, _, _ = name.rpartition(".")
            package = importlib.import_module(parent)
            folder = Path(next(iter(package.__path__))) / name.rpartition(".")[2]
            init = folder / "__init__.py"
            spec = importlib.util.spec_from_file_location(
                name, init, submodule_search_locations=[str(folder)]
            )
            assert spec is not None
            module = _Deferred(name)
            module.__spec__ = spec
            module.__loader__ = spec.loader
            module.__file__ = str(init)
            module.__path__ = [str(folder)]
            module.__package__ = name
            sys.modules[name] = module
            setattr(package, name.rpartition(".")[2], module)  # as an import would
