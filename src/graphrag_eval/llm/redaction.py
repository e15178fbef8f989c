"""Scrubbing secrets out of text before it leaves the engine (replies, error messages, logs):
the one place that knows every form in which a secret is sent or may come back.

Every secret the engine is given (``api_key``, the key's environment variable, values under
secret-looking request parameters, the credentials of a ``base_url``) is registered here when
its endpoint is opened, and with it each form in which it travels or an endpoint may echo it:
as is, percent-decoded and percent-encoded (URL-encoded), in base64 (the basic authentication
header carries ``base64(user:password)``), escaped in JSON, and as ``repr`` shows those bytes.
Anything shaped like an OpenAI key, and the credentials of any URL (``https://user:key@host``),
are masked too; so is the start of a secret that ends a text (a message cut to its first
few hundred characters). The judge's replies, its error messages and the replies read from
the cache all pass through :meth:`Redactor.redact`, so a secret an endpoint echoes is stored
and shown nowhere. See docs/llm.md (secrets) and docs/security.md.
"""

from __future__ import annotations

import base64
import json
import re
import urllib.parse

from graphrag_eval.config.secrets import mask_url_credentials

__all__ = ["Redactor", "secret_forms"]

_SECRET_PATTERN = re.compile(r"\b(sk-[A-Za-z0-9_\-]{3})[A-Za-z0-9_\-]{6,}")

MIN_SECRET = 4
"""Shorter strings are not redacted (they would mask ordinary words), nor is a cut-off start
of a secret that is shorter than this."""

_CLOSING = "'\")]}."
"""What may follow a cut-off secret at the end of a text (the closing quote of a ``repr``)."""


def secret_forms(secret: str) -> set[str]:
    """``secret`` in every form in which it may be sent or echoed (at least
    :data:`MIN_SECRET` characters each): as is, percent-decoded, percent-encoded (upper and
    lower case hex, ``+`` for a space), whitespace collapsed, in base64 (standard and
    URL-safe, with and without the padding), escaped in JSON, and as ``repr`` shows their bytes."""
    plain = {secret, urllib.parse.unquote(secret), urllib.parse.unquote_plus(secret)}
    forms = set(plain)
    for value in plain:
        forms.add(" ".join(value.split()))
        for encoded in (
            urllib.parse.quote(value, safe="", errors="surrogatepass"),
            urllib.parse.quote_plus(value, safe="", errors="surrogatepass"),
            urllib.parse.quote(value, errors="surrogatepass"),
        ):
            forms.update((encoded, re.sub(r"%[0-9A-F]{2}", lambda m: m[0].lower(), encoded)))
        raw = value.encode("utf-8", "surrogatepass")
        for encoded in (base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()):
            forms.update((encoded, encoded.rstrip("=")))
    for value in list(forms):
        for escaped in (json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]):
            forms.update((escaped, escaped.replace("/", "\\/")))
    for value in list(forms):
        forms.add(repr(value.encode("utf-8", "surrogatepass"))[2:-1])
    return {form for form in forms if len(form) >= MIN_SECRET}


class Redactor:
    """The secrets of one engine, and the scrubbing of text that might contain them."""

    def __init__(self) -> None:
        self.secrets: set[str] = set()
        """The secrets registered (each is masked in all its :func:`secret_forms`)."""
        self._forms: tuple[str, ...] = ()
        """Every form of every secret, the longest first."""
        self._starts: dict[str, list[str]] = {}
        """The forms by their first :data:`MIN_SECRET` characters."""
        self._start: re.Pattern[str] | None = None
        """Finds those starts (overlapping ones too)."""

    def add(self, *secrets: str | None) -> None:
        """Remember ``secrets`` (``None`` is ignored) to scrub them, in every form, later."""
        new = {secret for secret in secrets if secret and len(secret) >= MIN_SECRET}
        if new <= self.secrets:
            return
        self.secrets |= new
        forms = set(self._forms)
        for secret in new:
            forms |= secret_forms(secret)
        self._forms = tuple(sorted(forms, key=lambda form: (-len(form), form)))
        self._starts = {}
        for form in self._forms:
            self._starts.setdefault(form[:MIN_SECRET], []).append(form)
        alternatives = "|".join(re.escape(start) for start in self._starts)
        self._start = re.compile(f"(?=({alternatives}))")

    def redact(self, text: str) -> str:
        """``text`` with every known secret in any of its forms (and anything shaped like a
        key, and the credentials of URLs) replaced by ``***``; a text that ends with the
        start of a secret (a message cut short) has that start replaced too."""
        for form in self._forms:
            if form in text:
                text = text.replace(form, "***")
        text = self._cut_off(text)
        if "sk-" in text:  # the patterns only where they may match: this runs on every reply
            text = _SECRET_PATTERN.sub(r"\1***", text)
        return mask_url_credentials(text) if "://" in text else text

    def _cut_off(self, text: str) -> str:
        """``text`` without the start of a secret that ends it (before a closing quote)."""
        if self._start is None:
            return text
        end = len(text.rstrip(_CLOSING))
        start = max(0, end - len(self._forms[0]) + 1)
        for found in self._start.finditer(text, start, end):
            tail = text[found.start() : end]
            if any(form.startswith(tail) for form in self._starts[found[1]]):
                return text[: found.start()] + "***" + text[end:]
        return text
