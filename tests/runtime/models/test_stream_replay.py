"""Every recorded real exchange replayed both ways: one-shot, and as its provider's stream
(streamed.py re-tells the answer in the documented events). The streamed answer is the
one-shot answer exactly (text, tool calls with ids, arguments and signatures, usage, stop
reason); the text arrives in pieces that join into it; errors are the same errors; the
request asks for a stream the provider's way. Then what only a stream can do: fail midway."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field, replace
from typing import Any

import httpx
import pytest

from runtime.errors import ModelError, TransientModelError
from runtime.models.base import ModelRequest, ModelResponse
from runtime.structs import dump
from tests.aws_eventstream import event as aws_event
from tests.aws_eventstream import exception as aws_exception
from tests.runtime.models.recordings import Recording, Replay
from tests.runtime.models.streamed import STREAMS, pieces
from tests.runtime.models.test_replay import (  # offline_aws: the same autouse fixture
    RECORDINGS,
    call_view,
    offline_aws,  # noqa: F401
    replay,
)

ANSWERS = [r for r in RECORDINGS if r.status == 200]


@dataclass
class StreamReplay(Replay):
    """A Replay that answers a stream request with the recording told as a stream (or with
    `body`, raw, when given); errors are answered as recorded, before any stream."""

    raw: bytes | None = None
    urls: list[str] = field(default_factory=list)

    def model(self) -> Any:
        model = super().model()
        if self.recording.provider == "bedrock":
            model._bedrock().meta.events.register(
                "before-send.bedrock-runtime.ConverseStream", self._boto_stream
            )
        return model

    def _stream_body(self) -> bytes:
        return self.raw if self.raw is not None else STREAMS[self.recording.provider](self.recording.body)  # fmt: skip

    def _http_answer(self, request: httpx.Request) -> httpx.Response:
        self.urls.append(str(request.url))
        if self.recording.status != 200:
            return super()._http_answer(request)
        self.sent.append(json.loads(request.content))
        headers = {"content-type": "text/event-stream"}
        return httpx.Response(200, headers=headers, content=self._stream_body())

    def _boto_stream(self, request: Any, **_: Any) -> Any:
        from tests.aws_eventstream import response

        self.urls.append(request.url)
        if self.recording.status != 200:
            return super()._boto_answer(request)
        self.sent.append(json.loads(request.body))
        return response(request, self._stream_body(), stream=True)


def streamed(player: Replay, request: ModelRequest) -> tuple[ModelResponse, list[str]]:
    chunks: list[str] = []
    answer = asyncio.run(player.model().request(replace(request, on_text=chunks.append)))
    return answer, chunks


def _view(answer: ModelResponse) -> dict[str, Any]:
    return {
        "text": answer.text,
        "calls": [call_view(c) for c in answer.tool_calls],
        "usage": dump(answer.usage),
        "stop": answer.stop_reason,
    }


@pytest.mark.parametrize("recording", ANSWERS, ids=lambda r: r.name)
def test_the_streamed_answer_is_the_one_shot_answer(recording: Recording) -> None:
    once, request = replay(recording)
    whole = once.ask(once.model(), request)
    player = StreamReplay(recording, once.config)
    answer, chunks = streamed(player, request)
    assert _view(answer) == _view(whole)
    assert "".join(chunks) == (whole.text or "")
    if len(whole.text or "") >= 3:
        assert len(chunks) > 1  # it really arrived in pieces
    sent = player.sent[-1]
    provider = recording.provider
    if provider == "anthropic":
        assert sent["stream"] is True
    elif provider == "gemini":
        assert ":streamGenerateContent?alt=sse" in player.urls[-1]
    elif provider == "bedrock":
        assert player.urls[-1].endswith("/converse-stream")
    else:
        assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}
    body = {k: v for k, v in sent.items() if k not in ("stream", "stream_options")}
    assert body == once.sent[-1]  # otherwise the very request the one-shot call sends


@pytest.mark.parametrize("recording", [r for r in RECORDINGS if r.status != 200], ids=lambda r: r.name)  # fmt: skip
def test_an_error_answer_is_the_same_error_when_streaming(recording: Recording) -> None:
    once, request = replay(recording)
    with pytest.raises(ModelError) as one_shot:
        once.ask(once.model(), request)
    with pytest.raises(ModelError) as streaming:
        streamed(StreamReplay(recording, once.config), request)
    assert type(streaming.value) is type(one_shot.value)
    assert str(streaming.value) == str(one_shot.value)


def _named(name: str) -> Recording:
    return next(r for r in RECORDINGS if r.name == name)


def test_an_anthropic_overload_midway_is_retried_and_said_so() -> None:
    recording = _named("anthropic__text")
    told = STREAMS["anthropic"](recording.body).split(b"event: content_block_stop")[0]
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    raw = told + f"event: error\ndata: {json.dumps(error)}\n\n".encode()
    once, request = replay(recording)
    with pytest.raises(TransientModelError, match="overloaded"):
        streamed(StreamReplay(recording, once.config, raw=raw), request)


def test_a_bedrock_throttle_midway_is_transient() -> None:
    recording = _named("bedrock__text")
    raw = aws_event("messageStart", {"role": "assistant"}) + aws_event(
        "contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Hel"}}
    )
    raw += aws_exception("throttlingException", "Too many requests, please wait.")
    once, request = replay(recording)
    with pytest.raises(TransientModelError, match="ThrottlingException"):
        streamed(StreamReplay(recording, once.config, raw=raw), request)


def test_a_connection_cut_midway_is_transient_and_a_server_that_ignores_stream_is_read() -> None:
    recording = _named("openai__text")
    once, request = replay(recording)

    class Cut(httpx.AsyncByteStream):
        async def __aiter__(self) -> Any:
            yield b'data: {"choices":[{"index":0,"delta":{"content":"Hel"}}]}\n\n'
            raise httpx.RemoteProtocolError("peer closed connection")

    def cut(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=Cut())

    player = StreamReplay(recording, once.config)
    player._http_answer = cut  # type: ignore[method-assign]
    with pytest.raises(TransientModelError, match="broke off"):
        streamed(player, request)
    plain = Replay(recording, once.config)  # answers JSON to a stream request
    answer, chunks = streamed(plain, request)
    assert answer.text == recording.expect["text"] and chunks == [answer.text]


def test_pieces_join_back() -> None:
    for text in ("", "a", "hello world", "x" * 101):
        assert "".join(pieces(text)) == text


def test_a_server_that_rejects_stream_options_is_streamed_without_them_from_then_on() -> None:
    """Older Azure API versions and some compatible servers refuse `stream_options`."""
    recording = _named("openai__text")
    once, request = replay(recording)
    player = StreamReplay(recording, once.config)
    bodies: list[dict[str, Any]] = []

    def picky(wire: httpx.Request) -> httpx.Response:
        body = json.loads(wire.content)
        bodies.append(body)
        if "stream_options" in body:
            error = {"error": {"message": "Unrecognized request argument supplied: stream_options",
                               "type": "invalid_request_error", "code": None}}  # fmt: skip
            return httpx.Response(400, json=error)
        return httpx.Response(200, headers={"content-type": "text/event-stream"},
                              content=STREAMS["openai"](recording.body))  # fmt: skip

    player._http_answer = picky  # type: ignore[method-assign]
    model = player.model()
    for _ in range(2):
        answer = asyncio.run(model.request(replace(request, on_text=lambda text: None)))
        assert answer.text == recording.expect["text"]
    assert ["stream_options" in b for b in bodies] == [True, False, False]  # remembered
    assert all(b["stream"] is True for b in bodies)
