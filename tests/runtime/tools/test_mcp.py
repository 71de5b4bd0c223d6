"""MCP tools against real servers: the demo orders server over stdio and over streamable HTTP
on loopback, plus servers that refuse, hang, exit or are disabled. No SDK mocks: the only
seam is the toolset's own `_list_tools`, counted (not replaced) to observe the cache."""

from __future__ import annotations

import asyncio
import base64
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from runtime.secrets import SecretResolver
from runtime.spec import AgentfnSpec, plain
from runtime.spec.tools import HttpMcpServer, StdioMcpServer
from runtime.tools import mcp as mcp_tools
from runtime.tools.base import RichOutput, ToolContext, ToolError, ToolImage
from runtime.tools.mcp import McpFailure, McpToolset
from tests.helpers import ROOT

CTX = ToolContext(run_id="run-1", session_id="sess-1", agent="support", call_id="call-1")
ORDERS = {
    "transport": "stdio",
    "command": sys.executable,
    "args": ["-m", "tools.mcp_servers.orders_server"],
    "cwd": str(ROOT),
}
ALL_TOOLS = {
    "mcp__orders__track_shipment",
    "mcp__orders__cancel_order",
    "mcp__orders__shipping_label",
    "mcp__orders__whoami",
}
TOKEN = "s3cr3t-token"


def stdio(**overrides: Any) -> plain.StdioMcpServer:
    return StdioMcpServer.model_validate({**ORDERS, **overrides}).to_runtime()


def no_secrets(text: str) -> str:
    return text


_BEFORE: set[int] = set()  # children that predate the test (the HTTP server, other fixtures)


def children() -> dict[int, str]:
    """Our live child processes started during this test (pid → command line)."""
    found: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == os.getpid() and int(entry) not in _BEFORE:
            found[int(entry)] = cmdline
    return found


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(autouse=True)
def fresh_cache() -> Iterator[None]:
    _BEFORE.clear()
    _BEFORE.update(children())
    mcp_tools.LISTINGS.clear()
    yield
    mcp_tools.LISTINGS.clear()
    assert children() == {}, "an MCP server process outlived its toolset"


@pytest.fixture(scope="module")
def http_port() -> Iterator[int]:
    port = free_port()
    env = {**os.environ, "ORDERS_API_TOKEN": TOKEN}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tools.mcp_servers.orders_server", "--http", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert proc.poll() is None, "the HTTP MCP server exited at start-up"
                assert time.monotonic() < deadline, "the HTTP MCP server did not listen within 10 s"
                time.sleep(0.05)
        yield port
    finally:
        proc.kill()
        proc.wait(5)


def test_stdio_discovery_maps_tools_and_calls_convert_every_content_kind() -> None:
    from tools.mcp_servers.orders_server import label_png

    async def scenario() -> None:
        config = stdio(effect="idempotent")
        async with McpToolset({"orders": config}, ["mcp:orders"], no_secrets) as toolset:
            tools, failures = await toolset.discover()
            assert failures == []
            assert set(tools) == ALL_TOOLS
            track, cancel = tools["mcp__orders__track_shipment"], tools["mcp__orders__cancel_order"]
            assert (track.effect, track.destructive) == ("read_only", False)
            assert (cancel.effect, cancel.destructive) == ("idempotent", True)  # no readOnlyHint
            assert track.input_schema["required"] == ["order_id"]
            assert track.description.startswith("Where an order's parcel is")
            # No server timeout: each call is bounded by the agent's tool_timeout.
            assert (track.timeout, track.cache_outputs, track.reuse_cached) == (None, True, False)

            # Two calls from two tasks at once (as the engine gathers read-only calls),
            # one connection: the session is shared, not reopened per task.
            found, unknown = await asyncio.gather(
                track.call({"order_id": "ORD-1001"}, CTX), track.call({"order_id": "ORD-9"}, CTX)
            )
            assert len(children()) == 1
            assert isinstance(found, RichOutput) and not found.is_error
            assert '"carrier": "DHL"' in found.text
            assert found.full["structuredContent"]["status"] == "delivered"
            assert isinstance(unknown, RichOutput) and unknown.is_error
            assert "no shipment for order 'ORD-9'" in unknown.text

            label = await tools["mcp__orders__shipping_label"].call({"order_id": "ORD-1001"}, CTX)
            png = label_png("ORD-1001")
            assert label.text == f"[image: image/png, {len(png)} bytes]"  # the placeholder stays
            assert label.images == [ToolImage("image/png", base64.b64encode(png).decode())]
            assert label.full["content"][0]["mimeType"] == "image/png"
            assert base64.b64decode(label.full["content"][0]["data"]) == png

            cancelled = await cancel.call({"order_id": "ORD-1002", "reason": "changed mind"}, CTX)
            assert cancelled.text == "order ORD-1002 cancelled (changed mind)"

            (pid,) = children()
            os.kill(pid, signal.SIGKILL)  # the server dies mid-run: calls fail, nothing hangs
            await asyncio.sleep(0.2)
            with pytest.raises(ToolError, match="lost the connection to MCP server 'orders'"):
                await track.call({"order_id": "ORD-1001"}, CTX)

    asyncio.run(scenario())


def test_one_selected_tool_and_closing_on_error_and_cancellation() -> None:
    selection = ["mcp:orders/track_shipment", "mcp:orders/refund_everything"]

    async def discover_then_fail() -> None:
        async with McpToolset({"orders": stdio()}, selection, no_secrets) as toolset:
            tools, failures = await toolset.discover()
            assert list(tools) == ["mcp__orders__track_shipment"]
            assert failures == [McpFailure("orders", "server orders has no tool refund_everything")]
            raise ValueError("the run broke")

    with pytest.raises(ValueError, match="the run broke"):  # not wrapped in an ExceptionGroup
        asyncio.run(discover_then_fail())
    assert children() == {}

    async def call_then_hang(started: asyncio.Event) -> None:
        async with McpToolset({"orders": stdio()}, selection, no_secrets) as toolset:
            tools, _ = await toolset.discover()  # from the cache: no process yet
            assert children() == {}
            await tools["mcp__orders__track_shipment"].call({"order_id": "ORD-1002"}, CTX)
            started.set()
            await asyncio.sleep(60)

    async def cancel_mid_run() -> None:
        started = asyncio.Event()
        task = asyncio.create_task(call_then_hang(started))
        await asyncio.wait_for(started.wait(), 20)
        assert len(children()) == 1
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancel_mid_run())
    assert children() == {}


def test_streamable_http_with_a_secret_header(
    http_port: int, demo_spec: AgentfnSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTFN_SECRET_ORDERS_TOKEN", TOKEN)
    config = HttpMcpServer.model_validate(
        {
            "transport": "http",
            "url": f"http://127.0.0.1:{http_port}/mcp",
            "headers": {"Authorization": "Bearer ${secret:ORDERS_TOKEN}"},
        }
    ).to_runtime()

    async def scenario() -> None:
        async with McpToolset({"shop": config}, ["mcp:shop"], SecretResolver(demo_spec)) as toolset:
            tools, failures = await toolset.discover()
            assert failures == []
            assert {name.replace("shop", "orders") for name in tools} == ALL_TOOLS
            who = await tools["mcp__shop__whoami"].call({}, CTX)
            assert who.full["structuredContent"] == {"transport": "http", "authenticated": True}
            shipment = await tools["mcp__shop__track_shipment"].call({"order_id": "ORD-1002"}, CTX)
            assert shipment.full["structuredContent"]["carrier"] == "UPS"

    asyncio.run(scenario())


def test_refused_exited_and_disabled_servers_do_not_stop_the_others(tmp_path: Path) -> None:
    marker = tmp_path / "started"
    servers: dict[str, StdioMcpServer | HttpMcpServer] = {
        "orders": stdio(),
        "closed": HttpMcpServer.model_validate(
            {"transport": "http", "url": f"http://127.0.0.1:{free_port()}/mcp", "timeout": "5s"}
        ).to_runtime(),
        "gone": stdio(args=["-c", "import sys; sys.exit(3)"]),
        "off": stdio(enabled=False, args=["-c", f"open({str(marker)!r}, 'w')"]),
    }

    async def scenario() -> None:
        selection = [
            "mcp:orders/track_shipment",
            "mcp:closed",
            "mcp:gone",
            "mcp:off",
            "mcp:nowhere",
            "builtin:get_time_date",
        ]
        async with McpToolset(servers, selection, no_secrets) as toolset:
            tools, failures = await toolset.discover()
            assert list(tools) == ["mcp__orders__track_shipment"]
            errors = {failure.server: failure.error for failure in failures}
            assert set(errors) == {"closed", "gone", "nowhere"}
            assert errors["closed"] == "ConnectError: All connection attempts failed"
            # A stdio server that exits says what was started, and where.
            assert errors["gone"].startswith("MCP error -32000: Connection closed (command: ")
            assert "sys.exit(3); folder: " in errors["gone"]
            assert errors["nowhere"] == "no MCP server named 'nowhere'"
            result = await tools["mcp__orders__track_shipment"].call({"order_id": "ORD-1001"}, CTX)
            assert not result.is_error

    asyncio.run(scenario())
    assert not marker.exists(), "a disabled server was started"


def test_a_hanging_server_fails_within_its_timeout_and_is_stopped() -> None:
    hang = stdio(args=["-c", "import time; time.sleep(60)"], timeout="1s")
    seen: dict[int, str] = {}

    async def scenario() -> float:
        async with McpToolset({"hang": hang}, ["mcp:hang"], no_secrets) as toolset:
            started = time.monotonic()
            tools, failures = await toolset.discover()
            elapsed = time.monotonic() - started
            seen.update(children())
        assert tools == {}
        assert failures == [McpFailure("hang", "no tool list within 1s")]
        return elapsed

    elapsed = asyncio.run(scenario())
    assert elapsed < 2.5  # the 1 s timeout plus scheduling slack, not the 60 s sleep
    assert [cmd for cmd in seen.values() if "time.sleep(60)" in cmd], "the server was never started"
    for pid in seen:
        assert not Path(f"/proc/{pid}").exists(), f"process {pid} survived the toolset"


def test_tool_lists_are_cached_per_container_for_cache_ttl(monkeypatch: pytest.MonkeyPatch) -> None:
    lists: list[str] = []
    real_list_tools = McpToolset._list_tools

    async def counting(self: McpToolset, server: str) -> Any:
        lists.append(server)
        return await real_list_tools(self, server)

    monkeypatch.setattr(McpToolset, "_list_tools", counting)
    now = [1_000.0]
    config = stdio(cache_ttl="60s")

    async def run_once() -> tuple[set[str], int]:
        async with McpToolset(
            {"orders": config}, ["mcp:orders"], no_secrets, lambda: now[0]
        ) as toolset:
            tools, _ = await toolset.discover()
            spawned = len(children())
            result = await tools["mcp__orders__track_shipment"].call({"order_id": "ORD-1001"}, CTX)
            assert "DHL" in result.text  # connects lazily when the list came from the cache
            return set(tools), spawned

    assert asyncio.run(run_once()) == (ALL_TOOLS, 1)
    assert lists == ["orders"]
    now[0] += 59
    assert asyncio.run(run_once()) == (ALL_TOOLS, 0)  # no list, not even a connection
    assert lists == ["orders"]
    now[0] += 2
    assert asyncio.run(run_once()) == (ALL_TOOLS, 1)
    assert lists == ["orders", "orders"]


def test_tool_names_are_sanitised_and_bounded() -> None:
    assert mcp_tools.tool_name("orders", "track.shipment v2") == "mcp__orders__track_shipment_v2"
    long = mcp_tools.tool_name("orders", "x" * 100)
    assert len(long) == 64 and long != mcp_tools.tool_name("orders", "x" * 99)
    assert mcp_tools.tool_name("a", "b", hashed=True) != mcp_tools.tool_name("a", "b")


def test_an_unannotated_mcp_tool_is_of_an_open_world_as_the_mcp_specification_defaults() -> None:
    from mcp_types import Tool as McpTool
    from mcp_types import ToolAnnotations

    from runtime.tools.mcp.toolset import is_open_world

    schema = {"type": "object"}
    assert is_open_world(McpTool(name="t", input_schema=schema)) is True
    unsaid = ToolAnnotations(read_only_hint=True)
    assert is_open_world(McpTool(name="t", input_schema=schema, annotations=unsaid)) is True
    closed = ToolAnnotations(open_world_hint=False)
    assert is_open_world(McpTool(name="t", input_schema=schema, annotations=closed)) is False
