"""The web built-ins: the search provider behind `web_search`, and how `web_scrape` fetches."""

from typing import Literal

from pydantic import Field, HttpUrl

from runtime.spec.methods import FirecrawlMethods, WebSearchMethods
from runtime.spec.models import SpecModel
from runtime.spec.types import Duration, SecretRef


class WebSearchSettings(WebSearchMethods, SpecModel):
    provider: Literal["exa", "tavily", "brave"]
    api_key: SecretRef
    base_url: HttpUrl | None = Field(
        None, description="The provider's search endpoint; default: its public API."
    )
    timeout: Duration = Field(20.0, le=120)


class FirecrawlSettings(FirecrawlMethods, SpecModel):
    api_key: SecretRef
    base_url: HttpUrl | None = Field(
        None, description="Its scrape endpoint (a self-hosted Firecrawl); default: the public API."
    )


class WebScrapeSettings(SpecModel):
    firecrawl: FirecrawlSettings | None = Field(
        None,
        description="Scrape through Firecrawl (renders JavaScript) instead of fetching directly.",
    )
    allow_private: list[str] = Field(
        default_factory=list,
        description="Hosts or networks web_scrape may reach although private (like HTTP tools).",
    )
    timeout: Duration = Field(20.0, le=120)


class WebSettings(SpecModel):
    search: WebSearchSettings | None = Field(
        None, description="web_search's provider; absent: the tool answers what to configure."
    )
    scrape: WebScrapeSettings = Field(default_factory=WebScrapeSettings)
