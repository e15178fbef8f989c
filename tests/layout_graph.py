"""The import graph of ``src/graphrag_eval``, read from the source with :mod:`ast`, for
tests/test_layout.py (docs/architecture.md).

An edge is an ``import`` statement anywhere in a module (inside functions and under
``TYPE_CHECKING`` too) or a string import: ``importlib.import_module``, ``__import__`` or
``importlib.util.find_spec`` of a name that is a constant, an f-string or a concatenation, or a
variable bound to those or read from a table of them (``_LAZY.get(name)``). A part of the name
the source does not fix matches every module that fits (``f"graphrag_eval.metrics.{x}"``: each
module under ``metrics``)."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from itertools import pairwise, product
from pathlib import Path

import graphrag_eval

ROOT = Path(graphrag_eval.__file__).parent

# Calls whose first argument names a module they import (find_spec imports the parent
# packages and locates the module: a dependency on it all the same).
STRING_IMPORTS = {"import_module", "__import__", "find_spec"}

ANY = None  # a part of a string the source does not fix (a parameter, a computed value)
Template = tuple[str | None, ...]  # the parts of a string, constant or ANY


def module_names() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its ``__init__``)."""
    modules: dict[str, Path] = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def base_of(name: str, is_package: bool, level: int) -> list[str]:
    """The package a relative import with ``level`` dots in module ``name`` starts from."""
    base = name.split(".")
    if not is_package:
        base.pop()
    return base[: len(base) - (level - 1)]


SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
Scope = dict[str, list[ast.expr]]  # name -> every value bound to it in one function
UNKNOWN = ast.Constant(value=None)  # a value the source does not show (a parameter)


def own_nodes(scope: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a module or function, not those inside the functions it defines."""
    stack = list(ast.iter_child_nodes(scope))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, SCOPES):
            stack.extend(ast.iter_child_nodes(node))


def bindings(scope: ast.AST) -> Scope:
    """Every value bound to each plain name of a scope, in no order (a name stands for all
    the values it may hold): assignments, parameters (unknown), loops over a literal (each
    of its items) or over anything else (unknown)."""
    bound: Scope = {}
    if isinstance(scope, SCOPES):
        arguments = scope.args
        for arg in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]:
            bound[arg.arg] = [UNKNOWN]
    for node in own_nodes(scope):
        pairs: list[tuple[ast.expr, ast.expr]] = []
        if isinstance(node, ast.Assign):
            pairs = [(target, node.value) for target in node.targets]
        elif isinstance(node, ast.AnnAssign | ast.NamedExpr) and node.value is not None:
            pairs = [(node.target, node.value)]
        elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
            literal = isinstance(node.iter, ast.Tuple | ast.List | ast.Set)
            items = node.iter.elts if isinstance(node.iter, ast.Tuple | ast.List | ast.Set) else []
            pairs = [(node.target, item) for item in (items if literal else [UNKNOWN])]
        for target, value in pairs:
            if isinstance(target, ast.Name):
                bound.setdefault(target.id, []).append(value)
    return bound


def lookup(node: ast.expr) -> tuple[ast.Name, list[ast.expr]] | None:
    """``(table, defaults)`` for ``TABLE[key]`` and ``TABLE.get(key[, default])``."""
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
        return node.value, []
    func = node.func if isinstance(node, ast.Call) else None
    if isinstance(func, ast.Attribute) and func.attr == "get" and isinstance(func.value, ast.Name):
        return func.value, node.args[1:]  # type: ignore[union-attr]
    return None


def joined(parts: Iterable[set[Template]]) -> set[Template]:
    return {sum(choice, ()) for choice in product(*parts)}


class Strings:
    """The strings an expression of module ``name`` may evaluate to, as templates. A name
    is looked up as Python does: in its function, then in the enclosing ones, then in the
    module."""

    def __init__(self, tree: ast.Module, name: str, is_package: bool) -> None:
        self.module = bindings(tree)
        self.module.setdefault("__name__", [ast.Constant(value=name)])
        package = ".".join(base_of(name, is_package, 1))
        self.module.setdefault("__package__", [ast.Constant(value=package)])
        self.scopes: dict[ast.AST, list[Scope]] = {}  # node -> its scopes, innermost first
        self.index(tree, [self.module])
        self.resolving: set[tuple[int, str]] = set()

    def index(self, scope: ast.AST, chain: list[Scope]) -> None:
        for node in own_nodes(scope):
            self.scopes[node] = chain
            if isinstance(node, SCOPES):
                self.index(node, [bindings(node), *chain])

    def binding(self, name: ast.Name) -> tuple[tuple[int, str], list[ast.expr]] | None:
        """Where a name is bound (its scope and name) and the values bound to it there, or
        ``None`` when it is not bound in the source (a builtin)."""
        for scope in self.scopes.get(name, [self.module]):
            if name.id in scope:
                return (id(scope), name.id), scope[name.id]
        return None

    def of(self, node: ast.expr) -> set[Template]:
        if isinstance(node, ast.Constant):
            return {(node.value,)} if isinstance(node.value, str) else {(ANY,)}
        if isinstance(node, ast.JoinedStr):
            return joined(self.of(part) for part in node.values)
        if isinstance(node, ast.FormattedValue):
            return self.of(node.value)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return joined([self.of(node.left), self.of(node.right)])
        if isinstance(node, ast.IfExp):
            return self.of(node.body) | self.of(node.orelse)
        table = lookup(node)
        name = node if isinstance(node, ast.Name) else table[0] if table else None
        bound = self.binding(name) if name is not None else None
        if bound is None:
            return {(ANY,)}
        key, values = bound
        if table is not None:
            # What a lookup may give: the values of the dict literal(s) bound to the table
            # and the lookup's default; a table not spelled out in the source gives anything.
            if not all(isinstance(value, ast.Dict) for value in values):
                return {(ANY,)}
            dicts = [value for value in values if isinstance(value, ast.Dict)]
            values = [*table[1], *(v or UNKNOWN for d in dicts for v in d.values)]
        return self.of_values(key, values)

    def of_values(self, key: tuple[int, str], values: list[ast.expr]) -> set[Template]:
        if key in self.resolving:  # x = x + "a": what it adds to is not known
            return {(ANY,)}
        self.resolving.add(key)
        try:
            return {template for value in values for template in self.of(value)}
        finally:
            self.resolving.discard(key)


def matching(template: Template, known: set[str]) -> set[str]:
    """The modules a template may name: a constant name itself; with parts left open, every
    known module that fits (an open part spans one or more characters, dots included). A
    template that does not start with a constant names nothing this graph can tell."""
    if ANY not in template:
        return {"".join(part for part in template if part is not ANY)}
    if template[0] is ANY:
        return set()
    pattern = "".join(".+" if part is ANY else re.escape(part) for part in template)
    return {module for module in known if re.fullmatch(pattern, module)}


def argument(call: ast.Call, position: int, keyword: str) -> ast.expr | None:
    if len(call.args) > position:
        return call.args[position]
    return next((kw.value for kw in call.keywords if kw.arg == keyword), None)


def absolute(template: Template, packages: set[Template]) -> set[Template]:
    """``import_module(".x", package)``: the name against each constant package."""
    first = template[0]
    if first is ANY or not first.startswith("."):
        return {template}
    level = len(first) - len(first.lstrip("."))
    found: set[Template] = set()
    for package in packages:
        if ANY in package:
            found.add((ANY,))
            continue
        parts = "".join(part for part in package if part is not ANY).split(".")
        base = ".".join(parts[: len(parts) - (level - 1)])
        found.add((f"{base}.{first[level:]}", *template[1:]))
    return found


def call_names(call: ast.Call, strings: Strings) -> set[Template]:
    """The names a string-import call may import (``__import__``'s ``fromlist`` included)."""
    called = ast.unparse(call.func).rsplit(".", 1)[-1]
    names = strings.of(call.args[0])
    if called == "import_module":
        package = argument(call, 1, "package")
        base = strings.of(package) if package is not None else {(ANY,)}
        names = {name for template in names for name in absolute(template, base)}
    if called == "__import__":
        fromlist = argument(call, 3, "fromlist")
        if isinstance(fromlist, ast.List | ast.Tuple):
            items = {t for item in fromlist.elts for t in strings.of(item)}
            names |= joined([names, {(".",)}, items])
    return names


def string_import_calls(nodes: Iterable[ast.AST]) -> Iterator[ast.Call]:
    for node in nodes:
        if isinstance(node, ast.Call) and node.args:
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if called in STRING_IMPORTS:
                yield node


def import_time_nodes(body: list[ast.stmt]) -> Iterator[ast.AST]:
    """The nodes of a module that run when it is imported: all but the bodies of functions
    and lambdas (their decorators and defaults do run) and of ``if TYPE_CHECKING``."""
    stack: list[ast.AST] = list(reversed(body))
    while stack:
        node = stack.pop()
        yield node
        children: list[ast.AST]
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            decorators = [] if isinstance(node, ast.Lambda) else node.decorator_list
            defaults = [d for d in node.args.kw_defaults if d is not None]
            children = [*decorators, *node.args.defaults, *defaults]
        elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            children = list(node.orelse)
        else:
            children = list(ast.iter_child_nodes(node))
        stack.extend(reversed(children))


def imported(
    tree: ast.Module, name: str, is_package: bool, known: set[str], *, import_time: bool = False
) -> set[str]:
    """The package's modules that ``tree`` (module ``name``) imports, anywhere in it or, with
    ``import_time``, when it is imported. ``from pkg import x`` counts as an import of ``pkg``
    and, when ``x`` is a module, of ``pkg.x``; a string import as one of every module its
    name may be."""
    nodes = list(import_time_nodes(tree.body) if import_time else ast.walk(tree))
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = base_of(name, is_package, node.level)
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names)
    strings = Strings(tree, name, is_package)
    for call in string_import_calls(nodes):
        found.update(
            module for template in call_names(call, strings) for module in matching(template, known)
        )
    return {module for module in found if module in known and module != name}


def unresolved_string_imports(tree: ast.Module, name: str, is_package: bool) -> list[str]:
    """The string imports of a module that may import a name not starting with a constant:
    the graph cannot tell which module that is (shown as source)."""
    strings = Strings(tree, name, is_package)
    return [
        ast.unparse(call)
        for call in string_import_calls(ast.walk(tree))
        if any(template[0] is ANY for template in call_names(call, strings))
    ]


def packages_of(module: str) -> set[str]:
    parts = module.split(".")
    return {".".join(parts[:end]) for end in range(1, len(parts))}


def import_time_edges(tree: ast.Module, name: str, is_package: bool, known: set[str]) -> set[str]:
    """The package's modules importing ``name`` runs, as Python runs them: importing
    ``pkg.sub.mod`` first runs the ``__init__`` of ``pkg.sub`` (unless the importer is inside
    ``pkg.sub``, which is then being imported already)."""
    targets = imported(tree, name, is_package, known, import_time=True)
    own = packages_of(name) | ({name} if is_package else set())
    return {
        module
        for target in targets
        for module in {target, *packages_of(target)} - own
        if module in known and module != name
    }


def import_graph(*, import_time: bool = False) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (anywhere, or when it is imported)."""
    modules = module_names()
    known = set(modules)
    edges = import_time_edges if import_time else imported
    return {
        name: edges(parse(path), name, path.name == "__init__.py", known)
        for name, path in modules.items()
    }


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a path that starts and ends at the same node, or ``None``."""
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


def package_of(module: str) -> str:
    """The top-level subpackage of a module (``graphrag_eval.llm.engine`` -> ``llm``); a
    module at the package root is its own, the root ``__init__`` is ``graphrag_eval``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """``graph`` with each module collapsed into its top-level subpackage."""
    collapsed: dict[str, set[str]] = {}
    for module, targets in graph.items():
        edges = collapsed.setdefault(package_of(module), set())
        edges.update(package_of(target) for target in targets)
    for package, edges in collapsed.items():
        edges.discard(package)
    return collapsed


def cycle_imports(graph: dict[str, set[str]], cycle: list[str]) -> list[str]:
    """The module imports that make each step of a package-level ``cycle`` of ``graph``."""
    steps = set(pairwise(cycle))
    return sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        for target in targets
        if (package_of(module), package_of(target)) in steps
    )
