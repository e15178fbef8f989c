"""The ``sparql:`` config section: the knowledge graph a run executes SPARQL queries against,
an embedded Oxigraph store loaded from RDF files or a SPARQL 1.1 Protocol endpoint over HTTP
(docs/knowledge-graph.md)."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from graphrag_eval.config.base import Section

__all__ = ["EndpointAuthConfig", "SparqlConfig", "TestSuiteConfig"]

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class EndpointAuthConfig(Section):
    """Credentials of an endpoint, by the names of the environment variables that hold them:
    the values are read when the run starts and never written anywhere (docs/security.md)."""

    username_env: str | None = None
    """Basic auth: the variable holding the user name (with ``password_env``)."""
    password_env: str | None = None
    """Basic auth: the variable holding the password."""
    token_env: str | None = None
    """Bearer auth: the variable holding the token (``Authorization: Bearer ...``)."""

    @field_validator("username_env", "password_env", "token_env")
    @classmethod
    def _variable_name(cls, value: str | None) -> str | None:
        if value is not None and not _ENV_NAME.match(value):
            raise ValueError(
                f"expected the name of an environment variable, got {value!r} "
                "(write the variable's name here, never the secret itself)"
            )
        return value

    @model_validator(mode="after")
    def _one_scheme(self) -> EndpointAuthConfig:
        basic = self.username_env is not None or self.password_env is not None
        if basic and self.token_env is not None:
            raise ValueError("give either username_env and password_env, or token_env")
        if basic and (self.username_env is None or self.password_env is None):
            raise ValueError("basic auth needs both username_env and password_env")
        return self


class TestSuiteConfig(Section):
    """Test-suite accuracy: both queries of a SPARQL step are executed on ``copies`` perturbed
    copies of the embedded graph (docs/knowledge-graph.md, "Test-suite accuracy")."""

    __test__ = False  # not a pytest test class, whatever its name

    copies: int = Field(default=0, ge=0, le=100)
    """How many perturbed copies (0: off)."""
    drop_share: float = Field(default=0.3, gt=0, lt=1)
    """The share of the triples of the classes and predicates the reference query uses that
    each copy drops."""
    seed: int = 0
    """The seed of the perturbations (the same seed, the same copies)."""


class SparqlConfig(Section):
    """The store SPARQL steps are executed against; none unless ``endpoint`` or ``data`` is
    given."""

    endpoint: str | None = None
    """A SPARQL 1.1 Protocol query endpoint (``http://host:7200/repositories/ID``,
    ``http://host:7878/query``); without credentials in it (see ``auth``)."""
    data: list[str] = Field(default_factory=list)
    """RDF files loaded into an embedded Oxigraph store (Turtle, N-Triples, N-Quads, TriG,
    RDF/XML, JSON-LD, by extension); relative paths are read from the config file's
    directory."""
    base_iri: str | None = None
    """The base IRI relative IRIs in the data files resolve against."""
    store_directory: str | None = None
    """Where the embedded store is kept on disk, and reused while the data files are
    unchanged (default: in memory, loaded at every run)."""
    execute: Literal["missing", "always", "never"] = "missing"
    """``missing``: a ``sparql_query`` step without a usable output (none, cut short, not
    SPARQL results) is executed, and the reference step too when it has no output;
    ``always``: both sides of every SPARQL step are executed (against the graph as it is
    now); ``never``: nothing is executed during scoring."""
    row_limit: int = Field(default=10_000, gt=0)
    """At most this many result rows are kept of a query (the execution says it was
    truncated)."""
    timeout_s: float = Field(default=30.0, gt=0)
    """A query that takes longer becomes its step's error (``timeout``)."""
    concurrency: int = Field(default=8, gt=0, le=256)
    """At most this many queries at once."""
    retries: int = Field(default=3, ge=0, le=20)
    """Endpoint: how often a 429 or 5xx reply or a lost connection is retried."""
    max_result_bytes: int = Field(default=64 * 1024 * 1024, gt=0)
    """Endpoint: a reply larger than this is refused (the step's error)."""
    allowed_services: list[str] = Field(default_factory=list)
    """Endpoint: the IRIs of the endpoints a federated query (``SERVICE``) may make it call,
    as the query names them after its prefixes are expanded (e.g.
    ``http://wikiba.se/ontology#label``). A query with any other ``SERVICE`` is never sent:
    a hostile response could otherwise make the endpoint fetch from any host. The embedded
    store executes none."""
    diagnose: bool | None = None
    """Whether a SPARQL step below a full match gets a ``query_diagnosis`` (both queries
    parsed, about 20 ms a pair); default: when a store is configured. Without a store, the
    diagnosis has no ``unknown_iri``."""
    auth: EndpointAuthConfig = EndpointAuthConfig()
    """Endpoint credentials, by environment variable names."""
    test_suite: TestSuiteConfig = TestSuiteConfig()
    """Test-suite accuracy (embedded store only)."""

    @model_validator(mode="after")
    def _one_store(self) -> SparqlConfig:
        if self.endpoint is not None and self.data:
            raise ValueError("give either endpoint or data, not both")
        if self.endpoint is not None and not re.match(r"^https?://", self.endpoint):
            raise ValueError(f"endpoint must be an http(s) URL, got {self.endpoint!r}")
        if self.endpoint is not None and "@" in self.endpoint.split("/")[2]:
            raise ValueError(
                "endpoint must not hold credentials; name their environment variables "
                "under sparql.auth"
            )
        if self.test_suite.copies and self.endpoint is not None:
            raise ValueError(
                "test_suite needs the embedded store (data): perturbed copies of an "
                "endpoint's graph cannot be made"
            )
        if self.allowed_services and self.endpoint is None:
            raise ValueError(
                "allowed_services applies to an endpoint (the embedded store calls none)"
            )
        if self.store_directory is not None and not self.data:
            raise ValueError("store_directory needs data (the files the store is loaded from)")
        return self

    @property
    def configured(self) -> bool:
        """Whether a store is configured."""
        return self.endpoint is not None or bool(self.data)

    @property
    def diagnoses(self) -> bool:
        """Whether SPARQL steps below a full match are diagnosed (``diagnose``)."""
        return self.configured if self.diagnose is None else self.diagnose
