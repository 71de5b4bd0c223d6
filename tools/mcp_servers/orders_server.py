"""A demo MCP server for the order tools, so `mcp:` tool references can be tried (and tested)
offline without a third-party server.

Run it over stdio (the default, how agentfn starts `transport: stdio` servers):

    python -m tools.mcp_servers.orders_server

or over streamable HTTP on loopback (tests use this for the `transport: http` path):

    python -m tools.mcp_servers.orders_server --http 8765    # http://127.0.0.1:8765/mcp

When `ORDERS_API_TOKEN` is set, `whoami` reports whether the caller's
`Authorization: Bearer ...` header matches it, which lets a test prove a `${secret:...}`
header reached the server without the server ever echoing the value.
"""

from __future__ import annotations

import argparse
import hmac
import os
import struct
import zlib
from typing import Any

from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations

_SHIPMENTS = {
    "ORD-1001": {"carrier": "DHL", "status": "delivered", "eta": "2026-11-18"},
    "ORD-1002": {"carrier": "UPS", "status": "in_transit", "eta": "2026-11-24"},
}

server = MCPServer(
    "orders",
    instructions="Shipment tracking and order changes for the demo shop.",
    log_level="WARNING",  # stderr is the host's log: keep routine requests out of it
)


@server.tool(annotations=ToolAnnotations(read_only_hint=True, destructive_hint=False))
def track_shipment(order_id: str) -> dict[str, str]:
    """Where an order's parcel is: carrier, status and estimated delivery date."""
    shipment = _SHIPMENTS.get(order_id)
    if shipment is None:
        # Raised errors become a result with isError=true: the model reads it, no crash.
        raise ToolError(f"no shipment for order {order_id!r}")
    return {"order_id": order_id, **shipment}


@server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True))
def cancel_order(order_id: str, reason: str) -> str:
    """Cancel an order that has not been delivered yet (irreversible)."""
    shipment = _SHIPMENTS.get(order_id)
    if shipment is None:
        raise ToolError(f"no order {order_id!r}")
    if shipment["status"] == "delivered":
        raise ToolError(f"order {order_id} was already delivered and cannot be cancelled")
    return f"order {order_id} cancelled ({reason})"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def shipping_label(order_id: str) -> Image:
    """The shipping label of an order, as a PNG image."""
    if order_id not in _SHIPMENTS:
        raise ToolError(f"no order {order_id!r}")
    return Image(data=label_png(order_id), format="png")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def whoami(ctx: Context) -> dict[str, Any]:
    """Whether the HTTP caller presented the expected bearer token (HTTP transport only)."""
    expected = os.environ.get("ORDERS_API_TOKEN")
    headers = ctx.headers or {}
    presented = headers.get("authorization", "").removeprefix("Bearer ")
    return {
        "transport": "http" if ctx.headers is not None else "stdio",
        "authenticated": bool(expected) and hmac.compare_digest(presented, expected or ""),
    }


def label_png(order_id: str, size: int = 8) -> bytes:
    """A tiny grey-scale PNG derived from the order id; built by hand so no imaging library
    (and no file on disk) is needed."""
    shade = zlib.crc32(order_id.encode()) & 0xFF
    rows = b"".join(
        b"\x00" + bytes((shade ^ (x * 16 + y)) & 0xFF for x in range(size)) for y in range(size)
    )

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", size, size, 8, 0, 0, 0, 0)  # 8-bit grey, no interlace
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--http", type=int, metavar="PORT", help="serve streamable HTTP on 127.0.0.1"
    )
    args = parser.parse_args(argv)
    if args.http is None:
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=args.http)


if __name__ == "__main__":
    main()
