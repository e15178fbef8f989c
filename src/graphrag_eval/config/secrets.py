"""Secrets in a config: finding the values under secret-looking names (to redact them from
messages) and masking them (in ``run.yaml``); see docs/security.md."""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from typing import Any

__all__ = [
    "basic_credentials",
    "mask_secrets",
    "mask_url_credentials",
    "proxy_credentials",
    "secret_values",
    "url_credentials",
    "without_secrets",
]


_SECRET_NAME = re.compile(
    r"key|token|secret|passw|authorization|^auth|[_-]auth|headers?$|signature|^sig$|credential",
    re.IGNORECASE,
)
"""A name whose value is a secret: it contains key, token, secret or password (or is an
authorization header, or the headers themselves); ``..._env`` names a variable instead."""

_URL_CREDENTIALS = re.compile(
    r"(?P<scheme>\b[a-z][a-z0-9+.\-]*://)(?P<user>[^/\s@:]*)(?::(?P<password>[^/\s@]*))?@",
    re.IGNORECASE,
)


def _secret_name(name: object) -> bool:
    text = str(name)
    return bool(_SECRET_NAME.search(text)) and not text.lower().endswith("_env")


def basic_credentials(url: str) -> str | None:
    """The ``user:password`` that basic authentication sends for the credentials written
    into ``url`` (``https://user:pass%40word@host/``: ``user:pass@word``, percent-decoded;
    ``https://key@host/``: ``key:``), or ``None`` when it holds none."""
    import urllib.parse

    parts = urllib.parse.urlsplit(url)
    if parts.username is None and parts.password is None:
        return None
    user = urllib.parse.unquote(parts.username or "")
    password = urllib.parse.unquote(parts.password or "")
    return f"{user}:{password}"


def url_credentials(url: str | None) -> list[str]:
    """The secrets written into ``url``, to redact: the password of ``https://user:key@host/``
    (or the user part of ``https://key@host/``) as written and percent-decoded, and the
    ``user:password`` that basic authentication sends (whose base64 goes in the header:
    :class:`~graphrag_eval.llm.redaction.Redactor` derives that form)."""
    if not url:
        return []
    import urllib.parse

    found: list[str] = []
    for match in _URL_CREDENTIALS.finditer(url):
        part = match["password"] or match["user"]
        if part:
            found += [part, urllib.parse.unquote(part)]
    try:
        sent = basic_credentials(url)
    except ValueError:  # not a URL the clients would take either
        sent = None
    if sent is not None:
        found.append(sent)
    return list(dict.fromkeys(found))


def proxy_credentials() -> list[str]:
    """The secrets written into the proxy URLs the environment names (``HTTPS_PROXY``,
    ``HTTP_PROXY``, ``ALL_PROXY``, ...), to redact as :func:`url_credentials` does: a proxy
    may echo its ``Proxy-Authorization`` in an error page."""
    import urllib.request

    found: list[str] = []
    for url in urllib.request.getproxies().values():
        found += url_credentials(url)
    return list(dict.fromkeys(found))


_QUERY_PARAMETER = re.compile(r"(?P<name>(?<=[?&;])[^=&;#\s?]+)=(?P<value>[^&;#\s]*)")


def mask_url_credentials(text: str) -> str:
    """``text`` with the credentials of every URL in it replaced (``https://***@host/``), and
    the values of query parameters named like a secret (``?api_key=...``) too."""
    text = _URL_CREDENTIALS.sub(r"\g<scheme>***@", text)
    if "=" not in text or "?" not in text:
        return text

    def masked(match: re.Match[str]) -> str:
        if match["value"] and _secret_name(match["name"]):
            return f"{match['name']}=***"
        return match.group(0)

    return _QUERY_PARAMETER.sub(masked, text)


def secret_values(data: Any, under_secret: bool = False) -> set[str]:
    """The string values in request parameters stored under secret-looking names
    (``extra_headers: {api-key: ...}``, ``Authorization``), to redact from messages."""
    found: set[str] = set()
    if isinstance(data, Mapping):
        for key, value in data.items():
            found |= secret_values(value, under_secret or _secret_name(key))
    elif isinstance(data, list):
        for item in data:
            found |= secret_values(item, under_secret)
    elif under_secret and isinstance(data, str) and len(data) >= 4:
        found.add(data)
        found.add(data.removeprefix("Bearer ").strip())
        found.update(_basic_secrets(data))
    return found


def _basic_secrets(value: str) -> list[str]:
    """The ``user:password`` and the password that a basic authentication header value
    (``Basic <base64>``) carries, which an endpoint may echo decoded."""
    scheme, _, encoded = value.strip().partition(" ")
    if scheme.lower() != "basic":
        return []
    try:
        pair = base64.b64decode(encoded.strip(), validate=True).decode("utf-8")
    except ValueError:  # binascii.Error and UnicodeDecodeError are ValueErrors
        return []
    return [encoded.strip(), pair, pair.partition(":")[2]]


def mask_secrets(data: Any, under_secret: bool = False) -> Any:
    """``data`` with the values under secret-looking names replaced by ``**********``, and
    the credentials written into URLs by ``***``."""
    if isinstance(data, Mapping):
        return {
            key: mask_secrets(value, under_secret or _secret_name(key))
            for key, value in data.items()
        }
    if isinstance(data, list):
        return [mask_secrets(item, under_secret) for item in data]
    if under_secret and isinstance(data, str) and data and set(data) != {"*"}:
        return "**********"
    if isinstance(data, str):
        return mask_url_credentials(data)
    return data


def without_secrets(section: dict[str, Any] | None) -> dict[str, Any] | None:
    if section is None:
        return None
    return {key: value for key, value in section.items() if key not in ("api_key", "api_key_env")}
