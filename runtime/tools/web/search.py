"""`web_search`: Exa, Tavily or Brave, in each one's documented request and answer format,
normalised to `{title, url, text, published, score}`; the text of all results together is
capped by the content asked for (snippets: 20,000 characters, full text: 50,000)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from runtime.spec.plain import WebSearchSettings
from runtime.tools.base import FunctionTool, ToolContext, ToolError

CAPS = {"snippets": 20_000, "text": 50_000}
MAX_RESULTS = 10


def _request(settings: WebSearchSettings, key: str, args: dict[str, Any]) -> dict[str, Any]:
    """(method, url, headers, params/json) for the provider."""
    query, count = args["query"], args["max_results"]
    include, exclude = args.get("include_domains") or [], args.get("exclude_domains") or []
    full = args["content"] == "text"
    if settings.provider == "exa":
        body: dict[str, Any] = {"query": query, "numResults": count, "type": "auto"}
        body["contents"] = {"text": {"maxCharacters": 5000}} if full else {"highlights": True}
        if include:
            body["includeDomains"] = include
        if exclude:
            body["excludeDomains"] = exclude
        return {"method": "POST", "headers": {"x-api-key": key}, "json": body}
    if settings.provider == "tavily":
        body = {
            "query": query,
            "max_results": count,
            "search_depth": "advanced" if full else "basic",
        }
        body["include_raw_content"] = full
        if include:
            body["include_domains"] = include
        if exclude:
            body["exclude_domains"] = exclude
        return {"method": "POST", "headers": {"Authorization": f"Bearer {key}"}, "json": body}
    sites = " OR ".join(f"site:{d}" for d in include)
    params = {"q": f"{query} ({sites})" if sites else query, "count": count}
    if full:
        params["extra_snippets"] = "true"
    headers = {"X-Subscription-Token": key, "Accept": "application/json"}
    return {"method": "GET", "headers": headers, "params": params}


def _results(provider: str, answer: dict[str, Any]) -> list[dict[str, Any]]:
    if provider == "exa":
        return [
            {
                "title": r.get("title"),
                "url": r.get("url"),
                "published": r.get("publishedDate"),
                "score": r.get("score"),
                "text": r.get("text") or " … ".join(r.get("highlights") or []),
            }
            for r in answer.get("results", [])
        ]
    if provider == "tavily":
        return [
            {
                "title": r.get("title"),
                "url": r.get("url"),
                "published": r.get("published_date"),
                "score": r.get("score"),
                "text": r.get("raw_content") or r.get("content") or "",
            }
            for r in answer.get("results", [])
        ]
    return [
        {
            "title": r.get("title"),
            "url": r.get("url"),
            "published": r.get("age"),
            "score": None,
            "text": " … ".join(
                [r.get("description") or "", *(r.get("extra_snippets") or [])]
            ).strip(" …"),
        }
        for r in (answer.get("web") or {}).get("results", [])
    ]


def _domain_ok(url: str, exclude: list[str]) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    return not any(host == d.lower() or host.endswith("." + d.lower()) for d in exclude)


def _capped(results: list[dict[str, Any]], cap: int) -> tuple[list[dict[str, Any]], bool]:
    """Each result's text within an equal share of `cap`, so one long page cannot crowd the
    others out."""
    share, cut = cap // max(1, len(results)), False
    for result in results:
        text = str(result.get("text") or "")
        if len(text) > share:
            result["text"], cut = text[:share] + " [cut]", True
    return results, cut


def web_search_tool(
    settings: WebSearchSettings | None, secrets: Callable[[str], str]
) -> FunctionTool:
    async def search(arguments: dict[str, Any], ctx: ToolContext) -> Any:
        if settings is None:
            return {
                "error": "web_search is not configured",
                "configure": "set web.search (provider: exa, tavily or brave, and api_key: "
                "${secret:NAME}) in agents.yaml",
            }
        query = arguments.get("query")
        if not isinstance(query, str) or not query.strip():
            raise ToolError("query must be non-empty text")
        count = arguments.get("max_results", 5)
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_RESULTS:
            raise ToolError(f"max_results is a whole number from 1 to {MAX_RESULTS}")
        content = arguments.get("content", "snippets")
        if content not in CAPS:
            raise ToolError("content is snippets or text")
        args = {**arguments, "query": query, "max_results": count, "content": content}
        key = secrets(settings.api_key)
        request = _request(settings, key, args)
        import httpx

        try:
            async with httpx.AsyncClient(timeout=settings.timeout, trust_env=False) as client:
                response = await client.request(url=settings.endpoint(), **request)
        except httpx.HTTPError as exc:
            raise ToolError(
                f"the {settings.provider} search did not answer: {type(exc).__name__}"
            ) from None
        if response.status_code >= 400:
            detail = response.text[:300].replace(key, "***") if key else response.text[:300]
            raise ToolError(f"{settings.provider} answered HTTP {response.status_code}: {detail}")
        try:
            found = _results(settings.provider, response.json())
        except ValueError:
            raise ToolError(f"{settings.provider} answered something that is not JSON") from None
        exclude = list(arguments.get("exclude_domains") or [])
        found = [r for r in found if r.get("url") and _domain_ok(str(r["url"]), exclude)][:count]
        results, cut = _capped(found, CAPS[content])
        return {"query": query, "provider": settings.provider, "results": results, "truncated": cut}

    domains = {"type": "array", "items": {"type": "string"}}
    return FunctionTool(
        name="web_search",
        description=(
            "Search the web. Returns up to max_results results (title, url, text, published, "
            "score). content: snippets (short, 20,000 characters in all) or text (page text, "
            "50,000 in all). Restrict with include_domains / exclude_domains."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "max_results": {"type": "integer", "minimum": 1, "maximum": MAX_RESULTS},
                "content": {"type": "string", "enum": list(CAPS)},
                "include_domains": domains,
                "exclude_domains": domains,
            },
            "required": ["query"],
        },
        func=search,
        effect="read_only",
        cache_outputs=True,
    )
