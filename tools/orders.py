"""Demo order tools: deterministic, offline, no AWS needed."""

from __future__ import annotations

_ORDERS = {
    "ORD-1001": {
        "order_id": "ORD-1001",
        "customer_id": "CUST-4421",
        "item": "Espresso grinder",
        "amount": 189.0,
        "currency": "EUR",
        "status": "delivered",
        "delivered_on": "2026-11-18",
    },
    "ORD-1002": {
        "order_id": "ORD-1002",
        "customer_id": "CUST-4421",
        "item": "Milk jug",
        "amount": 24.5,
        "currency": "EUR",
        "status": "shipped",
        "delivered_on": None,
    },
}


def lookup_order(order_id: str) -> dict[str, object]:
    """Return an order by id, or raise KeyError (reported to the model as a tool error)."""
    try:
        return dict(_ORDERS[order_id])
    except KeyError:
        raise KeyError(f"no order {order_id!r}") from None


def issue_refund(order_id: str, amount: float, reason: str) -> dict[str, object]:
    """Pretend to refund: returns a refund receipt. Declared at_most_once in agents.yaml."""
    order = lookup_order(order_id)
    if amount <= 0 or amount > float(order["amount"]):  # type: ignore[arg-type]
        raise ValueError(f"refund amount must be between 0 and {order['amount']}")
    return {
        "refund_id": f"RF-{order_id[-4:]}",
        "order_id": order_id,
        "amount": amount,
        "currency": order["currency"],
        "reason": reason,
        "status": "issued",
    }
