"""Write data/shop.db, the demo's SQLite database (customers and orders), from the rows
below: `python3 scripts/make_demo_db.py`. The file is committed; rerun after editing."""

from __future__ import annotations

import sqlite3
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CUSTOMERS = [
    (1, "Ana Lima", "ana@example.com", "PT"),
    (2, "Jonas Weber", "jonas@example.com", "DE"),
    (3, "Chloé Martin", "chloe@example.com", "FR"),
    (4, "Sam Okafor", "sam@example.com", "DE"),
]
ORDERS = [
    ("ORD-1001", 1, "Espresso grinder", 189.0, "delivered", "2026-11-18"),
    ("ORD-1002", 1, "Milk jug", 24.5, "shipped", "2026-11-21"),
    ("ORD-1003", 2, "Pour-over kettle", 79.0, "delivered", "2026-11-02"),
    ("ORD-1004", 3, "Scale", 54.0, "delivered", "2026-10-29"),
    ("ORD-1005", 4, "Espresso grinder", 189.0, "delivered", "2026-11-10"),
    ("ORD-1006", 4, "Tamper", 35.0, "cancelled", "2026-11-12"),
]


def main() -> None:
    path = ROOT / "data" / "shop.db"
    path.parent.mkdir(exist_ok=True)
    path.unlink(missing_ok=True)
    with sqlite3.connect(path) as db:
        db.execute(
            "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT, email TEXT, country TEXT)"
        )
        db.execute(
            "CREATE TABLE orders (id TEXT PRIMARY KEY, customer_id INTEGER REFERENCES customers, "
            "item TEXT, amount_eur REAL, status TEXT, ordered_on TEXT)"
        )
        db.execute("CREATE TABLE staff_notes (id INTEGER PRIMARY KEY, note TEXT)")  # not shared
        db.executemany("INSERT INTO customers VALUES (?, ?, ?, ?)", CUSTOMERS)
        db.executemany("INSERT INTO orders VALUES (?, ?, ?, ?, ?, ?)", ORDERS)
        db.execute("INSERT INTO staff_notes VALUES (1, 'internal: supplier margins')")
    print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
