"""The scripted judge of the metric tests is answered over HTTP, through the production
client (docs/architecture.md, "Tests"): what a metric test checks is what a run sends."""

from __future__ import annotations

from graphrag_eval.version import __version__
from metrics.scripted_judge import ScriptedJudge, judge_config, run_scripted, selecting

from builders import dataset, question, response


def test_metric_requests_go_through_the_engines_own_client() -> None:
    judge = ScriptedJudge()
    reference = dataset(question("q1", answer="OSLO T1, OSLO T2", text="Which units?"))
    responses = [response("q1", actual_answer="OSLO T1")]
    config = selecting(judge_config(), "answer_correctness", "semantic_similarity")

    [result] = run_scripted(judge, reference, responses, config)

    assert "answer_recall" in result and "semantic_similarity_percentage" in result
    assert {request.path for request in judge.received} == {
        "/v1/chat/completions",
        "/v1/embeddings",
    }
    agents = {request.headers["user-agent"] for request in judge.received}
    assert agents == {f"graphrag-eval/{__version__}"}  # the SDK's would be AsyncOpenAI/Python
