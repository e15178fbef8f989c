"""Small builders of reference items, responses, SPARQL results, judge configs and command
runs for tests."""

from __future__ import annotations

import contextlib
import csv
import io
import json
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import yaml

from graphrag_eval.inputs import parse_reference
from graphrag_eval.metrics.base import ItemContext, ItemMetric, Outcome, OutputKey
from graphrag_eval.metrics.registry import register_metric, registered_metrics, unregister_metric
from graphrag_eval.results.checkpoint import resume
from graphrag_eval.results.write_run import CHECKPOINT_JSON, RESULTS_JSONL, results_jsonl_text

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


def write_query_run(
    folder: Path,
    reference_query: str,
    queries: dict[str, str],
    *,
    typed: bool = True,
) -> tuple[Path, Path]:
    """Files of a run that executes SPARQL steps: a reference (YAML) whose questions (the ids
    of ``queries``) each have one ``sparql_query`` step of ``reference_query`` without an
    output (with its media type when ``typed``), and responses (JSON Lines) whose steps log
    ``queries`` (question id -> query) without outputs."""
    reference_step: dict[str, Any] = {"name": "sparql_query", "args": {"query": reference_query}}
    if typed:
        reference_step["output_media_type"] = SPARQL_JSON
    reference = folder / "reference.yaml"
    items = (question(qid, [[dict(reference_step)]]) for qid in queries)
    reference.write_text(yaml.safe_dump(dataset(*items)), encoding="utf-8")
    responses = folder / "responses.jsonl"
    lines = (
        json.dumps(response(qid, [step("sparql_query", args={"query": query})])) + "\n"
        for qid, query in queries.items()
    )
    responses.write_text("".join(lines), encoding="utf-8")
    return reference, responses


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


def write_answered(
    folder: Path,
    count: int,
    text: str = "Which transformers are in substation S{i}?",
    reference_answer: str = "T{i}a, T{i}b",
    actual_answer: str = "Substation S{i} has T{i}a.",
    context: str | None = None,
) -> tuple[Path, Path]:
    """``reference.yaml``, questions q0, q1... with reference answers, and ``responses.jsonl``
    answering each: the inputs of the judged answer metrics (``{i}`` in the texts is the
    question's number); with ``context``, each response retrieved that one context."""
    questions = [
        {
            "id": f"q{i}",
            "question_text": text.format(i=i),
            "reference_answer": reference_answer.format(i=i),
        }
        for i in range(count)
    ]
    reference = folder / "reference.yaml"
    reference.write_text(yaml.safe_dump([{"template_id": "t", "questions": questions}]))
    responses = folder / "responses.jsonl"
    lines = []
    for i in range(count):
        answered: dict[str, Any] = {"question_id": f"q{i}"}
        answered["actual_answer"] = actual_answer.format(i=i)
        if context is not None:
            answered["retrieved_contexts"] = [context.format(i=i)]
        lines.append(json.dumps(answered))
    responses.write_text("\n".join(lines) + "\n")
    return reference, responses


def write_judge_config(
    folder: Path, url: str, sections: dict[str, Any] | None = None, **llm: Any
) -> Path:
    """``config.yaml`` in ``folder`` whose judge and embedding model are the OpenAI-compatible
    server at ``url``, with its cache in ``folder`` and 1 ms backoff; ``llm`` adds keys to the
    ``llm`` section or replaces them (``embedding=None`` leaves the embedding model out), and
    ``sections`` are the config's other sections (``metrics``...)."""
    settings = {
        "generation": {"provider": "openai-compatible", "base_url": url},
        "embedding": {"provider": "openai-compatible", "base_url": url},
        "cache": {"path": str(folder / "cache.sqlite3")},
        "backoff_initial_s": 0.001,
        **llm,
    }
    path = folder / "config.yaml"
    config = {**(sections or {}), "llm": {k: v for k, v in settings.items() if v is not None}}
    path.write_text(yaml.safe_dump(config))
    return path


def read_records(out: Path) -> list[dict[str, Any]]:
    """The records of a run's ``results.jsonl``, in the file's order."""
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def read_results(out: Path) -> dict[str, dict[str, Any]]:
    """The records of a run's ``results.jsonl`` by question id."""
    return {record["question_id"]: record for record in read_records(out)}


def evaluate_cli(*args: str | Path) -> int:
    """``graphrag-eval evaluate ARGS`` in this process; its exit code."""
    from graphrag_eval.cli import main  # only where a test runs the command

    return main(["evaluate", *(str(arg) for arg in args)])


@contextlib.contextmanager
def failing_metric(metric_name: str, message: str) -> Iterator[None]:
    """A metric with a bug, registered for the ``with`` block: it raises
    ``RuntimeError(message)`` on every question (its keys: ``NAME_score``, ``NAME_error``)."""

    class Failing(ItemMetric):
        name = metric_name
        outputs = (OutputKey(f"{metric_name}_score"),)
        error_keys = (f"{metric_name}_error",)

        async def score(self, context: ItemContext) -> Outcome:
            raise RuntimeError(message)

    register_metric(Failing())
    try:
        yield
    finally:
        unregister_metric(metric_name)


def resume_saved(out_dir: Path, records: list[dict[str, Any]]) -> Any:
    """What ``--resume`` takes from ``records`` saved in ``out_dir`` as a checkpoint (of a
    dataset of their question ids) would keep and redo: :func:`resume`'s ``Resumed``."""
    questions = parse_reference(dataset(*(question(r["question_id"]) for r in records)))
    (out_dir / RESULTS_JSONL).write_text(results_jsonl_text(records), encoding="utf-8")
    (out_dir / CHECKPOINT_JSON).write_text(json.dumps({"fingerprint": "fp"}), encoding="utf-8")
    return resume(out_dir, RESULTS_JSONL, "fp", questions, registered_metrics())


def saved_record(question_id: str, **keys: Any) -> dict[str, Any]:
    """A saved record of a success of template ``t1`` with ``keys``."""
    return {"template_id": "t1", "question_id": question_id, "status": "success", **keys}
