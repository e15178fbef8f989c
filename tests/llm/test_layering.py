"""``llm`` never imports ``embeddings`` (docs/architecture.md): the embedding models are built
where the run's services are assembled (``evaluation/services.py``) and handed to the engine,
which knows them by the protocols of ``llm/services.py``."""

from __future__ import annotations

import ast
from pathlib import Path

import graphrag_eval.llm

LLM = Path(graphrag_eval.llm.__file__).parent


def imported_modules(path: Path) -> set[str]:
    """Every module ``path`` imports, lazily or under ``TYPE_CHECKING`` too, and every
    string literal that names one of the package's modules (``import_module``)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Constant) and str(node.value).startswith("graphrag_eval."):
            names.add(str(node.value))
    return names


def test_llm_never_imports_embeddings() -> None:
    importers = sorted(
        str(path.relative_to(LLM))
        for path in LLM.rglob("*.py")
        if any(
            name == "graphrag_eval.embeddings" or name.startswith("graphrag_eval.embeddings.")
            for name in imported_modules(path)
        )
    )
    assert importers == []
