"""What model calls cost, and the budgets that stop a run before it overspends.

A call's cost is its usage at the answering model's `price` (filled in at build time from
the genai-prices data set, or written in the spec), so fallbacks are charged at their own
price; a model without a price costs nothing here (and a budget in dollars cannot be set
for it: `agentfn validate` says so). Budgets count the whole team: handoffs share the run's
totals, a child run gets its share of what its parent's budget had left (children started
together split it), and a child's spend is added to its parent's. A session's budget
counts its finished runs (recorded with the session's state when each run ends) and the run
in progress.
"""

from __future__ import annotations

from typing import Any

from runtime.errors import RunError
from runtime.messages import Usage
from runtime.spec import AgentfnSpec
from runtime.spec.models import Price
from runtime.store.base import RunHead, Spend

#: Output tokens assumed for the next answer when the model has no `max_tokens`.
DEFAULT_OUTPUT_TOKENS = 1024


class BudgetExceeded(RunError):
    error_code = "BUDGET_EXCEEDED"


def call_cost(price: Price | None, usage: Usage) -> float:
    if price is None:
        return 0.0
    return (
        usage.input_tokens * price.input_per_mtok + usage.output_tokens * price.output_per_mtok
    ) / 1_000_000


def charged(head: RunHead, model: str, agent: str, cost: float) -> dict[str, Any]:
    """The head's cost fields with `cost` added (a commit's update)."""
    by_model = dict(head.cost_by_model)
    by_model[model] = by_model.get(model, 0.0) + cost
    by_agent = dict(head.cost_by_agent)
    by_agent[agent] = by_agent.get(agent, 0.0) + cost
    return {"cost_usd": head.cost_usd + cost, "cost_by_model": by_model, "cost_by_agent": by_agent}


def next_call(spec: AgentfnSpec, model: str, input_tokens: int) -> Spend:
    """What the next call will spend at most: its estimated prompt and a full answer."""
    config = spec.models[model]
    output = config.max_tokens or DEFAULT_OUTPUT_TOKENS
    price = config.price  # call_cost's sum, without building a Usage for it (every turn)
    cost = 0.0
    if price is not None:
        cost = (input_tokens * price.input_per_mtok + output * price.output_per_mtok) / 1_000_000
    return Spend(tokens=input_tokens + output, cost_usd=cost)


def check_budget(spec: AgentfnSpec, head: RunHead, upcoming: Spend) -> None:
    """Raise BudgetExceeded when the next call could take the run (or its session, or its
    parent's budget) past a limit. At the limit exactly is still allowed."""
    budget = spec.budget_for(head.agent)
    if budget is None and head.budget_left is None:
        return  # nothing to check (most runs): not even what was spent is worked out
    spent = head.spent
    limits: list[tuple[str, Spend, int | None, float | None]] = []
    if budget is not None:
        limits.append(("budget", spent, budget.max_tokens, budget.max_cost_usd))
        if budget.session is not None:
            session = head.session_spent + spent
            limits.append(
                ("budget.session", session, budget.session.max_tokens, budget.session.max_cost_usd)
            )
    if head.budget_left is not None:
        left = head.budget_left
        limits.append(("its parent's budget", spent, left.tokens or None, left.cost_usd or None))
    for name, used, max_tokens, max_cost in limits:
        if max_tokens is not None and used.tokens + upcoming.tokens > max_tokens:
            raise BudgetExceeded(
                f"{name}: {used.tokens:,} tokens used (${used.cost_usd:.4f}); the next model "
                f"call (up to {upcoming.tokens:,} tokens) would pass max_tokens ({max_tokens:,})"
            )
        if max_cost is not None and used.cost_usd + upcoming.cost_usd > max_cost:
            raise BudgetExceeded(
                f"{name}: ${used.cost_usd:.4f} spent ({used.tokens:,} tokens); the next model "
                f"call (up to ${upcoming.cost_usd:.4f}) would pass max_cost_usd (${max_cost})"
            )


def child_budget(spec: AgentfnSpec, parent: RunHead, share: int = 1) -> Spend | None:
    """What a child run may spend: its share of what its parent's budget has left (None: no
    budget). Children started together (parallel `ask_*` calls of one answer) split the
    remainder: each used to get all of it, and three children of a 1,000-token run spent
    2,060. A child's spend is added to its parent's when it reports, so with shares the
    whole team stays within the budget, give or take one model call's estimate."""
    budget = spec.budget_for(parent.agent)
    inherited = parent.budget_left
    if budget is None and inherited is None:
        return None
    spent = parent.spent
    tokens = [
        b - spent.tokens
        for b in (budget and budget.max_tokens, inherited and inherited.tokens)
        if b
    ]
    costs = [
        b - spent.cost_usd
        for b in (budget and budget.max_cost_usd, inherited and inherited.cost_usd)
        if b
    ]
    share = max(1, share)
    return Spend(
        tokens=max(1, min(tokens) // share) if tokens else 0,
        cost_usd=max(1e-9, min(costs) / share) if costs else 0.0,
    )
