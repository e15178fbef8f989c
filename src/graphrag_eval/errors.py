"""The exception tree of graphrag-eval.

User errors are messages, bugs are tracebacks: every exception below describes a problem the
user can fix, and its ``str()`` is one line that names the file, the item and the field.
The command line prints that line and exits 2.

::

    GraphragEvalError
    ├── InputError      a reference dataset or responses file that cannot be used as a whole
    ├── ConfigError     an invalid configuration (unknown key, wrong type, bad value)
    └── LLMError        a judge or embedding call that gave no usable reply
        ├── CallFailed       the endpoint failed or refused (after the retries)
        ├── MalformedReply   the reply did not have the required form (after one re-ask)
        ├── TruncatedReply   the reply was cut off by the token limit
        ├── BudgetExhausted  the run's cost limit was reached; the call was not made
        └── NotCalled        a dry run: the call was counted, not made (the engine's
                             policy; to a metric, one more call without a reply)

An :class:`LLMError` never escapes a run: the metric that made the call records it as its
``_error`` and the run goes on. Its message is safe to write anywhere (secrets are redacted).

Problems confined to one response or one step are not exceptions: they become error fields
on that item or step (see :mod:`graphrag_eval.inputs`), so one bad item never aborts a run.
"""

from __future__ import annotations

__all__ = [
    "BudgetExhausted",
    "CallFailed",
    "ConfigError",
    "GraphragEvalError",
    "InputError",
    "LLMError",
    "MalformedReply",
    "NotCalled",
    "TruncatedReply",
    "locate",
]


def locate(file: str | None, item: str | None = None, field: str | None = None) -> str:
    """Join a location into the prefix of a one-line message: ``file: item: field``."""
    return ": ".join(part for part in (file, item, field) if part)


class GraphragEvalError(Exception):
    """Root of every error graphrag-eval raises on purpose."""


class _LocatedError(GraphragEvalError):
    """An error whose one-line message starts with where it is: ``file: item: field``."""

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        item: str | None = None,
        field: str | None = None,
    ) -> None:
        self.file = file
        self.item = item
        self.field = field
        self.message = message
        prefix = locate(file, item, field)
        super().__init__(f"{prefix}: {message}" if prefix else message)


class InputError(_LocatedError):
    """A reference dataset or responses file that cannot be evaluated.

    ``file`` is the path (or ``<reference>``/``<responses>`` for in-memory data), ``item`` the
    template or question (or line number) concerned, ``field`` the offending field path.
    """


class ConfigError(_LocatedError):
    """An invalid configuration: ``file`` is the config path (or ``<config>``), ``field``
    the key."""

    def __init__(self, message: str, *, file: str | None = None, field: str | None = None) -> None:
        super().__init__(message, file=file, field=field)


class LLMError(GraphragEvalError):
    """A judge or embedding call that gave no usable reply; recorded as the metric's error."""


class CallFailed(LLMError):
    """The endpoint failed (after the retries) or refused the request."""


class MalformedReply(LLMError):
    """The reply did not have the required form, even after one re-ask."""


class TruncatedReply(LLMError):
    """The reply was cut off by the token limit (``finish_reason: length``)."""


class BudgetExhausted(LLMError):
    """The run's cost limit was reached, so the call was not made."""


class NotCalled(LLMError):
    """A dry run: the call was counted and estimated, not made."""
