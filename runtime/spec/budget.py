"""Prices and budgets: what a model costs, and what a run or a session may spend."""

from pydantic import Field

from runtime.spec.models import SpecModel


class Limits(SpecModel):
    max_tokens: int | None = Field(
        None, ge=1, description="Input and output tokens, every model and agent counted."
    )
    max_cost_usd: float | None = Field(
        None, gt=0, description="US dollars, at the models' prices (models.*.price)."
    )


class BudgetSettings(Limits):
    """What a run may spend (its whole team and every fallback counted), and optionally its
    session across runs. Checked before each model call with that call's estimate, so a
    run stops before it overspends: `BUDGET_EXCEEDED`, with the spend so far."""

    session: Limits | None = Field(None, description="The same limits for the whole session.")
