"""The one redaction point knows every form in which a secret is sent or echoed
(docs/llm.md, secrets): as written, decoded, URL-encoded, base64 (basic authentication),
JSON-escaped, as ``repr`` shows bytes, and the start of one that a message cut short ends
with. The end-to-end check against an echoing judge is tests/cli/test_secret_echo.py."""

from __future__ import annotations

import base64
import json
import re
import sqlite3
import urllib.parse
from pathlib import Path

import pytest

from graphrag_eval.config.secrets import basic_credentials, secret_values, url_credentials
from graphrag_eval.llm.cache import CallCache
from graphrag_eval.llm.pricing import TokenUsage
from graphrag_eval.llm.redaction import Redactor

USER = "judge-user"
PASSWORD = 'Zq9x@Lm/02%k+S y"é'
URL = f"https://{USER}:{urllib.parse.quote(PASSWORD, safe='')}@judge.example/v1"
PAIR = f"{USER}:{PASSWORD}"


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


FORMS = {
    "as written in the URL": urllib.parse.quote(PASSWORD, safe=""),
    "decoded": PASSWORD,
    "user:password": PAIR,
    "basic header": f"Basic {b64(PAIR)}",
    "basic header without padding": b64(PAIR).rstrip("="),
    "URL-safe base64": base64.urlsafe_b64encode(PAIR.encode()).decode(),
    "base64 of the password": b64(PASSWORD),
    "percent-encoded, lower-case hex": re.sub(
        "%[0-9A-F]{2}", lambda m: m[0].lower(), urllib.parse.quote(PASSWORD, safe="")
    ),
    "form-encoded": urllib.parse.quote_plus(PASSWORD),
    "JSON-escaped": json.dumps(PASSWORD)[1:-1],
    "JSON-escaped ASCII": json.dumps(PASSWORD, ensure_ascii=True)[1:-1],
    "JSON-escaped with escaped slashes": json.dumps(PASSWORD)[1:-1].replace("/", "\\/"),
    "bytes as repr shows them": repr(PASSWORD.encode())[2:-1],
    "header as repr shows a JSON body": repr(json.dumps(PAIR).encode())[3:-2],
}


def redactor_of(url: str) -> Redactor:
    redactor = Redactor()
    redactor.add(*url_credentials(url))
    return redactor


@pytest.mark.parametrize("form", FORMS.values(), ids=FORMS.keys())
def test_every_form_of_base_url_credentials_is_redacted(form: str) -> None:
    text = f"401 Unauthorized: you sent {form} (rejected)"

    redacted = redactor_of(URL).redact(text)

    assert redacted.startswith("401 Unauthorized: you sent ")
    assert redacted.endswith(" (rejected)")
    assert "***" in redacted
    for secret in (PASSWORD, b64(PAIR).rstrip("="), "Zq9x", "Lm/02"):
        assert secret not in redacted


def test_basic_credentials_are_what_the_wire_client_sends() -> None:
    assert basic_credentials(URL) == PAIR
    assert basic_credentials("https://sk-only-a-key@host/v1") == "sk-only-a-key:"
    assert basic_credentials("https://host/v1") is None
    redacted = redactor_of("https://only-a-key@host/v1").redact(f"Basic {b64('only-a-key:')}")
    assert redacted == "Basic ***"


@pytest.mark.parametrize("name", ["basic header without padding", "decoded", "JSON-escaped"])
def test_a_message_cut_inside_a_secret_keeps_no_start_of_it(name: str) -> None:
    form = FORMS[name]
    text = f"Error code: 401 - the server had an error, you sent {form} and more"
    redactor = redactor_of(URL)
    before = text.index(form)

    for end in range(before, len(text) + 1):
        for cut in (text[:end], repr(text[:end].encode())):
            redacted = redactor.redact(cut)
            for length in range(4, len(form)):
                assert form[:length] not in redacted, (cut, redacted)


def test_ordinary_text_is_left_as_it_is() -> None:
    redactor = redactor_of(URL)
    redactor.add("sk-proj-abcdefghijklmnop", "the-key-in-an-env-var")
    reply = '{"verdicts": [{"claim": 1, "supported": true, "reason": "the judge-user asked"}]}'

    assert redactor.redact(reply) == reply
    assert redactor.redact("a reason ending in Zq9") == "a reason ending in Zq9"  # 3 characters


def test_a_basic_authorization_header_in_extra_headers_is_redacted_decoded_too() -> None:
    redactor = Redactor()
    redactor.add(*secret_values({"extra_headers": {"Authorization": f"Basic {b64(PAIR)}"}}))

    for form in (PAIR, PASSWORD, b64(PAIR), urllib.parse.quote(PASSWORD, safe="")):
        assert redactor.redact(f"echo: {form}.") == "echo: ***."


def test_a_secret_stored_in_the_cache_by_an_older_version_is_served_and_kept_redacted(
    tmp_path: Path,
) -> None:
    path = tmp_path / "llm-cache.sqlite3"
    leaked = f"the reason (you sent Basic {b64(PAIR)})"
    older = CallCache(path)  # a cache that knew no form of the secret
    older.put_reply("k", "gpt-4o-mini", leaked, TokenUsage(10, 2))
    older.close()

    cache = CallCache(path, redact=redactor_of(URL).redact)
    cached = cache.get_reply("k")
    cache.close()

    assert cached is not None
    assert cached.text == "the reason (you sent Basic ***)"
    assert cached.usage == TokenUsage(10, 2)
    with sqlite3.connect(path) as db:
        [(stored,)] = db.execute("SELECT text FROM replies").fetchall()
    assert stored == "the reason (you sent Basic ***)"
    assert b64(PAIR).encode() not in b"".join(p.read_bytes() for p in tmp_path.iterdir())


@pytest.mark.parametrize("secret", ["ab\udcffcd-from-a-non-utf8-environment", "pässwörd-ünïcode"])
def test_a_secret_that_is_not_plain_ascii_is_redacted_in_its_forms(secret: str) -> None:
    redactor = Redactor()
    redactor.add(secret)
    encoded = urllib.parse.quote(secret, safe="", errors="surrogatepass")

    assert redactor.redact(f"[{secret}] [{encoded}]") == "[***] [***]"
