"""Embedding models behind one interface (:class:`~.base.Embedder`): a local
sentence-transformers model run in-process (:mod:`.local`, with BERTScore in
:mod:`.bert_score`) or an OpenAI-compatible endpoint (:mod:`.remote`). See docs/llm.md
(local models).
"""
