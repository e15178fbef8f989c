"""Small builders of reference items, responses and SPARQL results for tests."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

SPARQL_JSON = "application/sparql-results+json"
XSD = "http://www.w3.org/2001/XMLSchema#"


def uri(value: str) -> dict[str, str]:
    return {"type": "uri", "value": value}


def lit(value: str, datatype: str | None = None) -> dict[str, str]:
    term = {"type": "literal", "value": value}
    if datatype is not None:
        term["datatype"] = datatype if datatype.startswith("http") else XSD + datatype
    return term


def sparql(variables: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """SPARQL results JSON text; a ``None`` cell is unbound, a str is a plain literal."""
    bindings = []
    for row in rows:
        binding = {}
        for var, cell in zip(variables, row, strict=True):
            if cell is None:
                continue
            binding[var] = lit(cell) if isinstance(cell, str) else cell
        bindings.append(binding)
    return json.dumps({"head": {"vars": list(variables)}, "results": {"bindings": bindings}})


def ask(value: bool) -> str:
    return json.dumps({"head": {}, "boolean": value})


def contexts(*items: tuple[str | None, str | None] | str) -> str:
    """A retrieval output: ``("id", "text")`` pairs (either may be None) or plain strings."""
    out: list[Any] = []
    for item in items:
        if isinstance(item, str):
            out.append(item)
        else:
            ctx_id, text = item
            entry = {}
            if ctx_id is not None:
                entry["id"] = ctx_id
            if text is not None:
                entry["text"] = text
            out.append(entry)
    return json.dumps(out)


def step(
    name: str,
    output: Any = None,
    step_id: str | None = None,
    status: str = "success",
    **fields: Any,
) -> dict[str, Any]:
    """An actual step."""
    result: dict[str, Any] = {"name": name, "status": status}
    if step_id is not None:
        result["id"] = step_id
    if output is not None:
        result["output"] = output
    result.update(fields)
    return result


def ref_step(name: str, output: Any = None, **fields: Any) -> dict[str, Any]:
    """A reference step."""
    result: dict[str, Any] = {"name": name}
    if output is not None:
        result["output"] = output
    result.update(fields)
    return result


def sparql_ref(output: str, **fields: Any) -> dict[str, Any]:
    return ref_step("sparql_query", output, output_media_type=SPARQL_JSON, **fields)


def dataset(*questions: dict[str, Any], template_id: str = "t1") -> list[dict[str, Any]]:
    return [{"template_id": template_id, "questions": list(questions)}]


def question(
    qid: str,
    groups: Sequence[Sequence[dict[str, Any]]] | None = None,
    answer: str | None = None,
    text: str | None = None,
) -> dict[str, Any]:
    item: dict[str, Any] = {"id": qid, "question_text": text or f"question {qid}?"}
    if answer is not None:
        item["reference_answer"] = answer
    if groups is not None:
        item["reference_steps"] = [list(group) for group in groups]
    return item


def response(
    qid: str, steps: Sequence[dict[str, Any]] | None = None, **fields: Any
) -> dict[str, Any]:
    item: dict[str, Any] = {"question_id": qid}
    if steps is not None:
        item["actual_steps"] = list(steps)
    item.update(fields)
    return item


def write_tsv(path: Path, rows: Iterable[tuple[str, str, str]]) -> None:
    """An ``answer-correctness`` input: the three columns, one row per tuple."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter="\t", lineterminator="\n")
    writer.writerow(["Question", "Reference answer", "Actual answer"])
    writer.writerows(rows)
    path.write_text(buffer.getvalue())


def through_proxy(proxy: str) -> dict[str, str]:
    """The environment variables that send every HTTP(S) request through ``proxy`` (as
    requests, httpx and aiohttp read them), for the offline checks (the ``dead_proxy``
    fixture)."""
    names = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY")
    return dict.fromkeys(names, proxy)
