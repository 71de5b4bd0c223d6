"""Model prices come from the pinned genai-prices data set at build time, a price in the
spec wins, and a dollar budget over a model without a price is refused at its line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from infra.checks.validate import validate_file
from tests.helpers import ROOT
from tests.infra.checks.test_validate_bad import _write_project

SPEC = """
version: 1
models:
  gpt: {provider: openai, model_id: gpt-4.1, api_key: "${secret:k}"}
  claude: {provider: bedrock, model_id: us.anthropic.claude-sonnet-4-20250514-v1:0}
  mine: {provider: openai_compatible, model_id: house-model-7, base_url: "https://llm.internal.example/v1"}
  deal: {provider: anthropic, model_id: claude-sonnet-4-20250514, api_key: "${secret:k}", price: {input_per_mtok: 1, output_per_mtok: 2}}
  local: {provider: ollama, model_id: qwen3}
secrets:
  k: {}
agents:
  a: {description: d, model: gpt, budget: {max_cost_usd: 5}}
  b:
    description: d
    model: mine
    budget: {max_cost_usd: 5}  #!
"""


def test_prices_are_filled_in_from_the_data_set_and_the_spec_wins(tmp_path: Path) -> None:
    spec_file, line = _write_project(tmp_path, SPEC)
    result = validate_file(spec_file)
    problems = [i for i in result.issues if "needs the price of every model" in i.message]
    assert len(problems) == 1 and problems[0].line == line, [str(i) for i in result.issues]
    assert "mine has none" in problems[0].message


def test_a_valid_spec_compiles_with_its_prices(tmp_path: Path) -> None:
    spec_file, _ = _write_project(
        tmp_path, SPEC.replace("    budget: {max_cost_usd: 5}  #!\n", "  #!\n")
    )
    result = validate_file(spec_file)
    assert result.ok and result.spec is not None, [str(i) for i in result.issues]
    models = result.spec.models
    gpt = models["gpt"].price
    assert gpt is not None and (gpt.input_per_mtok, gpt.output_per_mtok) == (2.0, 8.0)
    assert gpt.source is not None and gpt.source.startswith("genai-prices 0.2.3: openai/gpt-4.1")
    claude = models["claude"].price
    assert claude is not None and claude.source and ": aws/" in claude.source
    deal = models["deal"].price
    assert deal is not None and (deal.input_per_mtok, deal.source) == (1.0, None)
    local = models["local"].price
    assert local is not None and local.input_per_mtok == 0
    assert models["mine"].price is None


def test_the_runtime_never_imports_the_price_data() -> None:
    code = (
        "import sys, runtime.engine.loop, runtime.engine.cost, handlers.step; "
        "print(json.dumps('genai_prices' in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", "import json; " + code], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) is False
