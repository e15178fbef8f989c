"""What a client of a judge or embedding endpoint does, whatever it talks to: the
:class:`ChatClient` protocol that every provider's client implements (the registry that makes
them: :mod:`.providers`). See docs/llm.md (providers).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, TypedDict

__all__ = ["ChatClient", "RequestOptions"]


class RequestOptions(TypedDict, total=False):
    """Options of one request that are not fields of its body: the config's
    ``extra_headers``, ``extra_query`` and ``timeout`` request parameters."""

    headers: Mapping[str, str]
    params: Mapping[str, str]
    timeout: float


class ChatClient(Protocol):
    """What an endpoint's client does, whatever it talks to: send one request of the
    OpenAI chat-completions or embeddings API and give back the reply's JSON body, or raise
    one of :mod:`.failures`' errors (:class:`~.failures.StatusError` for an HTTP error reply,
    :class:`~.failures.Unreachable` for no reply), never its own exception classes; and
    close. It makes no retries: the engine's (:mod:`.retrying`) apply to every client.

    A provider whose requests go through a batch API (a file of requests submitted at once,
    results collected later) registers a factory whose client implements this protocol too:
    ``post`` adds the request to the batch being filled and returns when its result is in,
    so the engine's cache, budget and statistics see one request and one reply as for any
    other client; how many requests make a batch and how long it waits are the client's.
    """

    @property
    def base_url(self) -> str:
        """Where its requests go (with any credentials it holds: the endpoint masks them for
        its identity); ``default`` when the provider's own library decides."""
        ...

    def request_parameters(self, role: str, configured: Mapping[str, Any]) -> dict[str, Any]:
        """The config's extra request parameters of an endpoint of ``role`` (``generation``,
        ``embedding``), in the form the client takes them (cache keys are made of it); what
        :meth:`post` is given back, split by :func:`~.client.request_fields`."""
        ...

    async def post(self, path: str, fields: dict[str, Any], options: RequestOptions) -> bytes:
        """``fields`` (the request body: ``model``, ``messages`` or ``input``, and the
        parameters) to ``path`` (``/chat/completions``, ``/embeddings``); the reply's body,
        the API's JSON as bytes."""
        ...

    def price(self, model: str) -> tuple[float, float] | None:
        """What ``model`` costs (dollars per million input and output tokens) as the
        provider's library knows it, for a model the built-in price table does not know;
        ``None`` when it knows none."""
        ...

    async def close(self) -> None:
        """Close its connections."""
        ...
