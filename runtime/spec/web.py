"""The web built-ins: the search provider behind `web_search`, and how `web_scrape` fetches."""

from typing import Literal

from pydantic import Field, HttpUrl

from runtime.spec.models import SpecModel
from runtime.spec.types import Duration, SecretRef

SEARCH_URLS = {
    "exa": "https://api.exa.ai/search",
    "tavily": "https://api.tavily.com/search",
    "brave": "https://api.search.brave.com/res/v1/web/search",
}


class WebSearchSettings(SpecModel):
    provider: Literal["exa", "tavily", "brave"]
    api_key: SecretRef
    base_url: HttpUrl | None = Field(
        None, description="The provider's search endpoint; default: its public API."
    )
    timeout: Duration = Field(20.0, le=120)

    def endpoint(self) -> str:
        return str(self.base_url) if self.base_url else SEARCH_URLS[self.provider]


FIRECRAWL_URL = "https://api.firecrawl.dev/v2/scrape"


class FirecrawlSettings(SpecModel):
    api_key: SecretRef
    base_url: HttpUrl | None = Field(
        None, description="Its scrape endpoint (a self-hosted Firecrawl); default: the public API."
    )

    def endpoint(self) -> str:
        return str(self.base_url) if self.base_url else FIRECRAWL_URL


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
