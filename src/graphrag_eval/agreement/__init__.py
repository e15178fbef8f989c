"""Agreement of a run's judge with human labels (docs/report.md, "Agreement with human
labels"): labels read from a labels file or the reference's ``human_labels``
(:mod:`.labels`), each metric's kind of value (:mod:`.scales`), the statistics from the
libraries of the ``agreement`` extra (:mod:`.statistics`), their assembly per metric
(:mod:`.compute`, :mod:`.model`), the terminal tables (:mod:`.console`) and the gate
(:mod:`.gates`)."""

from graphrag_eval.agreement.compute import compute_agreement
from graphrag_eval.agreement.labels import LabelSet, read_labels_file, reference_labels
from graphrag_eval.agreement.model import Agreement, Estimate, MetricAgreement

__all__ = [
    "Agreement",
    "Estimate",
    "LabelSet",
    "MetricAgreement",
    "compute_agreement",
    "read_labels_file",
    "reference_labels",
]
