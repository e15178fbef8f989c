"""Scrubbing API keys out of text before it leaves the engine (error messages, logs).

Every key the engine is given (``api_key``, the key's environment variable, secret-looking
request parameters) is registered here when its endpoint is opened; anything shaped like an
OpenAI key, and the credentials of any URL (``https://user:key@host``), are masked too.
The judge's replies are scrubbed as they arrive, so a key the judge echoes is stored nowhere.
See docs/llm.md (secrets) and docs/security.md.
"""

from __future__ import annotations

import re

from graphrag_eval.config.secrets import mask_url_credentials

__all__ = ["Redactor"]

_SECRET_PATTERN = re.compile(r"\b(sk-[A-Za-z0-9_\-]{3})[A-Za-z0-9_\-]{6,}")


class Redactor:
    """The secrets of one engine, and the scrubbing of text that might contain them."""

    def __init__(self) -> None:
        self.secrets: set[str] = set()

    def add(self, *secrets: str | None) -> None:
        """Remember ``secrets`` (``None`` is ignored) to scrub them later."""
        self.secrets.update(secret for secret in secrets if secret)

    def redact(self, text: str) -> str:
        """``text`` with every known secret (and anything shaped like a key) replaced."""
        for secret in self.secrets:
            if len(secret) >= 4:
                text = text.replace(secret, "***")
        return mask_url_credentials(_SECRET_PATTERN.sub(r"\1***", text))
