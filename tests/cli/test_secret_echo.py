"""A judge that echoes the ``Authorization`` header it was sent (in its error bodies, its HTML
pages and its replies) gets no secret into any output (docs/security.md, secrets): every form
in which a secret is sent (as written, decoded, URL-encoded, the base64 of basic
authentication, the bearer key) is redacted from the results, aggregates, run.yaml, the
report, the cache, the answer-correctness TSV, stdout and stderr. Both commands run in their
own process, against the real judge server, as a user runs them."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

import graphrag_eval

from builders import write_answered, write_judge_config, write_tsv
from judge_server import Faults, JudgeServer

USER = "judge-user"
PASSWORD = "Zq9x@Lm/02%k+S y"
"""Characters that URL-encoding, base64 and JSON each write differently."""
KEY = "tok/Zq93+kLm=20xYw~r"
"""A key not shaped like an OpenAI key (so only the engine's knowledge of it redacts it)."""

SOURCE = str(Path(graphrag_eval.__file__).parents[1])
ANSWER_CORRECTNESS = (
    "import sys; from graphrag_eval.cli import answer_correctness_main as m; sys.exit(m())"
)


def forms(secret: str, *, basic: str | None = None) -> dict[str, str]:
    """The forms of ``secret`` that must appear nowhere (``basic``: the ``user:password``
    that basic authentication sends)."""
    found = {
        "plain": secret,
        "percent-encoded": urllib.parse.quote(secret, safe=""),
        "form-encoded": urllib.parse.quote_plus(secret, safe=""),
        "base64": base64.b64encode(secret.encode()).decode().rstrip("="),
        "JSON-escaped ASCII": json.dumps(secret)[1:-1],
    }
    if basic is not None:
        header = base64.b64encode(basic.encode()).decode().rstrip("=")
        found |= {"user:password": basic, "basic header": header}
    return found


@dataclass(frozen=True)
class Case:
    name: str
    faults: Faults
    required_key: str | None
    """A key the server demands (it refuses the credentials sent: 401 on every call)."""
    basic: bool
    """Credentials in base_url (else a bearer key from the environment)."""
    environment: bool = False
    """The base URL with its credentials from ``OPENAI_BASE_URL``, not the config."""


CASES = [
    Case("basic auth, replies and faults", Faults(server_error=0.3, html=0.1), None, True),
    Case("basic auth, refused", Faults(), "the-key-it-wants", True),
    Case("bearer key, replies and faults", Faults(server_error=0.3, html=0.1), None, False),
    Case("basic auth from OPENAI_BASE_URL", Faults(server_error=0.3, html=0.1), None, True, True),
]


def write_inputs(folder: Path, count: int) -> tuple[Path, Path, Path]:
    reference, responses = write_answered(folder, count)
    questions = yaml.safe_load(reference.read_text())[0]["questions"]
    tsv = folder / "answers.tsv"
    rows = [(q["question_text"], q["reference_answer"], f"T{i}a") for i, q in enumerate(questions)]
    write_tsv(tsv, [*rows, ("Which ones are new?", "T9a", "T9a")])
    return reference, responses, tsv


def base_url(server: JudgeServer) -> str:
    """The server's URL with the basic authentication credentials in it."""
    userinfo = f"{urllib.parse.quote(USER)}:{urllib.parse.quote(PASSWORD, safe='')}"
    return server.url.replace("://", f"://{userinfo}@")


def write_config(folder: Path, server: JudgeServer, case: Case) -> Path:
    endpoint: dict[str, Any] = {"provider": "openai-compatible"}
    if case.environment:  # OPENAI_BASE_URL (run_both) and the key of OPENAI_API_KEY
        endpoint = {"provider": "openai", "api_key_env": "ECHO_TEST_JUDGE_KEY"}
    elif case.basic:
        endpoint["base_url"] = base_url(server)
    else:
        endpoint |= {"base_url": server.url, "api_key_env": "ECHO_TEST_JUDGE_KEY"}
    cache = {"path": str(folder / "cache" / "llm-cache.sqlite3")}
    limits = {"max_retries": 0, "max_concurrency": 2}
    return write_judge_config(
        folder, server.url, generation=endpoint, embedding=endpoint, cache=cache, **limits
    )


def run(*args: str | Path, base: str | None = None) -> subprocess.CompletedProcess[bytes]:
    env = {
        **os.environ,
        "PYTHONPATH": SOURCE,
        "ECHO_TEST_JUDGE_KEY": KEY,
        "COLUMNS": "200",
    }
    env.pop("OPENAI_API_KEY", None)
    env.pop("OPENAI_BASE_URL", None)
    if base is not None:
        env["OPENAI_BASE_URL"] = base
    return subprocess.run(
        [sys.executable, *(str(arg) for arg in args)],
        env=env,
        capture_output=True,
        timeout=300,  # a bound for a broken run, not a timing
        check=False,
    )


def run_both(folder: Path, case: Case) -> tuple[dict[str, bytes], set[str]]:
    """Run ``evaluate`` and ``answer-correctness`` against an echoing judge: what they wrote
    and printed by name, and the ``Authorization`` headers the judge received."""
    reference, responses, tsv = write_inputs(folder, 6)
    echoing = JudgeServer(faults=case.faults, echo_authorization=True, api_key=case.required_key)
    with echoing as server:
        config = write_config(folder, server, case)
        base = base_url(server) if case.environment else None
        out, judged = folder / "out", folder / "judged.tsv"
        command = ("-m", "graphrag_eval.cli", "evaluate", reference, responses, "-c", config)
        evaluate = run(*command, "-o", out, base=base)
        correctness = run(
            "-c", ANSWER_CORRECTNESS, "-i", tsv, "-o", judged, "-c", config, base=base
        )
        sent = {request.headers.get("authorization", "") for request in server.requests}
    assert evaluate.returncode in (0, 3), evaluate.stderr.decode()
    assert correctness.returncode in (0, 3), correctness.stderr.decode()
    outputs = {
        str(path.relative_to(folder)): path.read_bytes()
        for path in folder.rglob("*")
        if path.is_file() and path != config  # the config holds the credentials as written
    }
    assert {"out/results.jsonl", "out/run.yaml", "out/report.html", "judged.tsv"} <= set(outputs)
    assert any(name.startswith("cache/") for name in outputs)
    return outputs | {
        "evaluate stdout": evaluate.stdout,
        "evaluate stderr": evaluate.stderr,
        "answer-correctness stdout": correctness.stdout,
        "answer-correctness stderr": correctness.stderr,
    }, sent


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_no_form_of_an_echoed_secret_reaches_any_output(tmp_path: Path, case: Case) -> None:
    outputs, sent = run_both(tmp_path, case)

    if case.basic:
        header = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
        secrets = forms(PASSWORD, basic=f"{USER}:{PASSWORD}")
    else:
        header, secrets = f"Bearer {KEY}", forms(KEY)
    assert sent == {header}
    for name, form in secrets.items():
        for where, data in outputs.items():
            assert form.encode() not in data, f"the {name} secret is in {where}"
            assert form[:10].encode() not in data, f"the start of the {name} secret is in {where}"
    # The echoes did arrive, redacted: in the judge's reasons, or in the errors.
    everything = b"".join(outputs.values())
    assert b"you sent Authorization: Basic ***" in everything or (
        b"you sent Authorization: Bearer ***" in everything
    )


@pytest.mark.parametrize("where", ["config", "environment"])
def test_a_base_url_that_is_not_a_url_is_a_one_line_config_error(
    tmp_path: Path, where: str
) -> None:
    """A base URL that URL parsing refuses (an unclosed ``[``, a port that is not a number)
    crashed with a traceback (exit 1) when the endpoint was opened; it is a config error that
    names the setting and not its text (which may hold credentials)."""
    reference, responses, _ = write_inputs(tmp_path, 1)
    bad = f"http://{USER}:{urllib.parse.quote(PASSWORD, safe='')}@[127.0.0.1/v1"
    endpoint: dict[str, Any] = {"provider": "openai-compatible", "base_url": bad}
    if where == "environment":
        endpoint = {"provider": "openai", "api_key_env": "ECHO_TEST_JUDGE_KEY"}
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"llm": {"generation": endpoint}}))
    command = ("-m", "graphrag_eval.cli", "evaluate", reference, responses, "-c", config)
    result = run(*command, "-o", tmp_path / "out", base=bad if where == "environment" else None)
    err = result.stderr.decode()
    assert result.returncode == 2, err
    assert err.count("\n") == 1
    assert "base_url" in err if where == "config" else "OPENAI_BASE_URL" in err
    assert "is not a URL" in err
    assert PASSWORD not in err and urllib.parse.quote(PASSWORD, safe="") not in err
