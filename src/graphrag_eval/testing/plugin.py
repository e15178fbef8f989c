"""The pytest plugin of graphrag-eval (entry point ``pytest11``, name ``graphrag_eval``):
the ``graphrag_eval`` fixture, and ``--graphrag-eval-dir`` / the ``graphrag_eval_dir`` ini
option, where each test's runs are kept (by default in the test's ``tmp_path``). See
docs/integrations.md, "pytest".

It imports nothing of the package until a test asks for the fixture: a test session that
does not use it loads this module and nothing else.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from graphrag_eval.testing.fixture import GraphragEval

_DIR_HELP = (
    "keep each test's graphrag-eval runs in DIR/<test id>-<digest>/ (default: the test's tmp_path; "
    "a relative DIR is under the rootdir)"
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("graphrag-eval")
    group.addoption("--graphrag-eval-dir", metavar="DIR", default=None, help=_DIR_HELP)
    parser.addini("graphrag_eval_dir", _DIR_HELP, default=None)


def _root(request: pytest.FixtureRequest) -> Path:
    """Where the test's runs go: the configured directory's folder for this test, else
    the test's ``tmp_path``."""
    config = request.config
    configured = config.getoption("--graphrag-eval-dir") or config.getini("graphrag_eval_dir")
    if not configured:
        tmp_path: Path = request.getfixturevalue("tmp_path")
        return tmp_path
    from graphrag_eval.testing.fixture import test_directory

    base = Path(str(configured)).expanduser()
    if not base.is_absolute():
        base = config.rootpath / base
    return test_directory(base, request.node.nodeid)


@pytest.fixture
def graphrag_eval(request: pytest.FixtureRequest) -> GraphragEval:
    """Evaluate responses, or an agent, in a test: ``graphrag_eval.assert_passes(reference,
    responses, fail_under="steps_score=0.8")`` (docs/integrations.md, "pytest")."""
    from graphrag_eval.testing.fixture import GraphragEval

    return GraphragEval(_root(request))
