"""The ``graphrag-eval`` command line, one module per command (docs/report.md).

User errors (a bad reference, responses or config file) print one line and exit 2;
``--debug`` shows the traceback instead. Exit codes: 0 ok, 1 a CI gate failed
(``--fail-under``, ``--fail-over``, ``--fail-on-regression``), 2 bad input or config.

The output directory itself is written by the library (:mod:`graphrag_eval.rundir`,
:mod:`graphrag_eval.checkpoint`); the commands parse options, call it and print.
"""

from __future__ import annotations

from graphrag_eval.cli.app import answer_correctness_main, cli, main

__all__ = ["answer_correctness_main", "cli", "main"]
