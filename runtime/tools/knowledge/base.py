"""What a knowledge base is to `knowledge_search`: something that answers a query with
scored passages. The kinds here are `local` (BM25 over a project folder) and `bedrock` (a
Bedrock Knowledge Base); a vector store plugs in by implementing `KnowledgeBase`."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any, Protocol

_WORD = re.compile(r"\w\w+", re.UNICODE)
#: English words too common to tell passages apart (index and query drop them alike).
STOPWORDS = frozenset(
    {
        "a", "an", "and", "are", "as", "at", "be", "been", "but", "by", "can", "do", "does",
        "for", "from", "had", "has", "have", "he", "her", "his", "how", "i", "if", "in", "into",
        "is", "it", "its", "me", "my", "no", "not", "of", "on", "or", "our", "she", "so", "than",
        "that", "the", "their", "them", "then", "there", "these", "they", "this", "to", "was",
        "we", "were", "what", "when", "where", "which", "who", "why", "will", "with", "would",
        "you", "your",
    }
)  # fmt: skip


def terms(text: str) -> list[str]:
    """The words BM25 counts: lowercase, two characters or more, stopwords left out."""
    return [w for w in _WORD.findall(text.lower()) if w not in STOPWORDS]


@dataclass(frozen=True)
class Hit:
    knowledge_base: str
    source: str  # the file (local) or the document's location (bedrock)
    chunk: str  # which part of it
    score: float
    text: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class KnowledgeBase(Protocol):
    """The interface of a knowledge base: a vector store implements the same `search`."""

    name: str
    description: str

    def search(self, query: str, max_results: int) -> list[Hit]: ...
