"""`web_scrape(url, format)`: a page fetched through the same SSRF guard, redirect and
credential rules as HTTP tools, as clean Markdown (markdownify, scripts and styles left out),
its HTML, or its links; at most 200,000 characters. With `web.scrape.firecrawl` set, Firecrawl
fetches and converts the page instead (runtime.tools.web.firecrawl)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urldefrag, urljoin

from runtime.spec.plain import WebScrapeSettings
from runtime.tools.base import FunctionTool, ToolContext, ToolError

MAX_CHARS = 200_000
MAX_BYTES = 5_000_000
FORMATS = ("markdown", "html", "links")
_NOISE = ("script", "style", "noscript", "template", "iframe", "svg", "head")


async def fetch(url: str, settings: WebScrapeSettings) -> tuple[str, str, str]:
    """(final URL, content type, text) of a guarded GET."""
    import httpx

    from runtime.tools.ssrf import Allowlist, guarded_client, precheck, send

    allow = Allowlist(settings.allow_private)
    precheck(url, allow)
    try:
        async with guarded_client(allow, settings.timeout) as client:
            request = client.build_request(
                "GET", url, headers={"User-Agent": "agentfn-web-scrape/1"}
            )
            response = await send(client, request)
            try:
                data = b""
                async for piece in response.aiter_bytes():
                    data += piece
                    if len(data) > MAX_BYTES:
                        break
            finally:
                await response.aclose()
    except ToolError:
        raise
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        raise ToolError(f"could not fetch {url[:200]}: {type(exc).__name__}") from None
    if response.status_code >= 400:
        raise ToolError(f"{url[:200]} answered HTTP {response.status_code}")
    kind = response.headers.get("content-type", "")
    text = data.decode(response.encoding or "utf-8", errors="replace")
    return str(response.url), kind, text


def _soup(html: str) -> Any:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "html.parser")
    for tag in soup.find_all(_NOISE):
        tag.decompose()
    return soup


def as_markdown(html: str) -> str:
    from markdownify import MarkdownConverter

    soup = _soup(html)
    markdown = MarkdownConverter(heading_style="ATX", strip=["img"]).convert_soup(soup)
    lines = [line.rstrip() for line in markdown.splitlines()]
    text = "\n".join(lines)
    while "\n\n\n" in text:
        text = text.replace("\n\n\n", "\n\n")
    return text.strip()


def links_of(html: str, base: str) -> list[dict[str, str]]:
    seen: set[str] = set()
    found = []
    for anchor in _soup(html).find_all("a", href=True):
        href = urldefrag(urljoin(base, anchor["href"].strip())).url
        if not href.startswith(("http://", "https://")) or href in seen:
            continue
        seen.add(href)
        found.append({"url": href, "text": " ".join(anchor.get_text(" ").split())[:200]})
    return found


def _capped(final: str, kind: str, content: str) -> dict[str, Any]:
    cut = len(content) > MAX_CHARS
    return {"url": final, "format": kind, "content": content[:MAX_CHARS], "truncated": cut,
            "total_chars": len(content)}  # fmt: skip


async def _through_firecrawl(
    url: str, kind: str, settings: WebScrapeSettings, secrets: Callable[[str], str]
) -> dict[str, Any]:
    from runtime.tools.ssrf import Allowlist, precheck
    from runtime.tools.web.firecrawl import firecrawl_scrape

    assert settings.firecrawl is not None
    precheck(url, Allowlist(settings.allow_private))
    key = secrets(settings.firecrawl.api_key)
    final, found = await firecrawl_scrape(url, kind, settings.firecrawl, key, settings.timeout)
    if kind == "links":
        return {"url": final, "links": [{"url": link, "text": ""} for link in found]}
    return _capped(final, kind, found)


def web_scrape_tool(
    settings: WebScrapeSettings, secrets: Callable[[str], str] = str
) -> FunctionTool:
    async def scrape(arguments: dict[str, Any], ctx: ToolContext) -> Any:
        url = arguments.get("url")
        kind = arguments.get("format", "markdown")
        if not isinstance(url, str) or not url:
            raise ToolError("url must be an http(s) URL")
        if kind not in FORMATS:
            raise ToolError(f"format is one of {', '.join(FORMATS)}")
        if settings.firecrawl is not None:
            return await _through_firecrawl(url, kind, settings, secrets)
        final, content_type, body = await fetch(url, settings)
        is_html = "html" in content_type.lower() or body.lstrip()[:15].lower().startswith(
            ("<!doctype", "<html")
        )
        if kind == "links":
            return {"url": final, "links": links_of(body, final) if is_html else []}
        content = as_markdown(body) if kind == "markdown" and is_html else body
        return _capped(final, kind, content)

    return FunctionTool(
        name="web_scrape",
        description=(
            "Fetch a public web page and return it as clean markdown (default), its html, or "
            "its links. At most 200,000 characters; private and cloud-metadata addresses are "
            "refused."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "url": {"type": "string"},
                "format": {"type": "string", "enum": list(FORMATS)},
            },
            "required": ["url"],
        },
        func=scrape,
        effect="read_only",
        cache_outputs=True,
    )
