"""The first invocation of a container: what makes it cheaper, in one place.

- The cyclic garbage collector is paused while it runs. It allocates hundreds of thousands
  of long-lived objects (Powertools, the engine's modules, the spec, botocore's service data
  and clients) and almost no garbage, and CPython runs a collection every 700 new objects,
  the older generations re-scanning all of them: a tenth of a cold start (bench/speed.py).
  Afterwards `gc.freeze()` moves what it built to the permanent generation, so no warm
  invocation's collection scans it again (it lives as long as the container).
- Pydantic's plugin discovery is off unless the function's environment says otherwise
  (`PYDANTIC_DISABLE_PLUGINS`): the first validator pydantic builds would otherwise read the
  entry points of every distribution on the path (the runtime's and every layer's).
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def first_invocation() -> Iterator[None]:
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()
