"""How a run's prompt is kept inside its model's context window (runtime.engine.context)."""

from pydantic import Field

from runtime.spec.models import SpecModel
from runtime.spec.types import Name


class CompactionSettings(SpecModel):
    """When and how a run's context is compacted.

    Before each model call the prompt's tokens are estimated; past `threshold` of the
    model's `context_window`, old tool results are replaced with placeholders naming their
    cache id (lossless: `session_cache_get` reads them back), and if that is not enough the
    older conversation is summarised by `model`. The `keep_turns` most recent turns stay
    whole. A provider's "prompt too long" answer compacts and retries once.
    """

    enabled: bool = Field(True, description="Compact proactively (a too-long prompt still fails).")
    threshold: float = Field(
        0.8,
        ge=0.1,
        le=0.98,
        description="Compact when the estimated prompt passes this fraction of the window.",
    )
    keep_turns: int = Field(3, ge=1, le=50, description="The most recent turns kept whole.")
    model: Name | None = Field(
        None, description="A key of `models` that writes summaries; default: the agent's own."
    )
    summary_max_tokens: int = Field(
        1500, ge=100, le=32_000, description="The longest summary the model may write."
    )
