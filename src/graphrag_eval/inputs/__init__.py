"""Reference datasets and responses: from files or Python objects to validated, typed items.

Two kinds of input, treated differently (docs/inputs.md):

* The **reference dataset** is curated by the user. A structural error in it (not a list of
  templates, a question without ``id``, duplicate ids, a malformed step) raises
  :class:`~graphrag_eval.errors.InputError` before anything is evaluated. A data bug inside a
  step output (unparsable JSON) is only a :class:`Notice`: the step scores as unmatched.
* **Responses** come from the system under test and are messy. Nothing in them raises: a
  malformed response or step gets an error on that item or step, a response for an unknown
  question is a warning, and the rest is evaluated.

Only a run that would evaluate nothing is an error (:func:`check_evaluable`).

Every message names the file, the item (question id or line number) and the field. The
user's objects are never mutated; typed objects keep a reference to the original mapping so
results can copy it faithfully.

The modules: :mod:`.notices` (what is reported without stopping), :mod:`.shapes` (field
types and error wording), :mod:`.steps` (reference and actual steps), :mod:`.reference`,
:mod:`.responses` and :mod:`.check` (whether anything would be evaluated).
"""

from graphrag_eval.inputs.check import check_evaluable
from graphrag_eval.inputs.notices import Diagnostics, Notice, count_kinds, unreadable_output_notice
from graphrag_eval.inputs.reference import ReferenceQuestion, load_reference, parse_reference
from graphrag_eval.inputs.responses import (
    Response,
    ResponseSet,
    load_responses,
    parse_responses,
    question_id_in_text,
)
from graphrag_eval.inputs.shapes import REFERENCE_LABEL, RESPONSES_LABEL, SWAP_HINT
from graphrag_eval.inputs.steps import ActualStep, ReferenceCheck, ReferenceStep

__all__ = [
    "REFERENCE_LABEL",
    "RESPONSES_LABEL",
    "SWAP_HINT",
    "ActualStep",
    "Diagnostics",
    "Notice",
    "ReferenceCheck",
    "ReferenceQuestion",
    "ReferenceStep",
    "Response",
    "ResponseSet",
    "check_evaluable",
    "count_kinds",
    "load_reference",
    "load_responses",
    "parse_reference",
    "parse_responses",
    "question_id_in_text",
    "unreadable_output_notice",
]
