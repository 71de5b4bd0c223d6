"""Knowledge bases the built-in `knowledge_search` tool searches."""

from typing import Annotated, Literal

from pydantic import Field

from runtime.spec.models import SpecModel


class LocalKnowledgeBase(SpecModel):
    """A folder of Markdown and text files in the project, chunked and indexed (BM25) at
    `agentfn build`; the index ships in the package, so search works offline and in Lambda
    without a vector database."""

    kind: Literal["local"]
    path: str = Field(min_length=1, description="A folder, relative to agents.yaml.")
    description: str = Field("", description="What it holds (shown to the model).")
    chunk_chars: int = Field(1200, ge=200, le=8000, description="Largest chunk, in characters.")


class BedrockKnowledgeBase(SpecModel):
    """An Amazon Bedrock Knowledge Base, searched with its Retrieve API."""

    kind: Literal["bedrock"]
    knowledge_base_id: str = Field(pattern=r"^[0-9A-Za-z]{10}$")
    region: str | None = Field(None, pattern=r"^[a-z]{2}(-[a-z]+)+-\d$")
    description: str = ""


KnowledgeBaseConfig = Annotated[
    LocalKnowledgeBase | BedrockKnowledgeBase, Field(discriminator="kind")
]
