"""Local knowledge bases: a folder of Markdown/text files, chunked, and scored with BM25.

The index is made by `bm25s` (a maintained BM25 library), which computes every (term,
chunk) score ahead of time; `agentfn build` saves it as JSON in the package
(`knowledge_index/{name}.json`). A query then only adds up the saved scores of its terms, in
plain Python: no library and no vector database in Lambda. Locally, when the folder is there,
the index is made from it on first use (always current).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from runtime.spec.plain import LocalKnowledgeBase
from runtime.tools.knowledge.base import Hit, terms

SUFFIXES = (".md", ".markdown", ".txt")
INDEX_DIR = "knowledge_index"  # in the package: {name}.json per local knowledge base
_HEADING = re.compile(r"^#{1,6}\s+(.*)$")


def chunks_of(folder: Path, chunk_chars: int) -> list[dict[str, str]]:
    """Paragraph-aligned chunks of every file under `folder`, each headed by the nearest
    Markdown heading above it (a paragraph longer than `chunk_chars` is cut)."""
    found: list[dict[str, str]] = []
    for path in sorted(p for p in folder.rglob("*") if p.suffix.lower() in SUFFIXES):
        source = path.relative_to(folder).as_posix()
        heading, current, first_of_file = "", "", len(found)
        pieces = [p.strip() for p in re.split(r"\n\s*\n", path.read_text(encoding="utf-8"))]
        for piece in filter(None, pieces):
            title = _HEADING.match(piece.splitlines()[0])
            if title:  # a heading starts a new chunk: what came before keeps its own heading
                if current:
                    found.append(_chunk(source, len(found) - first_of_file, heading, current))
                    current = ""
                heading = title.group(1).strip()
            while len(piece) > chunk_chars:
                found.append(
                    _chunk(source, len(found) - first_of_file, heading, piece[:chunk_chars])
                )
                piece = piece[chunk_chars:]
            if current and len(current) + len(piece) + 2 > chunk_chars:
                found.append(_chunk(source, len(found) - first_of_file, heading, current))
                current = ""
            current = f"{current}\n\n{piece}" if current else piece
        if current:
            found.append(_chunk(source, len(found) - first_of_file, heading, current))
    return found


def _chunk(source: str, number: int, heading: str, text: str) -> dict[str, str]:
    return {"source": source, "chunk": f"{source}#{number}", "heading": heading, "text": text}


def build_index(folder: Path, chunk_chars: int) -> dict[str, Any]:
    """The index of a folder: its chunks, and per term the chunks it scores in (bm25s)."""
    import bm25s

    chunks = chunks_of(folder, chunk_chars)
    tokenized = [terms(f"{c['heading']}\n{c['text']}") or ["\u2205"] for c in chunks]
    model = bm25s.BM25()
    model.index(tokenized, show_progress=False)
    scores = model.scores
    postings: dict[str, list[list[float]]] = {}
    columns = len(scores["indptr"]) - 1
    for term, column in model.vocab_dict.items():
        if not term or column >= columns:  # bm25s keeps an empty token with no column
            continue
        start, end = int(scores["indptr"][column]), int(scores["indptr"][column + 1])
        docs = scores["indices"][start:end]
        values = scores["data"][start:end]
        if len(docs):
            postings[term] = [
                [int(d), round(float(v), 6)] for d, v in zip(docs, values, strict=True)
            ]
    return {"version": 1, "chunks": chunks, "postings": postings}


class LocalIndex:
    def __init__(self, name: str, config: LocalKnowledgeBase, index: dict[str, Any]):
        self.name = name
        self.description = config.description
        self._chunks = index["chunks"]
        self._postings = index["postings"]

    def search(self, query: str, max_results: int) -> list[Hit]:
        totals: dict[int, float] = {}
        for term in set(terms(query)):
            for doc, score in self._postings.get(term, ()):
                totals[int(doc)] = totals.get(int(doc), 0.0) + score
        best = sorted(totals.items(), key=lambda item: (-item[1], item[0]))[:max_results]
        return [
            Hit(
                self.name,
                self._chunks[d]["source"],
                self._chunks[d]["chunk"],
                round(s, 4),
                self._chunks[d]["text"],
            )
            for d, s in best
        ]


def load_local(name: str, config: LocalKnowledgeBase, project: Path) -> LocalIndex:
    """The folder's index made now when the folder is here (local runs), else the one
    `agentfn build` shipped in the package."""
    folder = project / config.path
    if folder.is_dir():
        return LocalIndex(name, config, build_index(folder, config.chunk_chars))
    shipped = project / INDEX_DIR / f"{name}.json"
    if not shipped.is_file():
        from runtime.tools.base import ToolError

        raise ToolError(
            f"knowledge base {name!r} has neither its folder ({config.path}) nor a built index; "
            "run `agentfn build`"
        )
    return LocalIndex(name, config, json.loads(shipped.read_text(encoding="utf-8")))
