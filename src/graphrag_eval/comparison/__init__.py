"""The parts of a comparison of two runs (:mod:`graphrag_eval.comparison.compare` is its entry
point).

``model``: the comparison's result types; ``pairing``: the questions both runs have, side by
side; ``changes``: how each metric moved over them, with its verdict; ``bootstrap``: the
paired bootstrap intervals. The method is described in docs/report.md, "The method".
"""
