"""A provider that cannot be reached: the error names the server's address (its origin: a
URL's query may carry a key) and, for a server on this machine, what to check. A real
refused connection on loopback (a port just closed), through each provider's own client."""

from __future__ import annotations

import asyncio
import socket

import pytest

from runtime.errors import TransientModelError
from runtime.messages import UserMessage
from runtime.models.base import ModelRequest
from runtime.models.factory import build_model
from runtime.spec import models as spec

REQUEST = ModelRequest(system="s", messages=[UserMessage(content="hi")])


def _closed_port() -> int:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        return int(listener.getsockname()[1])  # closed on leaving: connecting is refused


def _failure(config: spec.ModelConfig) -> str:
    model = build_model("m", config.to_runtime(), lambda _: "sk-test-secret")
    with pytest.raises(TransientModelError) as caught:
        asyncio.run(model.request(REQUEST))
    return str(caught.value)


def test_ollama_not_running_is_named_with_its_address_and_how_to_start_it() -> None:
    port = _closed_port()
    base = f"http://127.0.0.1:{port}/v1"
    message = _failure(spec.OllamaModel(provider="ollama", model_id="llama3.2", base_url=base))
    assert message.startswith(f"ollama request failed: cannot connect to http://127.0.0.1:{port} (")
    assert "`ollama serve`" in message and "base_url" in message


def test_another_local_server_is_named_without_its_key() -> None:
    port = _closed_port()
    config = spec.OpenAICompatibleModel(
        provider="openai_compatible",
        model_id="m",
        base_url=f"http://localhost:{port}/v1?token=sk-test-secret",
        api_key="${secret:key}",
    )
    message = _failure(config)
    assert f"cannot connect to http://localhost:{port} (" in message
    assert "is the server running there?" in message
    assert "sk-test-secret" not in message and "token=" not in message
