"""The package's layering and sizes (docs/architecture.md): imports go one way, so the
modules of ``src/graphrag_eval`` form no cycle, lazy imports (inside functions, under
``TYPE_CHECKING``) included; no module or function outgrows its limit."""

from __future__ import annotations

import ast
from pathlib import Path

import graphrag_eval

PACKAGE = "graphrag_eval"
ROOT = Path(graphrag_eval.__file__).parent


def module_names() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its ``__init__``)."""
    modules: dict[str, Path] = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def imported(tree: ast.AST, name: str, is_package: bool, known: set[str]) -> set[str]:
    """The package's modules that ``tree`` (module ``name``) imports, anywhere in it.
    ``from pkg import x`` counts as an import of ``pkg`` and, when ``x`` is a module, of
    ``pkg.x``."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                if not is_package:
                    base.pop()
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names)
    return {module for module in found if module in known and module != name}


def import_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports."""
    modules = module_names()
    known = set(modules)
    return {
        name: imported(
            ast.parse(path.read_text(encoding="utf-8")), name, path.name == "__init__.py", known
        )
        for name, path in modules.items()
    }


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a path that starts and ends at the same module, or ``None``."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return [*path[path.index(target) :], target]
            if target not in state:
                cycle = visit(target)
                if cycle is not None:
                    return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            if cycle is not None:
                return cycle
    return None


def test_the_graph_sees_lazy_and_from_imports() -> None:
    source = (
        "from graphrag_eval.metrics import base\n"
        "def f():\n"
        "    from . import errors\n"
        "    import graphrag_eval.config\n"
    )
    known = {
        "graphrag_eval.metrics",
        "graphrag_eval.metrics.base",
        "graphrag_eval.errors",
        "graphrag_eval.config",
    }

    found = imported(ast.parse(source), "graphrag_eval.planning", False, known)

    assert found == known


def test_a_cycle_is_found() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_the_package_has_no_import_cycle() -> None:
    assert find_cycle(import_graph()) is None


def import_time_statements(body: list[ast.stmt]) -> list[ast.stmt]:
    """The statements of a module that run when it is imported: its top level and class
    bodies, into ``if``/``try``/``with`` blocks, but not functions nor ``if TYPE_CHECKING``."""
    found: list[ast.stmt] = []
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            found.extend(import_time_statements(node.orelse))
            continue
        found.append(node)
        for field in ("body", "orelse", "finalbody", "handlers"):
            inner = getattr(node, field, None)
            if isinstance(inner, list) and not isinstance(node, ast.Import | ast.ImportFrom):
                found.extend(import_time_statements([n for n in inner if isinstance(n, ast.stmt)]))
                for handler in inner:
                    if isinstance(handler, ast.ExceptHandler):
                        found.extend(import_time_statements(handler.body))
    return found


def packages_of(module: str) -> set[str]:
    parts = module.split(".")
    return {".".join(parts[:end]) for end in range(1, len(parts))}


def import_time_graph() -> dict[str, set[str]]:
    """Module -> the package's modules its import runs, as Python runs them: importing
    ``pkg.sub.mod`` first runs the ``__init__`` of ``pkg.sub`` (unless the importer is inside
    ``pkg.sub``, which is then being imported already)."""
    modules = module_names()
    known = set(modules)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        statements = ast.Module(body=import_time_statements(tree.body), type_ignores=[])
        targets = imported(statements, name, path.name == "__init__.py", known)
        own = packages_of(name) | ({name} if path.name == "__init__.py" else set())
        graph[name] = {
            module
            for target in targets
            for module in {target, *packages_of(target)} - own
            if module in known and module != name
        }
    return graph


def test_a_package_init_on_the_way_is_part_of_the_import() -> None:
    """The cycle that broke ``import graphrag_eval.llm.engine`` on its own: the engine
    imported ``config.llm``, whose package ``__init__`` imported the metrics, which import the
    engine."""
    source = "from graphrag_eval.config.llm import LLMConfig\n"
    statements = import_time_statements(ast.parse(source).body)
    assert len(statements) == 1
    guarded = "if TYPE_CHECKING:\n    import graphrag_eval.metrics\ndef f():\n    import x\n"
    assert import_time_statements(ast.parse(guarded).body) == []


def test_the_package_imports_without_a_cycle_in_any_order() -> None:
    """Whichever module is imported first (the package's ``__init__`` imports nothing of its
    own, so each command or library call may start anywhere)."""
    assert find_cycle(import_time_graph()) is None


def test_metrics_leave_the_dry_run_to_the_engine() -> None:
    """A dry run is a policy of the engine (docs/llm.md): no metric names ``NotCalled``."""
    named = [
        path.name
        for path in (ROOT / "metrics").glob("*.py")
        if "NotCalled"
        in {
            alias.name
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.ImportFrom)
            for alias in node.names
        }
    ]

    assert named == []


MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60


def test_no_module_or_function_outgrows_its_limit() -> None:
    """Modules stay under 400 lines and functions (docstrings included) under 60
    (docs/architecture.md): a longer one is split where its parts have names of their own."""
    too_long = []
    for name, path in sorted(module_names().items()):
        source = path.read_text(encoding="utf-8")
        lines = len(source.splitlines())
        if lines > MAX_MODULE_LINES:
            too_long.append(f"{name}: {lines} lines")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    too_long.append(f"{name}.{node.name}: {length} lines")
    assert too_long == []
