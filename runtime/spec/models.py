"""Model configurations: one class per provider, a discriminated union on `provider`.

The `scripted` provider's format is a contract (tests and demos depend on it): entry *i* of
`script` answers the *i*-th model call of a run, counted from the run's persisted history.
"""

from typing import Annotated, Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, HttpUrl, model_validator

from runtime.spec.types import Duration, Name, SecretRef


class SpecModel(BaseModel):
    """Base of every spec section: unknown keys are errors, not silently ignored, and no
    number is infinite or NaN (neither has a JSON form nor a meaning as a bound)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, defer_build=True)

    def to_runtime(self) -> Any:
        """This section as the run time reads it: the struct of the same name in
        runtime.spec.plain, from this section's JSON (a validated section handed to the
        engine's code in process: a model of `agentfn eval`, a tool in a test)."""
        from runtime.spec import plain
        from runtime.structs import load

        data = self.model_dump(mode="json", by_alias=True)
        return load(getattr(plain, type(self).__name__), data)


class RetrySettings(SpecModel):
    """How transient model errors (429/503/throttling/overloaded) are retried."""

    max_attempts: int = Field(4, ge=1, le=20, description="Attempts per model, first included.")
    base_delay: Duration = Field(1.0, description="First backoff; doubles each attempt.")
    max_delay: Duration = Field(20.0, description="Backoff ceiling (Retry-After wins if larger).")


#: The Chat Completions request field that carries `max_tokens` (runtime.models.openai_chat).
MaxTokensField = Literal["max_tokens", "max_completion_tokens"]
#: Which OpenAI API an openai/azure_openai model speaks (runtime.models.openai_responses).
OpenAIApi = Literal["chat_completions", "responses"]
OPENAI_API_HELP = (
    "chat_completions: POST /chat/completions (default). responses: POST /responses, "
    "OpenAI's Responses API (instructions, input items, function tools, max_output_tokens)."
)
MAX_TOKENS_FIELD_HELP = (
    "The request field that carries max_tokens. Default: max_completion_tokens for openai and "
    "for azure_openai reasoning models (o1, o3, o4-mini, gpt-5…), max_tokens otherwise."
)


class Price(SpecModel):
    """US dollars per million tokens. `agentfn build` fills it in from the genai-prices
    data set for the models it knows; write it for private or negotiated prices."""

    input_per_mtok: float = Field(ge=0)
    output_per_mtok: float = Field(ge=0)
    cache_read_per_mtok: float | None = Field(None, ge=0)
    source: str | None = Field(None, description="Where the figures come from (informative).")


class _ModelBase(SpecModel):
    temperature: float | None = Field(None, ge=0, le=2)
    max_tokens: int | None = Field(None, ge=1, le=1_000_000)
    timeout: Duration = Field(60.0, description="Per-request timeout.")
    stream: bool = Field(
        True,
        description="Stream the answer's text as it is written (live to the terminal, SSE "
        "and WebSocket watchers); false: one call, one answer.",
    )
    context_window: int | None = Field(
        None,
        ge=1024,
        le=100_000_000,
        description="Tokens the model reads at most; default: known per model, else the "
        "provider's usual (runtime.models.windows).",
    )
    fallbacks: list[Name] = Field(
        default_factory=list, description="Other models tried in order when this one fails."
    )
    retry: RetrySettings = Field(default_factory=RetrySettings)
    price: Price | None = Field(None, description="Default: from the genai-prices data set.")


class BedrockModel(_ModelBase):
    """Amazon Bedrock through the Converse API (boto3), IAM-scoped to this model id."""

    provider: Literal["bedrock"]
    model_id: str = Field(min_length=1, examples=["us.anthropic.claude-sonnet-4-20250514-v1:0"])
    region: str | None = Field(None, description="Defaults to the Lambda's region.")


class OpenAIModel(_ModelBase):
    provider: Literal["openai"]
    model_id: str = Field(min_length=1, examples=["gpt-4.1"])
    api_key: SecretRef
    base_url: HttpUrl | None = None
    organization: str | None = None
    max_tokens_field: MaxTokensField | None = Field(None, description=MAX_TOKENS_FIELD_HELP)
    api: OpenAIApi = Field("chat_completions", description=OPENAI_API_HELP)


class AzureOpenAIModel(_ModelBase):
    provider: Literal["azure_openai"]
    model_id: str = Field(min_length=1, description="The model name, reported as model_used.")
    base_url: HttpUrl = Field(description="https://RESOURCE.openai.azure.com")
    deployment: str = Field(min_length=1)
    api_version: str = Field("2024-10-21", min_length=1)
    api_key: SecretRef
    max_tokens_field: MaxTokensField | None = Field(None, description=MAX_TOKENS_FIELD_HELP)
    api: OpenAIApi = Field(
        "chat_completions",
        description=OPENAI_API_HELP + " On Azure: {base_url}/openai/v1/responses, the "
        "deployment as the model (api_version is not used).",
    )


class AnthropicModel(_ModelBase):
    provider: Literal["anthropic"]
    model_id: str = Field(min_length=1, examples=["claude-sonnet-4-20250514"])
    api_key: SecretRef
    base_url: HttpUrl | None = None


class GeminiModel(_ModelBase):
    provider: Literal["gemini"]
    model_id: str = Field(min_length=1, examples=["gemini-2.5-flash"])
    api_key: SecretRef
    base_url: HttpUrl | None = None


class OllamaModel(_ModelBase):
    provider: Literal["ollama"]
    model_id: str = Field(min_length=1, examples=["qwen3"])
    base_url: HttpUrl = HttpUrl("http://localhost:11434/v1")
    api_key: SecretRef | None = None
    max_tokens_field: MaxTokensField | None = Field(None, description=MAX_TOKENS_FIELD_HELP)


class OpenAICompatibleModel(_ModelBase):
    provider: Literal["openai_compatible"]
    model_id: str = Field(min_length=1)
    base_url: HttpUrl
    api_key: SecretRef | None = None
    max_tokens_field: MaxTokensField | None = Field(None, description=MAX_TOKENS_FIELD_HELP)


class AiGatewayModel(_ModelBase):
    """Vercel AI Gateway through its OpenAI-compatible endpoint: one key reaches many
    providers' models, named `creator/model` (https://vercel.com/docs/ai-gateway)."""

    provider: Literal["ai_gateway"]
    model_id: str = Field(min_length=1, examples=["anthropic/claude-sonnet-4", "openai/gpt-4.1"])
    api_key: SecretRef = Field(description="The AI Gateway API key (AI_GATEWAY_API_KEY).")
    base_url: HttpUrl = HttpUrl("https://ai-gateway.vercel.sh/v1")
    max_tokens_field: MaxTokensField | None = Field(None, description=MAX_TOKENS_FIELD_HELP)


class Usage(SpecModel):
    input_tokens: int = Field(0, ge=0)
    output_tokens: int = Field(0, ge=0)


class ScriptedToolCall(SpecModel):
    name: str = Field(min_length=1)
    arguments: dict[str, Any] | str = Field(
        default_factory=dict,
        description="A mapping; a string is sent as raw (possibly invalid) JSON, for tests.",
    )
    id: str | None = Field(None, description="Tool call id; generated when omitted.")


class ScriptedError(SpecModel):
    """Makes this model call fail, to exercise retries, fallbacks and error handling."""

    status: int | None = Field(None, ge=400, le=599, description="HTTP-like status, e.g. 429.")
    code: str = Field("ModelError", min_length=1, examples=["ThrottlingException"])
    message: str = "scripted model error"


class ScriptEntry(SpecModel):
    """One model answer: a final `text` (string or mapping), `tool_calls`, or an `error`."""

    text: str | dict[str, Any] | list[Any] | None = None
    tool_calls: list[ScriptedToolCall] = Field(default_factory=list)
    usage: Usage | None = None
    stop_reason: Literal["end_turn", "tool_use", "max_tokens"] | None = None
    error: ScriptedError | None = None

    @model_validator(mode="after")
    def _says_something(self) -> Self:
        if self.text is None and not self.tool_calls and self.error is None:
            raise ValueError("a script entry needs `text`, `tool_calls` or `error`")
        return self


class ScriptedModel(_ModelBase):
    """Deterministic answers for tests and offline demos."""

    provider: Literal["scripted"]
    model_id: str = Field("scripted", min_length=1)
    script: list[ScriptEntry] = Field(min_length=1)


ModelConfig = Annotated[
    BedrockModel
    | OpenAIModel
    | AzureOpenAIModel
    | AnthropicModel
    | GeminiModel
    | OllamaModel
    | OpenAICompatibleModel
    | AiGatewayModel
    | ScriptedModel,
    Field(discriminator="provider"),
]

PROVIDERS = (
    "bedrock",
    "openai",
    "azure_openai",
    "anthropic",
    "gemini",
    "ollama",
    "openai_compatible",
    "ai_gateway",
    "scripted",
)
