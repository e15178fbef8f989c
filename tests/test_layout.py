"""The package's layering and sizes (docs/architecture.md): imports go one way, so the
modules of ``src/graphrag_eval`` form no cycle, lazy imports (inside functions, under
``TYPE_CHECKING``) and string imports (``importlib.import_module``) included, and neither do
its packages; the root keeps a handful of modules; no module or function outgrows its limit.
The graph is read from the source by tests/layout_graph.py."""

from __future__ import annotations

import ast

from layout_graph import (
    ROOT,
    cycle_imports,
    find_cycle,
    import_graph,
    import_time_edges,
    imported,
    module_names,
    package_graph,
    parse,
    unresolved_string_imports,
)

METRICS = {
    "graphrag_eval.metrics",
    "graphrag_eval.metrics.base",
    "graphrag_eval.metrics.custom",
    "graphrag_eval.metrics.judging",
}


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


def test_the_graph_sees_string_imports() -> None:
    """A constant name, an f-string and a variable read from a table of constant strings
    (as ``config.__getattr__`` and the root's do), ``__import__``, ``find_spec`` and a
    relative name: each is the module it names, and only those."""
    source = (
        "import importlib\n"
        "from importlib import import_module\n"
        '_SECTIONS = {"A": "base", "B": "judging"}\n'
        '_LAZY = {"load": "graphrag_eval.files"}\n'
        "def __getattr__(name):\n"
        "    module = _SECTIONS.get(name)\n"
        '    importlib.import_module(f"graphrag_eval.metrics.{module}")\n'
        "    importlib.import_module(_LAZY[name])\n"
        '    __import__("graphrag_eval.errors")\n'
        '    __import__("graphrag_eval.metrics", fromlist=["judging"])\n'
        '    importlib.util.find_spec("graphrag_eval.version")\n'
        '    import_module(".shapes", __package__)\n'
    )
    known = METRICS | {
        "graphrag_eval.errors",
        "graphrag_eval.files",
        "graphrag_eval.version",
        "graphrag_eval.inputs.shapes",
        "graphrag_eval.inputs.reference",
    }

    found = imported(ast.parse(source), "graphrag_eval.inputs.check", False, known)

    assert found == {
        "graphrag_eval.metrics",
        "graphrag_eval.metrics.base",
        "graphrag_eval.metrics.judging",
        "graphrag_eval.files",
        "graphrag_eval.errors",
        "graphrag_eval.version",
        "graphrag_eval.inputs.shapes",
    }


def test_an_open_part_of_a_string_import_matches_every_module_that_fits() -> None:
    """What the source does not fix (here a parameter, which hides the module's ``name``)
    stands for each module under the constant prefix; a name with no constant prefix names
    nothing the graph can tell, and is reported."""
    source = (
        "import importlib\n"
        'name = "base"\n'
        "def load(name, anything):\n"
        '    importlib.import_module(f"graphrag_eval.metrics.{name}")\n'
        "    importlib.import_module(anything)\n"
    )
    tree = ast.parse(source)

    found = imported(tree, "graphrag_eval.cli", False, METRICS | {"graphrag_eval.errors"})

    assert found == METRICS - {"graphrag_eval.metrics"}
    assert unresolved_string_imports(tree, "graphrag_eval.cli", False) == [
        "importlib.import_module(anything)"
    ]


def test_every_string_import_of_the_package_names_its_module() -> None:
    """Else the graph cannot see what it imports: name the module with a constant, an
    f-string with a constant prefix or a table of constant strings."""
    unresolved = {
        name: calls
        for name, path in sorted(module_names().items())
        if (calls := unresolved_string_imports(parse(path), name, path.name == "__init__.py"))
    }

    assert unresolved == {}


def test_a_cycle_is_found() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_the_package_has_no_import_cycle() -> None:
    assert find_cycle(import_graph()) is None


def test_a_package_init_on_the_way_is_part_of_the_import() -> None:
    """The cycle that broke ``import graphrag_eval.llm.engine`` on its own: the engine
    imported ``config.llm``, whose package ``__init__`` imported the metrics, which import the
    engine. What runs only later (a function's body, a method's, ``if TYPE_CHECKING``) is not
    part of the import; a string import at the top level is."""
    source = (
        "import importlib\n"
        "from typing import TYPE_CHECKING\n"
        "from graphrag_eval.config.llm import LLMConfig\n"
        'importlib.import_module("graphrag_eval.errors")\n'
        "if TYPE_CHECKING:\n"
        "    import graphrag_eval.metrics\n"
        "def f():\n"
        "    import graphrag_eval.report\n"
        "class C:\n"
        "    def g(self):\n"
        '        importlib.import_module("graphrag_eval.cli")\n'
    )
    known = {
        "graphrag_eval",
        "graphrag_eval.config",
        "graphrag_eval.config.llm",
        "graphrag_eval.errors",
        "graphrag_eval.metrics",
        "graphrag_eval.report",
        "graphrag_eval.cli",
    }

    found = import_time_edges(ast.parse(source), "graphrag_eval.llm.engine", False, known)

    assert found == {"graphrag_eval.config", "graphrag_eval.config.llm", "graphrag_eval.errors"}


def test_the_package_imports_without_a_cycle_in_any_order() -> None:
    """Whichever module is imported first (the package's ``__init__`` imports nothing of its
    own, so each command or library call may start anywhere)."""
    assert find_cycle(import_graph(import_time=True)) is None


def test_a_package_level_cycle_is_found() -> None:
    """Two packages that import each other, through modules that form no cycle; modules at
    the root are packages of their own (the root is no package that would hold them all)."""
    modules = {
        "graphrag_eval.llm.engine": {"graphrag_eval.embeddings.local"},
        "graphrag_eval.embeddings.local": {"graphrag_eval.llm.cache", "graphrag_eval.errors"},
        "graphrag_eval.llm.cache": {"graphrag_eval.errors"},
        "graphrag_eval.files": {"graphrag_eval.llm.cache"},
        "graphrag_eval.errors": set(),
    }

    assert find_cycle(modules) is None
    assert find_cycle(package_graph(modules)) == ["embeddings", "llm", "embeddings"]
    assert cycle_imports(modules, ["embeddings", "llm", "embeddings"]) == [
        "graphrag_eval.embeddings.local -> graphrag_eval.llm.cache",
        "graphrag_eval.llm.engine -> graphrag_eval.embeddings.local",
    ]
    del modules["graphrag_eval.llm.engine"]
    assert find_cycle(package_graph(modules)) is None


def test_no_package_level_import_cycle() -> None:
    """The top-level subpackages, each collapsed into one node, import one way too: two of
    them that import each other are one layer in two places (docs/architecture.md)."""
    modules = import_graph()
    cycle = find_cycle(package_graph(modules))

    assert cycle is None, (cycle, cycle_imports(modules, cycle or []))


MAX_ROOT_MODULES = 10


def test_the_package_root_holds_a_handful_of_modules() -> None:
    """The root keeps the facade, the errors and a few cross-cutting modules; the rest lives
    in the packages of the flow (docs/architecture.md)."""
    root = sorted(path.name for path in ROOT.glob("*.py"))

    assert len(root) <= MAX_ROOT_MODULES, f"{len(root)} modules: {', '.join(root)}"


def test_metrics_leave_the_dry_run_to_the_engine() -> None:
    """A dry run is a policy of the engine (docs/llm.md): no metric names ``NotCalled``."""
    named = [
        path.name
        for path in (ROOT / "metrics").glob("*.py")
        if "NotCalled"
        in {
            alias.name
            for node in ast.walk(parse(path))
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
