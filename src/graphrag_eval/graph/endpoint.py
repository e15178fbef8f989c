"""A SPARQL 1.1 Protocol endpoint over HTTP as a store (docs/knowledge-graph.md, "An
endpoint"): each query is POSTed as a form (``query=``) through one ``aiohttp`` session
(the ``sparql`` extra), at most ``sparql.concurrency`` at once.

* Read-only, always: a SPARQL Update is refused before anything is sent.
* A query still going after ``sparql.timeout_s`` becomes its step's ``timeout`` error (not
  retried, and not counted against the endpoint).
* A 429, a 408, a 5xx or a lost connection is retried ``sparql.retries`` times, honouring
  ``Retry-After`` up to :data:`RETRY_AFTER_MAX_S`, with exponential backoff and jitter
  otherwise.
* The endpoint's circuit breaker is the judge's (:class:`~graphrag_eval.llm.client.Breaker`):
  a 401, 403 or 404 opens it at once, :data:`~graphrag_eval.llm.client.BREAKER_FAILURES`
  attempts in a row that cannot reach the endpoint or
  :data:`~graphrag_eval.llm.client.BREAKER_UNUSABLE` in a row without a usable reply (a 5xx, a
  redirect, a page that is not results) open it too; the store is then :attr:`unusable` and
  every further query fails at once (``endpoint``).
* Credentials come from the environment variables ``sparql.auth`` names, read once here; every
  form of them is scrubbed from every message (docs/security.md).
"""

from __future__ import annotations

import asyncio
import base64
import os
import random
import re
import time
import urllib.parse
import urllib.request
from typing import Any, Final

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

from graphrag_eval.config.secrets import proxy_credentials, secret_values
from graphrag_eval.config.sparql import SparqlConfig
from graphrag_eval.errors import ConfigError
from graphrag_eval.graph.endpoint_replies import (
    ACCEPT,
    NotResults,
    read_at_most,
    read_start,
    reply_results,
    reply_start,
)
from graphrag_eval.graph.execution import Execution, ExecutionError, StoreIdentity
from graphrag_eval.graph.readonly import service_refusal, update_refusal
from graphrag_eval.llm.client import Breaker
from graphrag_eval.llm.failures import StatusError, Unreachable, unreachable
from graphrag_eval.llm.redaction import Redactor
from graphrag_eval.llm.retrying import retry_after_s

__all__ = ["RETRY_AFTER_MAX_S", "EndpointStore", "open_endpoint", "retry_wait_s"]

CONNECT_TIMEOUT_S: Final = 10.0
"""At most this long to open a connection (and never longer than ``sparql.timeout_s``)."""
RETRY_AFTER_MAX_S: Final = 30.0
"""The longest ``Retry-After`` honoured; a longer one waits this long."""
BACKOFF_INITIAL_S: Final = 0.5
BACKOFF_MAX_S: Final = 8.0
ERROR_BODY_BYTES: Final = 4096
"""How much of an error reply is read (its start goes into the step's error)."""

_SYNTAX = re.compile(r"pars|syntax|malformed|lexical|encountered|expected", re.IGNORECASE)
"""How the usual endpoints word a query that does not parse, in their 400 replies (Oxigraph
``error at 1:10: expected ...``, Fuseki ``Parse error``, GraphDB ``MALFORMED QUERY``,
Virtuoso ``syntax error``)."""

_SERVER_TIMEOUT = re.compile(
    r"time ?out|timed out|took too long|cancel|execution time", re.IGNORECASE
)
"""How an endpoint (or a gateway before it: 504) words a 5xx for a query it stopped at its own
time limit (Fuseki ``Query cancelled``, GraphDB ``Query evaluation took too long``,
Virtuoso's estimated execution time): the step's ``timeout``, neither retried nor counted
against the endpoint."""


class _Answer(Exception):
    """An attempt's final outcome that is not results (no retry): ``kind`` and ``error``."""

    def __init__(self, kind: ExecutionError, error: str) -> None:
        super().__init__(error)
        self.kind = kind
        self.error = error


class _TimedOut(Exception):
    """The query outlasted ``sparql.timeout_s``."""


def open_endpoint(config: SparqlConfig) -> EndpointStore:
    """The store of ``config.endpoint``, its credentials read from the environment now.

    Raises :class:`~graphrag_eval.errors.ConfigError` when a variable ``sparql.auth`` names is
    unset or empty, or the ``sparql`` extra is missing."""
    if config.endpoint is None:
        raise ConfigError("no endpoint configured", field="sparql.endpoint")
    try:
        import aiohttp  # noqa: F401
    except ImportError:
        raise ConfigError(
            "an endpoint needs the sparql extra: pip install 'graphrag-eval[sparql]'",
            field="sparql.endpoint",
        ) from None
    redactor = Redactor()
    redactor.add(*proxy_credentials())
    headers = {"Accept": ACCEPT, "Content-Type": "application/x-www-form-urlencoded"}
    auth = config.auth
    if auth.token_env is not None:
        token = _variable(auth.token_env, "sparql.auth.token_env")
        redactor.add(token)
        headers["Authorization"] = f"Bearer {token}"
    elif auth.username_env is not None and auth.password_env is not None:
        user = _variable(auth.username_env, "sparql.auth.username_env")
        password = _variable(auth.password_env, "sparql.auth.password_env")
        if ":" in user:
            raise ConfigError(
                f"the user name in {auth.username_env} holds a ':' (basic auth cannot send it)",
                field="sparql.auth.username_env",
            )
        redactor.add(password, f"{user}:{password}")
        pair = base64.b64encode(f"{user}:{password}".encode()).decode()
        headers["Authorization"] = f"Basic {pair}"
    query_string = urllib.parse.urlsplit(config.endpoint).query
    redactor.add(*secret_values(dict(urllib.parse.parse_qsl(query_string))))
    label = redactor.redact(config.endpoint)
    identity = StoreIdentity("endpoint", label, {"endpoint": label})
    return EndpointStore(config, identity, headers, redactor)


def _variable(name: str, field: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise ConfigError(f"the environment variable {name} is not set", field=field)
    if any(character in value for character in "\r\n\0"):
        raise ConfigError(
            f"the environment variable {name} holds a line break or NUL (not sendable in a header)",
            field=field,
        )
    return value


class EndpointStore:
    """A SPARQL 1.1 Protocol endpoint (:class:`~graphrag_eval.graph.GraphStore`); made by
    :func:`open_endpoint`. Its HTTP session belongs to the event loop that first executes a
    query (a later loop gets its own); await :meth:`aclose` before that loop ends, or its
    open connections are left to the garbage collector."""

    def __init__(
        self,
        config: SparqlConfig,
        identity: StoreIdentity,
        headers: dict[str, str],
        redactor: Redactor,
    ) -> None:
        self._config = config
        self._identity = identity
        self._url = config.endpoint or ""
        self._proxy = _proxy_for(self._url)
        self._headers = headers
        self._redactor = redactor
        self._allowed_services = frozenset(config.allowed_services)
        self.breaker = Breaker(f"the SPARQL endpoint at {identity.label}")
        self._loop: asyncio.AbstractEventLoop | None = None
        self._session: Any = None
        self._slots = asyncio.Semaphore(config.concurrency)

    @property
    def identity(self) -> StoreIdentity:
        return self._identity

    @property
    def unusable(self) -> str | None:
        return self.breaker.reason

    async def execute(self, query: str) -> Execution:
        started = time.perf_counter()
        refusal = update_refusal(query)
        if refusal is not None:
            return self._failed(started, ExecutionError.UPDATE_REFUSED, refusal)
        refusal = service_refusal(query, self._allowed_services)
        if refusal is not None:
            return self._failed(started, ExecutionError.QUERY, refusal)
        if self.breaker.reason is not None:
            return self._failed(started, ExecutionError.ENDPOINT, self.breaker.reason)
        try:
            body = urllib.parse.urlencode({"query": query}).encode()
        except UnicodeEncodeError:
            message = "the query holds characters that cannot be sent (lone surrogates)"
            return self._failed(started, ExecutionError.QUERY, message)
        self._bind()
        try:
            results, rows, truncated = await self._with_retries(body)
        except _Answer as answer:
            return self._failed(started, answer.kind, self._redactor.redact(answer.error))
        except _TimedOut:
            message = f"the query ran longer than {self._config.timeout_s:g} s"
            return self._failed(started, ExecutionError.TIMEOUT, message)
        except (StatusError, Unreachable) as exc:
            return self._gave_up(started, exc)
        elapsed = time.perf_counter() - started
        return Execution(
            self._identity.label, elapsed, results=results, rows=rows, truncated=truncated
        )

    async def _with_retries(self, body: bytes) -> tuple[dict[str, Any], int | None, bool]:
        """The results of the query in ``body``: the first attempt, then its retries."""
        # Most queries succeed at once: tenacity (and its cost) only for those that do not.
        try:
            return await self._slotted(body)
        except (StatusError, Unreachable) as exc:
            if self._config.retries == 0 or not self._worth_retrying(exc):
                raise
            first = exc
        await asyncio.sleep(retry_wait_s(first, 1))
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self._config.retries),
            wait=_backoff,
            retry=retry_if_exception(self._worth_retrying),
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                return await self._slotted(body)
        raise AssertionError("unreachable: tenacity re-raises the last failure")

    async def _slotted(self, body: bytes) -> tuple[dict[str, Any], int | None, bool]:
        """One attempt, in one of the ``sparql.concurrency`` slots."""
        async with self._slots:
            if self.breaker.reason is not None:  # opened while this one waited
                raise _Answer(ExecutionError.ENDPOINT, self.breaker.reason)
            return await self._attempt(body)

    def _worth_retrying(self, exc: BaseException) -> bool:
        return isinstance(exc, StatusError | Unreachable) and self.breaker.reason is None

    async def _attempt(self, body: bytes) -> tuple[dict[str, Any], int | None, bool]:
        """One POST of the query: its results, or :class:`_Answer`, :class:`_TimedOut`,
        :class:`StatusError` (retried) or :class:`Unreachable` (retried)."""
        import aiohttp

        config = self._config
        try:
            async with asyncio.timeout(config.timeout_s):
                async with self._session.post(
                    self._url,
                    data=body,
                    headers=self._headers,
                    allow_redirects=False,
                    proxy=self._proxy,
                ) as response:
                    if response.status >= 300:
                        await self._refused(response)
                    content = await self._body(response)
                    content_type = response.content_type.lower()
        except TimeoutError as exc:
            if isinstance(exc, aiohttp.ClientError):  # the connection could not be opened
                raise self._not_reached(unreachable(exc, timed_out=True)) from None
            raise _TimedOut() from None
        except aiohttp.ClientError as exc:
            raise self._not_reached(unreachable(exc, timed_out=False)) from None
        try:
            results = reply_results(content, content_type, config.row_limit)
        except NotResults as exc:
            if exc.page:
                self.breaker.unusable(self._redactor.redact(exc.detail))
            else:
                self.breaker.reached()
            raise _Answer(ExecutionError.ENDPOINT, exc.detail) from None
        self.breaker.reached()
        return results

    async def _body(self, response: Any) -> bytes:
        """The reply's body, or :class:`_Answer` (``too_large``) past
        ``sparql.max_result_bytes``."""
        limit = self._config.max_result_bytes
        length = response.content_length
        content = None
        if length is None or length <= limit:
            content = await read_at_most(response.content, limit)
        if content is None:
            self.breaker.reached()
            raise _Answer(
                ExecutionError.TOO_LARGE,
                f"the endpoint's reply is larger than sparql.max_result_bytes ({limit} bytes)",
            )
        return content

    async def _refused(self, response: Any) -> None:
        """Raise what an HTTP error reply (status 300 or more) means for the query."""
        status = response.status
        start = await read_start(response.content, ERROR_BODY_BYTES)
        text = self._redactor.redact(reply_start(start, 300))
        what = f"{status} {response.reason or ''}".strip() + (f": {text}" if text else "")
        if status >= 500 and _SERVER_TIMEOUT.search(what):
            self.breaker.reached()  # a heavy query, not a failing endpoint
            raise _Answer(ExecutionError.TIMEOUT, f"the endpoint gave up on the query: {what}")
        if status in (408, 429) or status >= 500:
            if status >= 500:
                self.breaker.unusable(what)
            else:
                self.breaker.reached()
            raise StatusError(status, what, text, response.headers)
        if status < 400:
            location = self._redactor.redact(response.headers.get("Location", ""))
            self.breaker.unusable(what)
            raise _Answer(
                ExecutionError.ENDPOINT,
                f"the endpoint redirected the query ({what}) to {location or 'nowhere'}: "
                "set sparql.endpoint to where it points",
            )
        if status in (401, 403):
            self.breaker.refuse(f"{self.breaker.name} refused the request: {what}")
            raise _Answer(ExecutionError.REFUSED, self.breaker.reason or what)
        if status == 404:
            self.breaker.refuse(f"{self.breaker.name} does not exist ({what}): check its URL")
            raise _Answer(ExecutionError.ENDPOINT, self.breaker.reason or what)
        self.breaker.reached()
        if status == 400:
            kind = ExecutionError.SYNTAX_ERROR if _SYNTAX.search(text) else ExecutionError.QUERY
            raise _Answer(kind, f"the endpoint rejected the query: {what}")
        raise _Answer(ExecutionError.ENDPOINT, f"the endpoint failed: {what}")

    def _not_reached(self, exc: Unreachable) -> Unreachable:
        detail = "connection timed out" if exc.timed_out else f"connection failed: {exc.detail}"
        self.breaker.not_reached(self._redactor.redact(detail))
        return exc

    def _gave_up(self, started: float, exc: StatusError | Unreachable) -> Execution:
        """The execution of a query whose last attempt failed with ``exc``."""
        attempts = self._config.retries + 1
        tried = f" ({attempts} attempt{'s' if attempts != 1 else ''})"
        if isinstance(exc, StatusError):
            error = f"the endpoint failed: {exc.message}{tried}"
            kind = ExecutionError.ENDPOINT
        else:
            error = f"the endpoint could not be reached: {exc.detail}{tried}"
            kind = ExecutionError.UNREACHABLE
        if self.breaker.unreachable and self.breaker.reason is not None:
            error = self.breaker.reason
        return self._failed(started, kind, self._redactor.redact(error))

    def _failed(self, started: float, kind: ExecutionError, error: str) -> Execution:
        return Execution(
            self._identity.label, time.perf_counter() - started, error=error, error_kind=kind
        )

    def _bind(self) -> None:
        """Open the HTTP session on the running event loop (again, on a new loop)."""
        loop = asyncio.get_running_loop()
        if self._loop is loop and self._session is not None:
            return
        import aiohttp

        if self._session is not None and not self._session.closed:
            self._session.detach()  # its connections belong to a loop that has ended
        config = self._config
        connector = aiohttp.TCPConnector(limit=config.concurrency, limit_per_host=0)
        timeout = aiohttp.ClientTimeout(
            total=None, sock_connect=min(CONNECT_TIMEOUT_S, config.timeout_s)
        )
        self._session = aiohttp.ClientSession(connector=connector, timeout=timeout)
        self._slots = asyncio.Semaphore(config.concurrency)
        self._loop = loop

    async def aclose(self) -> None:
        """Close the HTTP session (a later query opens a new one)."""
        session, self._session, self._loop = self._session, None, None
        if session is not None and not session.closed:
            await session.close()


def _proxy_for(url: str) -> str | None:
    """The proxy the environment names for ``url`` (``HTTPS_PROXY``, ``HTTP_PROXY``,
    ``ALL_PROXY``, unless ``NO_PROXY`` excludes its host), found once, as the judge's client
    finds it (docs/llm.md)."""
    parts = urllib.parse.urlsplit(url)
    if parts.hostname and urllib.request.proxy_bypass(parts.hostname):
        return None
    proxies = urllib.request.getproxies()
    return proxies.get(parts.scheme) or proxies.get("all") or None


def _backoff(state: RetryCallState) -> float:
    """The wait before a retry (tenacity's attempts are counted after the first one)."""
    exception = state.outcome.exception() if state.outcome is not None else None
    return retry_wait_s(exception, state.attempt_number + 1)


def retry_wait_s(exception: BaseException | None, attempt: int) -> float:
    """How long to wait after the failed ``attempt`` (counted from 1): what a
    ``Retry-After`` asks (at most :data:`RETRY_AFTER_MAX_S`), or exponential backoff with
    jitter."""
    asked = retry_after_s(exception)
    if asked is not None:
        return min(asked, RETRY_AFTER_MAX_S) + random.uniform(0, 0.05)
    ceiling = min(BACKOFF_MAX_S, BACKOFF_INITIAL_S * 2 ** (attempt - 1))
    return random.uniform(ceiling / 2, ceiling)
