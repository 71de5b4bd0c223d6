"""How large a stack `agentfn build` makes, against CloudFormation's per-stack limits: for
generated specs of N demo-like agents (tests/infra/stack_specs.py), the resources agentfn
counts (infra/sam/limits.py) and those the real SAM transform makes (the SAM CLI's
translator, offline), outputs, IAM roles and template sizes; then the largest stack.

    .venv/bin/python bench/stack_limits.py [N ...]      # default: 1 50 100 110 130
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
os.environ.setdefault("AGENTFN_SAM", str(ROOT / ".tools" / "sam" / "bin" / "sam"))

from infra.sam import limits  # noqa: E402
from infra.sam.template import render  # noqa: E402
from tests.infra.cfn import sam_transform  # noqa: E402
from tests.infra.stack_specs import template_of, write_spec  # noqa: E402


def main(sizes: list[int]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        print("agents  counted  transform  outputs  roles  body KB  processed KB (estimate)")
        for n in sizes:
            template = template_of(write_spec(n, Path(folder) / str(n)))
            f = limits.figures(template, render(template))
            processed = sam_transform(template)
            size = len(json.dumps(processed, separators=(",", ":")).encode())
            print(
                f"{n:>6}  {f.resource_count:>7}  {len(processed['Resources']):>9}  "
                f"{f.outputs:>7}  {f.roles:>5}  {f.body_bytes // 1000:>7}  "
                f"{size // 1000:>4} ({f.processed_bytes // 1000})"
            )
        low, high = 1, 1000  # the count grows with every agent: bisect
        while high - low > 1:
            middle = (low + high) // 2
            template = template_of(write_spec(middle, Path(folder) / f"b{middle}"))
            fits = not limits.check(template, render(template), middle, 0).errors
            low, high = (middle, high) if fits else (low, middle)
        largest = low
        template = template_of(write_spec(largest + 1, Path(folder) / "over"))
        (binding, *_) = limits.check(template, render(template), largest + 1, 0).errors
        print(f"largest stack: {largest} agents; one more: {binding}")


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [1, 50, 100, 110, 130])
