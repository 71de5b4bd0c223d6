"""Context windows: how many tokens each model reads at most.

A model's `context_window` in the spec wins; otherwise the first pattern below that its
model id contains (lower-cased) decides, then the provider's usual size. The figures are
the providers' published input limits; a wrong guess only moves when compaction starts
(and a provider's "prompt too long" answer still compacts and retries).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from runtime.spec.plain import ModelConfig

if TYPE_CHECKING:
    from runtime.spec import models

#: (substring of the model id, tokens), most specific first.
KNOWN_WINDOWS: tuple[tuple[str, int], ...] = (
    ("gpt-4.1", 1_047_576),
    ("gpt-5", 400_000),
    ("gpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-4-32k", 32_768),
    ("gpt-4", 8_192),
    ("gpt-3.5", 16_385),
    ("o4-mini", 200_000),
    ("o3", 200_000),
    ("o1-mini", 128_000),
    ("o1", 200_000),
    ("claude", 200_000),
    ("gemini-1.5-pro", 2_097_152),
    ("gemini", 1_048_576),
    ("nova-premier", 1_000_000),
    ("nova-micro", 128_000),
    ("nova", 300_000),
    ("llama3-", 8_192),
    ("llama-3", 131_072),
    ("llama3.", 131_072),
    ("llama4", 1_000_000),
    ("mistral-large", 131_072),
    ("mixtral", 32_768),
    ("qwen3", 40_960),
    ("qwen2.5", 32_768),
    ("deepseek", 128_000),
    ("command-r", 128_000),
)

#: When nothing above matches. Ollama's is its default `num_ctx` (what it really reads
#: unless the server is configured otherwise); scripted models have no limit worth the name.
PROVIDER_WINDOWS: dict[str, int] = {
    "bedrock": 128_000,
    "openai": 128_000,
    "azure_openai": 128_000,
    "anthropic": 200_000,
    "gemini": 1_048_576,
    "ollama": 4_096,
    "openai_compatible": 32_768,
    "ai_gateway": 128_000,
    "scripted": 1_000_000,
}


def context_window(config: ModelConfig | models.ModelConfig) -> int:
    """Either form of the spec's model (`agentfn validate` asks with the validated one)."""
    if config.context_window is not None:
        return config.context_window
    if config.provider != "ollama":  # Ollama reads num_ctx tokens, whatever the model could
        model_id = config.model_id.lower()
        for pattern, tokens in KNOWN_WINDOWS:
            if pattern in model_id:
                return tokens
    return PROVIDER_WINDOWS.get(config.provider, 32_768)


#: Tokens kept free for the answer when the model's `max_tokens` is not set (Anthropic's
#: adapter asks for this much by default).
DEFAULT_ANSWER_TOKENS = 4_096


def answer_reserve(config: ModelConfig) -> int:
    """The tokens of the window kept free for the answer: the model's `max_tokens` (some
    providers refuse a prompt plus max_tokens over the window), at most half the window;
    unset, 4,096, at most a quarter of it (a small window still leaves room to work)."""
    window = context_window(config)
    if config.max_tokens is not None:
        return min(config.max_tokens, window // 2)
    return min(DEFAULT_ANSWER_TOKENS, window // 4)


def prompt_budget(config: ModelConfig) -> int:
    """The most tokens a prompt to this model may take: its window less the answer's reserve."""
    return context_window(config) - answer_reserve(config)
