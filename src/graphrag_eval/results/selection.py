"""``--question ID`` and ``--template ID``: the questions a run evaluates, or a view of a saved
run shows (``evaluate``, ``report``, ``compare``, ``aggregate``; docs/outputs.md, "Restricting a
run or a view").

The options are repeatable and add up: a question is kept when its id is one of the
``--question`` ids *or* its template one of the ``--template`` ids (a union, so
``--template t1 --question q9`` is template t1 and question q9 besides). An id that names
nothing is an error with the closest ids (did you mean ...?), never an empty selection.
"""

from __future__ import annotations

import dataclasses
import difflib
import unicodedata
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graphrag_eval.errors import InputError
from graphrag_eval.inputs import ReferenceQuestion, ResponseSet, check_evaluable
from graphrag_eval.results.aggregation import aggregate
from graphrag_eval.results.model import RunResult
from graphrag_eval.results.read_run import SavedRun

__all__ = ["NO_FILTER", "QuestionFilter", "closest_ids"]


@dataclass(frozen=True, slots=True)
class QuestionFilter:
    """The ``--question`` and ``--template`` ids given (none: everything is kept)."""

    questions: tuple[str, ...] = ()
    templates: tuple[str, ...] = ()

    @classmethod
    def of(cls, questions: Iterable[str] = (), templates: Iterable[str] = ()) -> QuestionFilter:
        """The filter of these ids, each once, in the order given."""
        return cls(tuple(dict.fromkeys(questions)), tuple(dict.fromkeys(templates)))

    @classmethod
    def from_record(cls, record: Any) -> QuestionFilter:
        """The filter :meth:`as_record` wrote (none for anything else)."""
        if not isinstance(record, Mapping):
            return cls()
        return cls.of(*(_strings(record.get(key)) for key in ("questions", "templates")))

    @property
    def active(self) -> bool:
        return bool(self.questions or self.templates)

    def keeps(self, template_id: object, question_id: object) -> bool:
        """Whether the question ``question_id`` of template ``template_id`` is selected."""
        if not self.active:
            return True
        return str(question_id) in self.questions or str(template_id) in self.templates

    def describe(self) -> str:
        """The options as given: ``--question q1 --template t2``."""
        options = [f"--question {id_}" for id_ in self.questions]
        return " ".join(options + [f"--template {id_}" for id_ in self.templates])

    def as_record(self) -> dict[str, list[str]] | None:
        """The filter as ``run.yaml`` and ``checkpoint.json`` record it (``None``: none)."""
        if not self.active:
            return None
        return {"questions": list(self.questions), "templates": list(self.templates)}

    def check_known(
        self,
        question_ids: Collection[str],
        template_ids: Collection[str],
        *,
        file: str,
        where: str = "this run",
    ) -> None:
        """Raise :class:`InputError` for the first id that names no question (template) of
        ``question_ids`` (``template_ids``), with the closest ones: ``no question 'q9' in
        this run (did you mean q09?)``."""
        for option, given, known in (
            ("question", self.questions, question_ids),
            ("template", self.templates, template_ids),
        ):
            for id_ in given:
                if id_ not in known:
                    raise InputError(
                        f"no {option} {id_!r} in {where}{_hint(id_, known)}", file=file
                    )

    def restrict_inputs(
        self,
        questions: Sequence[ReferenceQuestion],
        responses: ResponseSet,
        reference: str | Path,
    ) -> list[ReferenceQuestion]:
        """The reference ``questions`` to evaluate: raises :class:`InputError` when the
        inputs would evaluate nothing (:func:`~graphrag_eval.inputs.check_evaluable`) or an
        id names nothing in the ``reference`` file; the selected questions, and the responses
        of the others dropped from ``responses``, so that the run ignores them without a
        notice each."""
        check_evaluable(questions, responses)
        if not self.active:
            return list(questions)
        file = str(reference)
        self.check_known(
            {question.id for question in questions},
            {question.template_id for question in questions},
            file=file,
            where="the reference dataset",
        )
        kept = [q for q in questions if self.keeps(q.template_id, q.id)]
        ids = {question.id for question in kept}
        for question_id in [id_ for id_ in responses.responses if id_ not in ids]:
            del responses.responses[question_id]
        responses.unreadable &= ids
        return kept

    def restrict_records(
        self, records: Sequence[Mapping[str, Any]], *, file: str
    ) -> list[Mapping[str, Any]]:
        """The selected ``records`` of a results ``file`` (each id checked against it)."""
        if not self.active:
            return list(records)
        self.check_known(
            {str(record.get("question_id")) for record in records},
            {str(record.get("template_id")) for record in records},
            file=file,
        )
        return [r for r in records if self.keeps(r.get("template_id"), r.get("question_id"))]

    def restrict_run(self, run: SavedRun, *, others: Sequence[SavedRun] = ()) -> SavedRun:
        """``run`` restricted to the selected questions, with its aggregates computed again.
        The ids are checked against ``run`` and ``others`` together (compare: an id of
        either run)."""
        if not self.active:
            return run
        results = [result for each in (run, *others) for result in each.results.results]
        self.check_known(
            {str(result.question_id) for result in results},
            {str(result.template_id) for result in results},
            file=" and ".join(str(each.results_path) for each in (run, *others)),
            where="either run" if others else "this run",
        )
        kept = [r for r in run.results.results if self.keeps(r.template_id, r.question_id)]
        if not kept:  # the ids are the other run's only: a comparison of nothing would pass
            raise InputError(
                f"{self.describe()} selects no question of this run: nothing to compare",
                file=str(run.results_path),
            )
        typed = RunResult(kept, run.results.layout)
        return dataclasses.replace(run, results=typed, aggregates=aggregate(typed, run.config))


NO_FILTER = QuestionFilter()
"""Every question."""


def closest_ids(id_: str, known: Iterable[str]) -> list[str]:
    """Up to three ids of ``known`` that ``id_`` likely meant: the same but for case
    (``Q1``: ``q1``), those that begin with it (a long id cut short), then the closest by
    spelling (``tr-0``: ``tr-01``), the closest first."""
    ids = sorted(set(known))
    close = difflib.get_close_matches(id_, ids, n=3, cutoff=0.6)
    close.sort(key=lambda other: (-difflib.SequenceMatcher(None, id_, other).ratio(), other))
    folded = [other for other in ids if other.casefold() == id_.casefold()]
    starting = [other for other in ids if id_ and other.startswith(id_)]
    return list(dict.fromkeys(folded + starting + close))[:3]


def _hint(id_: str, known: Iterable[str]) -> str:
    """`` (did you mean ...?)`` with the closest ids; one that differs from ``id_`` only in
    its Unicode form (``ü`` as one character or as ``u`` and a combining mark) is shown
    with its escapes, since both print alike."""
    close = closest_ids(id_, known)
    if not close:
        return ""
    same = [other for other in close if _nfc(other) == _nfc(id_)]
    if same:
        return (
            f" (did you mean {same[0]!a}? it differs only in its Unicode form from the "
            f"{id_!a} given)"
        )
    return f" (did you mean {' or '.join(close)}?)"


def _nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def _strings(value: Any) -> list[str]:
    return [str(item) for item in value] if isinstance(value, list) else []
