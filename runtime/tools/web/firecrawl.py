"""web_scrape through Firecrawl: its `/scrape` endpoint renders the page (JavaScript
included) on Firecrawl's side and answers Markdown, HTML or links itself.

The target URL is still prechecked (http(s) only, no private or metadata address literal),
so a spec that turns Firecrawl on never lets the model aim a self-hosted Firecrawl inside
the VPC at the instance metadata service."""

from __future__ import annotations

from typing import Any

from runtime.spec.plain import FirecrawlSettings
from runtime.tools.base import ToolError

_FORMATS = {"markdown": "markdown", "html": "html", "links": "links"}


async def firecrawl_scrape(
    url: str, kind: str, settings: FirecrawlSettings, key: str, timeout: float
) -> tuple[str, Any]:
    """(final URL, Markdown or HTML text, or a list of link URLs) as Firecrawl gives them."""
    import httpx

    body = {
        "url": url,
        "formats": [_FORMATS[kind]],
        "onlyMainContent": kind == "markdown",
        "timeout": int(timeout * 1000),
    }
    try:
        async with httpx.AsyncClient(timeout=timeout + 10, trust_env=False) as client:
            response = await client.post(
                settings.endpoint(), json=body, headers={"Authorization": f"Bearer {key}"}
            )
    except httpx.HTTPError as exc:
        raise ToolError(f"Firecrawl did not answer: {type(exc).__name__}") from None
    try:
        answer = response.json()
    except ValueError:
        answer = None
    if response.status_code >= 400 or not isinstance(answer, dict) or not answer.get("success"):
        said = answer.get("error") if isinstance(answer, dict) else response.text
        detail = str(said or "")[:300]
        detail = detail.replace(key, "***") if key else detail
        raise ToolError(
            f"Firecrawl could not scrape {url[:200]} (HTTP {response.status_code}): {detail}"
        )
    data = answer.get("data") or {}
    meta = data.get("metadata") or {}
    final = str(meta.get("url") or meta.get("sourceURL") or url)
    status = meta.get("statusCode")
    if isinstance(status, int) and status >= 400:
        raise ToolError(f"{url[:200]} answered HTTP {status}")
    if kind == "links":
        links = data.get("links") or []
        return final, [str(link) for link in links if str(link).startswith(("http://", "https://"))]
    return final, str(data.get(kind) or "")
