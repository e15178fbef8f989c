"""The engine's own HTTP client for OpenAI-compatible endpoints: a JSON ``POST`` to
``<base_url><path>`` through aiohttp (the HTTP library the ``openai`` SDK's aiohttp
transport uses, which the ``llm`` extra installs), with the headers, URL and timeouts built
once per endpoint.

The SDK builds each request anew (its options, headers normalised one by one, the URL parsed
three times, an httpx request converted to an aiohttp one, an httpx response around the
reply): about half the CPU a judge request costs the client, which bounds a large run at high
concurrency (docs/benchmarks.md, "CPU per request"). What this client sends is what the SDK
sends for the same request: the same JSON body, ``Authorization: Bearer <key>`` (basic
authentication from a base URL's ``user:password@``), the ``OpenAI-Organization`` and
``OpenAI-Project`` headers of ``OPENAI_ORG_ID``/``OPENAI_PROJECT_ID``, the SDK's default base
URL (``OPENAI_BASE_URL``, else OpenAI's), the proxy the environment names, connect and read
timeouts apart. Azure endpoints (deployment paths, ``api-version``) go through the SDK's
client (:mod:`.sdk_client`). It is the registered client of the OpenAI-compatible providers
(:mod:`.providers`).

Failures are :mod:`.failures`' (an HTTP error reply, or no reply); a redirect is not followed
(the key would go with it) but is the call's error; a reply larger than
:data:`MAX_REPLY_BYTES` is refused, not read on. See docs/llm.md.
"""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec

from graphrag_eval.config.llm import is_url
from graphrag_eval.config.secrets import basic_credentials
from graphrag_eval.errors import CallFailed, ConfigError
from graphrag_eval.llm.failures import status_error, unreachable
from graphrag_eval.version import __version__

if TYPE_CHECKING:
    # Imported with the first client (aiohttp alone takes a fifth of a second): not at the
    # start of every command.
    import ssl
    from collections.abc import Mapping

    import aiohttp

    from graphrag_eval.llm.chat_client import RequestOptions

__all__ = ["MAX_REPLY_BYTES", "Timeouts", "WireClient", "default_base_url"]

MAX_REPLY_BYTES = 64 * 1024 * 1024
"""The largest reply read (64 MiB): a judge reply or a batch of embeddings is far smaller."""

OPENAI_BASE_URL = "https://api.openai.com/v1"

_ENCODER = msgspec.json.Encoder()


def default_base_url() -> str:
    """The base URL of an endpoint that names none, as the SDK has it; :class:`ConfigError`
    when ``OPENAI_BASE_URL`` is not a URL (its text not shown: it may hold credentials)."""
    url = os.environ.get("OPENAI_BASE_URL") or OPENAI_BASE_URL
    if not is_url(url):
        raise ConfigError("$OPENAI_BASE_URL is not a URL (such as https://host/v1)")
    return url


@dataclass(frozen=True, slots=True)
class Timeouts:
    connect: float
    """Seconds to open a connection."""
    read: float
    """Seconds between two reads of the reply (and to wait for a free connection)."""


class WireClient:
    """Sends the requests of one endpoint (a :class:`~.chat_client.ChatClient`); its aiohttp
    session opens with the first."""

    def __init__(self, base_url: str, api_key: str | None, timeouts: Timeouts) -> None:
        import aiohttp

        self.base_url = base_url.rstrip("/")
        self.timeouts = timeouts
        self._url, credentials = _without_credentials(self.base_url)
        self._headers = _headers(api_key, credentials)
        self._timeout = aiohttp.ClientTimeout(
            sock_connect=timeouts.connect, sock_read=timeouts.read, connect=timeouts.read
        )
        self._session: aiohttp.ClientSession | None = None
        self._proxy = _proxy_for(self._url)

    def request_parameters(self, role: str, configured: Mapping[str, Any]) -> dict[str, Any]:
        """The config's request parameters as they are: they go into the body."""
        return dict(configured)

    def price(self, model: str) -> tuple[float, float] | None:
        return None  # an OpenAI-compatible server publishes no prices

    async def post(self, path: str, fields: dict[str, Any], options: RequestOptions) -> bytes:
        """``fields`` as JSON to ``path``; ``options``: the config's ``extra_headers``,
        ``extra_query`` and ``timeout``; the reply's JSON bytes."""
        import aiohttp

        session = self._session or self._open()
        extra = options.get("headers")
        headers = {**self._headers, **extra} if extra else self._headers
        data = _ENCODER.encode(fields)  # what json.dumps(..., ensure_ascii=False) gives, 10x faster
        timeout = options.get("timeout")
        try:
            async with session.post(
                self._url + path,
                data=data,
                headers=headers,
                params=options.get("params"),
                timeout=self._timeout if timeout is None else self._timeout_of(timeout),
                allow_redirects=False,
                proxy=self._proxy,
            ) as response:
                content = await _read(response)
                if response.status >= 300:  # redirects are not followed: the key stays here
                    raise status_error(response.status, content, response.headers)
                return content
        except (aiohttp.ClientError, TimeoutError) as exc:  # no reply, or one that is not HTTP
            raise unreachable(exc, isinstance(exc, TimeoutError)) from exc

    async def close(self) -> None:
        """Close the session (and its connections)."""
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _timeout_of(self, value: Any) -> aiohttp.ClientTimeout:
        """A request's own ``timeout`` parameter (seconds) in place of the configured read
        timeout."""
        import aiohttp

        seconds = float(value)
        return aiohttp.ClientTimeout(sock_connect=seconds, sock_read=seconds, connect=seconds)

    def _open(self) -> aiohttp.ClientSession:
        import aiohttp

        ssl_context: ssl.SSLContext | bool = True
        if self.base_url.startswith("https:"):
            ssl_context = _ssl_context()
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0, ssl=ssl_context),
            cookie_jar=aiohttp.DummyCookieJar(),
        )
        return self._session


async def _read(response: aiohttp.ClientResponse) -> bytes:
    """The reply's body, refused past :data:`MAX_REPLY_BYTES`."""
    length = response.content_length
    if length is not None and length > MAX_REPLY_BYTES:
        raise CallFailed(f"the endpoint's reply is larger than {MAX_REPLY_BYTES} bytes")
    if length is not None:  # the usual reply: aiohttp reads no more than it announced
        return await response.read()
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_any():
        size += len(chunk)
        if size > MAX_REPLY_BYTES:
            raise CallFailed(f"the endpoint's reply is larger than {MAX_REPLY_BYTES} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def _without_credentials(url: str) -> tuple[str, str | None]:
    """``url`` without the ``user:password@`` it may hold, and those (percent-decoded, as
    :func:`~graphrag_eval.config.secrets.basic_credentials` finds them for the redaction
    too: what is sent is what is scrubbed, docs/llm.md secrets)."""
    import urllib.parse

    credentials = basic_credentials(url)
    if credentials is None:
        return url, None
    parts = urllib.parse.urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return urllib.parse.urlunsplit(parts._replace(netloc=host)), credentials


def _headers(api_key: str | None, credentials: str | None) -> dict[str, str]:
    """The headers of every request; credentials in the base URL are sent as basic
    authentication in place of the key, as the SDK's HTTP client does."""
    if credentials is not None:
        authorization = "Basic " + base64.b64encode(credentials.encode()).decode()
    else:
        authorization = f"Bearer {api_key or 'not-needed'}"
    headers = {
        "Accept": "application/json",
        "Content-Type": "application/json",
        "User-Agent": f"graphrag-eval/{__version__}",
        "Authorization": authorization,
    }
    for name, variable in (
        ("OpenAI-Organization", "OPENAI_ORG_ID"),
        ("OpenAI-Project", "OPENAI_PROJECT_ID"),
    ):
        value = os.environ.get(variable)
        if value:
            headers[name] = value
    return headers


def _proxy_for(url: str) -> str | None:
    """The proxy the environment names for ``url`` (``HTTPS_PROXY``, ``HTTP_PROXY``,
    ``ALL_PROXY``, unless ``NO_PROXY`` excludes its host), as the SDK's client finds it: found
    once per endpoint, since aiohttp's ``trust_env`` would look it up (and read ``~/.netrc``)
    in a worker thread for every request."""
    import urllib.parse
    import urllib.request

    parts = urllib.parse.urlsplit(url)
    if parts.hostname and urllib.request.proxy_bypass(parts.hostname):
        return None
    proxies = urllib.request.getproxies()
    return proxies.get(parts.scheme) or proxies.get("all") or None


def _ssl_context() -> ssl.SSLContext:
    """Certificates as the SDK's client finds them: ``SSL_CERT_FILE``, else certifi's."""
    import ssl

    cafile = os.environ.get("SSL_CERT_FILE")
    if not cafile:
        try:
            import certifi

            cafile = certifi.where()
        except ImportError:
            cafile = None
    return ssl.create_default_context(cafile=cafile)
