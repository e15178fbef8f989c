"""``python -m graphrag_eval.cli``: the ``graphrag-eval`` command."""

from __future__ import annotations

from graphrag_eval.cli import main

raise SystemExit(main())
