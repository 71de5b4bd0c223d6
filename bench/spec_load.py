"""The compiled spec's load alone, in a shipped package: CPU time of a fresh process from
before `from runtime.spec import load_compiled` to the loaded spec's hash (issue 26).

Run:  .venv/bin/python bench/cold_start.py --keep DIR     # builds DIR/compiled, kept
      .venv/bin/python bench/spec_load.py DIR [--tries N]

Each try is a new interpreter on the package's code and dependencies (bytecode, as shipped),
the garbage collector off; the figure is the best CPU time, with whether pydantic was
imported on the way. A package built from another commit measures that commit's loader.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

LOAD = """
import gc, sys, time
gc.disable()
cpu = time.process_time()
from runtime.spec import load_compiled
spec = load_compiled("agentfn.spec.json")
spec.spec_hash()
took = time.process_time() - cpu
print(took, any(m.split(".")[0] == "pydantic" for m in sys.modules))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kept", type=Path, help="the --keep DIR of bench/cold_start.py")
    parser.add_argument("--tries", type=int, default=9)
    args = parser.parse_args()
    code, deps = args.kept / "compiled" / "code", args.kept / "compiled" / "deps"
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1",
           "PYTHONPATH": os.pathsep.join([str(code), str(deps)])}  # fmt: skip
    command = [sys.executable, "-c", LOAD]
    runs = [
        subprocess.run(
            command, env=env, cwd=code, check=True, capture_output=True, text=True
        ).stdout.split()
        for _ in range(args.tries)
    ]
    best = min(float(cpu) for cpu, _ in runs)
    print(f"spec load alone, best of {args.tries}: {best * 1000:.1f} ms CPU; "
          f"pydantic imported: {runs[0][1]}; load average {os.getloadavg()[0]:.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
