"""How the test suite is set up (README.md, "Run the tests"): a test run installs nothing;
the browser of the browser tests is installed by an explicit step the README's test command
runs before pytest (tests/setup_browser.sh)."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).parent
ROOT = TESTS.parent
INSTALLERS = {"apt", "apt-get", "dnf", "yum", "apk", "brew", "pip", "pip3", "playwright"}
RUNNERS = {"run", "Popen", "call", "check_call", "check_output", "system", "spawnlp"}


def _command_name(node: ast.Call) -> str | None:
    """The program a ``subprocess.run([...])``-like call starts, when written literally."""
    if not node.args:
        return None
    first = node.args[0]
    if isinstance(first, ast.List | ast.Tuple) and first.elts:
        first = first.elts[0]
    if isinstance(first, ast.Constant) and isinstance(first.value, str):
        return first.value.split()[0] if first.value.split() else None
    return None


def test_no_test_module_or_fixture_runs_a_package_installer() -> None:
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                continue
            if node.func.attr in RUNNERS and _command_name(node) in INSTALLERS:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert found == []


def test_the_readme_test_command_sets_up_the_browser_before_pytest() -> None:
    """The line .ci/run executes: the first starting with ``python3 `` after "Run the tests:"."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    start = lines.index("Run the tests:")
    command = next(line for line in lines[start:] if line.startswith("python3 "))
    setup = command.index("&& sh tests/setup_browser.sh &&")
    assert setup < command.index("-m pytest")
    assert (TESTS / "setup_browser.sh").is_file()
