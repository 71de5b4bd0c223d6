"""storage_read pages through listings and text files (offset/limit), answers a binary file
with a download URL instead of its bytes, and S3 listings page past 1,000 keys (moto)."""

from __future__ import annotations

import asyncio
from typing import Any

import boto3
import pytest
from moto import mock_aws

from runtime.store.dynamo import S3Blobs
from runtime.store.memory import MemoryBlobs
from runtime.tools.base import ToolContext, ToolError
from runtime.tools.storage_tools import storage_tools

PREFIX = "storage/a/"


def _read(blobs: Any, **arguments: Any) -> Any:
    read = next(t for t in storage_tools(PREFIX) if t.name == "storage_read")
    ctx = ToolContext(run_id="r", session_id="s", agent="a", call_id="c", blobs=blobs)
    return asyncio.run(read.call(arguments, ctx))


def test_listings_and_text_files_page_with_offset_and_limit() -> None:
    blobs = MemoryBlobs()
    for i in range(5):
        blobs.put(f"{PREFIX}notes/{i}.txt", f"note {i}".encode())
    blobs.put(f"{PREFIX}book.txt", ("abcdefghij" * 3).encode())
    page = _read(blobs, path="notes/", offset=1, limit=2)
    assert [e["path"] for e in page] == ["notes/1.txt", "notes/2.txt"]
    assert _read(blobs, path="notes/", offset=4, limit=10) == [{"path": "notes/4.txt", "size": 6}]
    assert _read(blobs, path="book.txt") == "abcdefghij" * 3  # whole, as before
    first = _read(blobs, path="book.txt", limit=12)
    assert first == {"path": "book.txt", "content": "abcdefghijab", "offset": 0,
                     "total_chars": 30, "next_offset": 12}  # fmt: skip
    last = _read(blobs, path="book.txt", offset=first["next_offset"], limit=100)
    assert last["content"] == ("abcdefghij" * 3)[12:] and last["next_offset"] is None
    for bad in ({"offset": -1}, {"limit": 0}, {"offset": "2"}, {"limit": True}):
        with pytest.raises(ToolError):
            _read(blobs, path="book.txt", **bad)


@mock_aws
def test_a_binary_file_answers_with_a_presigned_url_and_listings_page_past_1000_keys() -> None:
    s3 = boto3.client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket="data")
    blobs = S3Blobs(s3, "data")
    blobs.put(f"{PREFIX}photo.png", b"\x89PNG\r\n\x1a\n\x00\xff", "image/png")
    answer = _read(blobs, path="photo.png")
    assert answer["binary"] and answer["size"] == 10 and answer["expires_in_seconds"] == 3600
    assert "photo.png" in answer["url"] and "Signature" in answer["url"]
    assert "\x89PNG" not in str(answer)
    with pytest.raises(ToolError, match="no file"):
        _read(blobs, path="gone.png")
    for i in range(1005):
        s3.put_object(Bucket="data", Key=f"{PREFIX}many/{i:05d}", Body=b"x")
    tail = _read(blobs, path="many/", offset=995, limit=20)
    assert [e["path"] for e in tail] == [f"many/{i:05d}" for i in range(995, 1005)]
