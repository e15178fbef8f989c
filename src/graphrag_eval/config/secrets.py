"""Secrets in a config: finding the values under secret-looking names (to redact them from
messages) and masking them (in ``run.yaml``); see docs/security.md."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["mask_secrets", "secret_values", "without_secrets"]


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


def without_secrets(section: dict[str, Any] | None) -> dict[str, Any] | None:
    if section is None:
        return None
    return {key: value for key, value in section.items() if key not in ("api_key", "api_key_env")}
