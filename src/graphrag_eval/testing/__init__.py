"""Testing a question-answering system under pytest (docs/integrations.md, "pytest").

The plugin (:mod:`graphrag_eval.testing.plugin`, registered as the ``pytest11`` entry point
``graphrag_eval``) gives tests the ``graphrag_eval`` fixture::

    def test_agent(graphrag_eval):
        graphrag_eval.assert_passes("reference.yaml", agent=my_agent,
                                    fail_under="steps_score=0.8", baseline="baseline/")

Nothing here is imported until a test uses it.
"""
