"""web_search against each provider's documented format and web_scrape against real pages,
all served on loopback; the SSRF guard and the caps hold; a missing provider is answered."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from runtime.spec.web import FirecrawlSettings, WebScrapeSettings, WebSearchSettings
from runtime.tools.base import ToolContext, ToolError
from runtime.tools.web.scrape import MAX_CHARS, web_scrape_tool
from runtime.tools.web.search import web_search_tool
from tests.runtime.tools import web_server
from tests.runtime.tools.web_server import KEY, SEEN

CTX = ToolContext(run_id="r", session_id="s", agent="a", call_id="c")


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    with web_server.serve() as url:
        yield url


def _call(tool: Any, **arguments: Any) -> Any:
    return asyncio.run(tool.call(arguments, CTX))


def _search(site: str, provider: str, key: str = KEY) -> Any:
    settings = WebSearchSettings(
        provider=provider, api_key="${secret:search-key}", base_url=f"{site}/{provider}/search"
    )
    return web_search_tool(settings, lambda text: text.replace("${secret:search-key}", key))


def test_exa_snippets_then_text_with_domain_filters(site: str) -> None:
    SEEN.clear()
    answer = _call(
        _search(site, "exa"), query="python 3.6", max_results=3, exclude_domains=["spam.example"]
    )
    assert [r["url"] for r in answer["results"]] == [
        "https://docs.python.org/a",
        "https://example.org/a",
    ]
    assert answer["results"][0]["text"] == "highlight 0 from docs.python.org"
    assert SEEN[-1]["body"] == {
        "query": "python 3.6", "numResults": 3, "type": "auto", "contents": {"highlights": True},
        "excludeDomains": ["spam.example"],
    }  # fmt: skip
    full = _call(
        _search(site, "exa"), query="q", content="text", include_domains=["docs.python.org"]
    )
    assert full["results"][0]["text"].startswith("Exa page text")
    assert SEEN[-1]["body"]["includeDomains"] == ["docs.python.org"]


def test_tavily_and_the_cap_on_full_text(site: str) -> None:
    answer = _call(_search(site, "tavily"), query="refunds", max_results=2, content="text")
    first, second = answer["results"]
    assert first["title"] == "Tavily one" and second["text"] == "second snippet"
    assert answer["truncated"] and len(first["text"]) == 25_000 + len(" [cut]")  # half each
    assert SEEN[-1]["body"]["search_depth"] == "advanced"


def test_brave_puts_domains_in_the_query(site: str) -> None:
    answer = _call(
        _search(site, "brave"), query="grinder", max_results=2, include_domains=["a.example"]
    )
    assert [r["title"] for r in answer["results"]] == ["Brave 0", "Brave 1"]
    assert SEEN[-1]["query"]["q"] == ["grinder (site:a.example)"]
    assert answer["results"][0]["published"] == "2 days ago"


def test_a_refused_key_is_an_error_that_never_shows_the_key(site: str) -> None:
    with pytest.raises(ToolError, match="HTTP 401") as refused:
        _call(_search(site, "exa", key="wrong-key-123"), query="x")
    assert "wrong-key-123" not in str(refused.value)


def test_without_a_provider_the_tool_says_what_to_configure() -> None:
    answer = _call(web_search_tool(None, lambda text: text), query="x")
    assert answer["error"] == "web_search is not configured" and "web.search" in answer["configure"]


def _scrape(allow: list[str] | None = None) -> Any:
    return web_scrape_tool(WebScrapeSettings(allow_private=allow or ["127.0.0.1"]))


def test_a_real_blog_page_becomes_clean_markdown(site: str) -> None:
    page = _call(_scrape(), url=f"{site}/pages/blog.python.org.html")
    text = page["content"]
    assert "Python 3.6.0 is now available!" in text
    assert (
        "[the What\u2019s New In Python 3.6 document](https://docs.python.org/3.6/whatsnew/3.6.html)"
        in text
    )
    assert "setAttributeOnload" not in text and "<script" not in text and "font-family" not in text
    assert not page["truncated"] and page["url"].endswith("blog.python.org.html")


def test_a_wikipedia_page_keeps_its_headings_and_gives_its_links(site: str) -> None:
    url = f"{site}/pages/en.wikipedia.org.tsne.html"
    page = _call(_scrape(), url=url)
    assert "t-distributed stochastic neighbor embedding" in page["content"]
    assert "\n## " in page["content"]
    links = _call(_scrape(), url=url, format="links")["links"]
    assert all(link["url"].startswith(("http://", "https://")) for link in links)
    assert any("wikipedia.org/wiki/" in link["url"] for link in links)
    raw = _call(_scrape(), url=url, format="html")["content"]
    assert raw.lstrip().lower().startswith("<!doctype html")


def test_redirects_caps_and_the_ssrf_guard(site: str) -> None:
    hop = _call(_scrape(), url=f"{site}/redirect?to=/pages/blog.python.org.html")
    assert "Python 3.6.0" in hop["content"]
    big = _call(_scrape(), url=f"{site}/big")
    assert big["truncated"] and len(big["content"]) == MAX_CHARS and big["total_chars"] > MAX_CHARS
    with pytest.raises(ToolError, match="refused"):
        _call(web_scrape_tool(WebScrapeSettings()), url=f"{site}/pages/blog.python.org.html")
    with pytest.raises(ToolError, match="refused"):
        _call(_scrape(), url=f"{site}/redirect?to=http://169.254.169.254/latest/meta-data/")
    for bad in ("file:///etc/passwd", "ftp://example.org/x"):
        with pytest.raises(ToolError):
            _call(_scrape(), url=bad)


def _firecrawl(site: str, key: str = KEY) -> Any:
    settings = WebScrapeSettings(
        firecrawl=FirecrawlSettings(api_key="${secret:fc}", base_url=f"{site}/firecrawl/v2/scrape")
    )
    return web_scrape_tool(settings, lambda text: text.replace("${secret:fc}", key))


def test_firecrawl_scrapes_in_its_documented_format(site: str) -> None:
    SEEN.clear()
    page = _call(_firecrawl(site), url="https://blog.example.org/post")
    assert page["content"] == "# Rendered\n\nText Firecrawl made from https://blog.example.org/post"
    assert page["url"] == "https://blog.example.org/post#final" and not page["truncated"]
    sent = SEEN[-1]
    assert sent["headers"]["authorization"] == f"Bearer {KEY}"
    assert sent["body"] == {
        "url": "https://blog.example.org/post", "formats": ["markdown"],
        "onlyMainContent": True, "timeout": 20_000,
    }  # fmt: skip
    links = _call(_firecrawl(site), url="https://blog.example.org/post", format="links")
    assert links["links"] == [
        {"url": "https://a.example/one", "text": ""},
        {"url": "https://b.example/", "text": ""},
    ]
    html = _call(_firecrawl(site), url="https://blog.example.org/post", format="html")
    assert html["content"].startswith("<html>") and SEEN[-1]["body"]["onlyMainContent"] is False


def test_firecrawl_errors_are_named_and_private_targets_never_sent(site: str) -> None:
    SEEN.clear()
    for target in ("http://169.254.169.254/latest/meta-data/", "file:///etc/passwd"):
        with pytest.raises(ToolError, match="refused"):
            _call(_firecrawl(site), url=target)
    assert SEEN == []  # refused before Firecrawl was asked
    with pytest.raises(ToolError, match="HTTP 402") as spent:
        _call(_firecrawl(site), url="https://credits.example/")
    assert "Insufficient credits" in str(spent.value) and KEY not in str(spent.value)
    with pytest.raises(ToolError, match="answered HTTP 404"):
        _call(_firecrawl(site), url="https://missing.example/")
    with pytest.raises(ToolError, match="HTTP 401"):
        _call(_firecrawl(site, key="not-the-key"), url="https://blog.example.org/")
