"""The HTML page of one question of a run, ``graphrag-eval report --question ID``
(docs/report.md, "One question"): its texts, scores, reasons, errors, and its steps with why
each reference step did not match (:mod:`~graphrag_eval.report.step_views`)."""

from __future__ import annotations

from pathlib import Path

from graphrag_eval.collector import collection_paused
from graphrag_eval.errors import InputError
from graphrag_eval.files.documents import write_text_atomic
from graphrag_eval.report.html import render_page
from graphrag_eval.report.item_views import headline_keys, headline_score, item_view
from graphrag_eval.report.run_views import output_keys
from graphrag_eval.results.item_values import item_values
from graphrag_eval.results.read_run import SavedRun

__all__ = ["render_question", "write_question"]


def render_question(run: SavedRun, question_id: str) -> str:
    """The page of question ``question_id``; ``InputError`` when the run has no such
    question."""
    with collection_paused():
        results = run.results.results
        index = next((i for i, r in enumerate(results) if str(r.question_id) == question_id), None)
        if index is None:
            raise InputError(f"no question {question_id!r} in this run", file=str(run.results_path))
        keys = output_keys(run)
        # The run's values: an error sample's zeros depend on what the other questions show.
        scores = item_values(run.results, run.config).values[index]
        score = headline_score(scores, headline_keys(keys))
        item = item_view(results[index], scores, keys, score)
        return render_page(
            "question.html.j2",
            f"graphrag-eval: question {question_id} of {run.label}",
            run=run,
            item=item,
        )


def write_question(run: SavedRun, question_id: str, path: str | Path) -> Path:
    """Write the page of one question to ``path`` (atomically) and return the path."""
    path = Path(path)
    write_text_atomic(path, render_question(run, question_id))
    return path
