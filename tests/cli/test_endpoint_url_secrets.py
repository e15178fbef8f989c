"""A SPARQL endpoint URL with a secret in its query string (``?api_key=...``, a signed URL's
``sig=``): the secret is sent, but no output of ``evaluate`` holds it, not ``run.yaml``'s
config, the report's config, the results, nor the terminal with ``--debug``
(docs/security.md, "Secrets")."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphrag_eval.cli import main
from graphrag_eval.cli.errors import EXIT_INCOMPLETE
from graphrag_eval.config.secrets import mask_url_credentials

from builders import write_query_run
from judge_server import closed_port_url

pytest.importorskip("aiohttp")

SECRETS = ("S3CRET-KEY-1", "S3CRET-TOKEN-2", "S3CRET-SIG-3")
QUERY = "SELECT ?n WHERE { <http://example.org/a> <http://example.org/name> ?n }"


def test_no_output_holds_a_secret_of_the_endpoint_url(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reference, responses = write_query_run(tmp_path, QUERY, {"q0": QUERY}, typed=False)
    endpoint = closed_port_url().rstrip("/") + (
        f"/query?api_key={SECRETS[0]}&access_token={SECRETS[1]}&sig={SECRETS[2]}&infer=false"
    )
    out = tmp_path / "out"
    code = main(
        [
            "--debug",
            "evaluate",
            str(reference),
            str(responses),
            "--endpoint",
            endpoint,
            "-o",
            str(out),
        ]
    )
    assert code == EXIT_INCOMPLETE  # the endpoint is unreachable
    shown = capsys.readouterr()
    texts = {"stdout": shown.out, "stderr": shown.err}
    texts.update({path.name: path.read_text("utf-8") for path in out.iterdir() if path.is_file()})
    assert "infer=false" in texts["run.yaml"]  # the URL is there, with its other parameters
    for name, text in texts.items():
        for secret in SECRETS:
            assert secret not in text, f"{secret} in {name}"


def test_secret_query_parameters_are_masked_in_any_url() -> None:
    assert mask_url_credentials("http://h/q?api_key=a1&sig=b2&x=1") == (
        "http://h/q?api_key=***&sig=***&x=1"
    )
    assert mask_url_credentials("no url: key=value") == "no url: key=value"
