"""Model prices from the genai-prices data set (pydantic/genai-prices, pinned), filled into
the spec at build time.

The runtime never imports the data set (150 ms and 1.7 MB at a cold start): `agentfn
build`, `run` and `dev` write each model's `price` into the spec they compile or run, so a
deployed run is charged at the prices of its build, reproducibly. A price written in the
spec wins; Ollama and scripted models are free; a model the data set does not know has no
price (its calls cost 0, and `agentfn validate` refuses a dollar budget that would use it).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from runtime.spec import AgentfnSpec
from runtime.spec.models import ModelConfig, Price

#: agentfn's provider → the data set's provider id (None: let it find the provider).
PROVIDERS: dict[str, str | None] = {
    "bedrock": "aws",
    "openai": "openai",
    "azure_openai": "azure",
    "anthropic": "anthropic",
    "gemini": "google",
    "openai_compatible": None,
}
FREE = {"ollama": "local model (free)", "scripted": "scripted model (free)"}


def _number(value: Any) -> float | None:
    """A per-million-token figure; tiered prices give their base tier."""
    if value is None:
        return None
    if isinstance(value, int | float | Decimal):
        return float(value)
    base = getattr(value, "base", None)
    return float(base) if base is not None else None


def lookup(config: ModelConfig) -> Price | None:
    """The data set's price for a model, or None when it does not know the model."""
    if config.provider in FREE:
        return Price(input_per_mtok=0, output_per_mtok=0, source=FREE[config.provider])
    model_id = config.model_id
    if config.provider == "ai_gateway" and "/" in model_id:
        # the gateway names models `creator/model` and bills the creator's list price
        # (https://vercel.com/docs/ai-gateway/pricing): look the model up at its creator
        creator, model_id = model_id.split("/", 1)
        return _priced(model_id, {"provider_id": creator})
    if config.provider not in PROVIDERS:
        return None
    kwargs: dict[str, Any] = {"provider_id": PROVIDERS[config.provider]}
    base_url = getattr(config, "base_url", None)
    if config.provider == "openai_compatible" and base_url is not None:
        kwargs = {"provider_api_url": str(base_url)}
    return _priced(model_id, kwargs)


def _priced(model_id: str, kwargs: dict[str, Any]) -> Price | None:
    from importlib.metadata import version

    from genai_prices import Usage, calc_price

    try:
        found = calc_price(Usage(input_tokens=1, output_tokens=1), model_id, **kwargs)
    except LookupError:
        return None
    prices = found.model_price
    inputs, outputs = _number(prices.input_mtok), _number(prices.output_mtok)
    if inputs is None or outputs is None:
        return None
    return Price(
        input_per_mtok=inputs,
        output_per_mtok=outputs,
        cache_read_per_mtok=_number(prices.cache_read_mtok),
        source=f"genai-prices {version('genai-prices')}: {found.provider.id}/{found.model.id}",
    )


def with_prices(spec: AgentfnSpec) -> AgentfnSpec:
    """The spec with every model's price filled in where the spec has none."""
    missing = {n: m for n, m in spec.models.items() if m.price is None}
    if not missing:
        return spec
    models = dict(spec.models)
    for name, config in missing.items():
        price = lookup(config)
        if price is not None:
            models[name] = config.model_copy(update={"price": price})
    return spec.model_copy(update={"models": models})
