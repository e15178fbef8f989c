"""What ``evaluate`` and ``compare`` leave for a CI job (docs/integrations.md, "CI"): a
Markdown summary appended to ``$GITHUB_STEP_SUMMARY`` when it is set and written to
``--summary-md FILE``, and, under GitHub Actions (``GITHUB_ACTIONS=true``), the failed gates
and the regressions as workflow annotations (``::error``/``::warning`` lines).

No secret reaches either: every text passes through a redactor that knows the secrets of the
configs (their values, the variables they name, the credentials in their URLs, the proxy's)
and the judge's. A summary that cannot be written is a one-line warning: the command's exit
code is the one its run decided.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from graphrag_eval.cli.console import stderr
from graphrag_eval.cli.guarded_import import guarded_import
from graphrag_eval.cli.workflow_commands import write_command
from graphrag_eval.comparison.gates import (
    Threshold,
    check_comparison_thresholds,
    check_regressions,
    check_thresholds,
)
from graphrag_eval.config import EvaluationConfig
from graphrag_eval.config.secrets import proxy_credentials, secret_values, url_credentials
from graphrag_eval.files.documents import write_text_atomic
from graphrag_eval.formatting import plural, visible_text
from graphrag_eval.llm.redaction import Redactor
from graphrag_eval.results.write_run import REPORT_HTML

if TYPE_CHECKING:  # the Markdown writers are imported when a summary is written
    from graphrag_eval.cli.evaluate_summary import RunOutcome
    from graphrag_eval.comparison.model import Comparison
    from graphrag_eval.report.markdown import Redact

__all__ = [
    "STEP_SUMMARY_ENV",
    "SUMMARY_CHARS",
    "annotation",
    "compare_ci_report",
    "escape_data",
    "escape_property",
    "evaluate_ci_report",
    "summary_redactor",
    "write_summary",
]

STEP_SUMMARY_ENV = "GITHUB_STEP_SUMMARY"
SUMMARY_CHARS = 250_000
"""The most a summary writes (up to 4 bytes a character in UTF-8: under GitHub's 1 MiB a
step, with room for the other steps' summaries)."""
_TITLE = "graphrag-eval"


def escape_data(text: str) -> str:
    """A workflow command's message, escaped as GitHub reads it back: ``%``, CR and LF."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A workflow command's property value (``title=...``): also ``:`` and ``,``."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(level: str, message: str, title: str = _TITLE) -> str:
    """One workflow command line: ``::error title=...::message``."""
    return f"::{level} title={escape_property(title)}::{escape_data(message)}"


def summary_redactor(
    configs: Iterable[EvaluationConfig | None], engine_redact: Redact | None = None
) -> Redact:
    """The redaction of every text of a summary or annotation: the secrets of ``configs``
    (values under secret-looking names, the values of the variables their ``..._env`` keys
    name, the credentials written into their URLs), the proxy's credentials, and the judge
    engine's (``engine_redact``)."""
    redactor = Redactor()
    redactor.add(*proxy_credentials())
    for config in configs:
        if config is not None:
            data = config.as_data()
            redactor.add(*secret_values(data))
            for name, value in _leaves(data):
                if name.endswith("_env") and isinstance(value, str):
                    redactor.add(os.environ.get(value))
                elif isinstance(value, str) and "://" in value:
                    redactor.add(*url_credentials(value))

    def redact(text: str) -> str:
        text = redactor.redact(text)
        return engine_redact(text) if engine_redact is not None else text

    return redact


def _leaves(data: Any, name: str = "") -> Iterable[tuple[str, Any]]:
    """Each value of a config's data that is not a mapping or a list, with its key."""
    if isinstance(data, Mapping):
        for key, value in data.items():
            yield from _leaves(value, str(key))
    elif isinstance(data, list):
        for value in data:
            yield from _leaves(value, name)
    else:
        yield name, data


def write_summary(text: str, summary_md: Path | None) -> None:
    """Append ``text`` to ``$GITHUB_STEP_SUMMARY`` when set (a regular file only), and write
    it to ``summary_md`` when given (replaced atomically, a link replaced, never followed); a
    file that cannot be written is a warning on standard error."""
    text = _bounded(text.rstrip("\n")) + "\n\n"
    step_summary = os.environ.get(STEP_SUMMARY_ENV)
    if step_summary:
        _write(Path(step_summary), lambda path: _append(path, text))
    if summary_md is not None:
        _write(summary_md, lambda path: write_text_atomic(path, text))


def _bounded(text: str) -> str:
    """``text`` cut at the last line that fits in :data:`SUMMARY_CHARS` characters, with a
    line saying so (GitHub drops a step's whole summary over 1 MiB)."""
    if len(text) <= SUMMARY_CHARS:
        return text
    cut = text[:SUMMARY_CHARS]
    cut = cut[: cut.rfind("\n")] if "\n" in cut else cut
    return (
        f"{cut}\n\n(summary cut at {SUMMARY_CHARS:,} characters: the whole is in the run's files)"
    )


def _append(path: Path, text: str) -> None:
    """Append to ``path`` when it is a regular file: a symbolic link is not followed, and a
    FIFO or a device is refused without blocking (a FIFO nobody reads would hang the run)."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC
    if path.is_symlink():
        raise OSError(errno.ELOOP, "a symbolic link")
    try:
        fd = os.open(path, flags | getattr(os, "O_NOFOLLOW", 0), 0o666)
    except OSError as exc:
        if exc.errno in (errno.ENXIO, errno.ELOOP):  # a FIFO without a reader; a link
            raise OSError(exc.errno, "not a regular file") from None
        raise
    with os.fdopen(fd, "a", encoding="utf-8", newline="\n") as file:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        file.write(text)


def _write(path: Path, write: Callable[[Path], None]) -> None:
    try:
        write(path)
    except (OSError, ValueError) as exc:  # ValueError: a path with a NUL
        reason = getattr(exc, "strerror", None) or str(exc)
        stderr().print(
            f"warning: cannot write the CI summary to {path}: {reason}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )


def _annotate(lines: Sequence[tuple[str, str]], redact: Redact, stream: TextIO | None) -> None:
    """Print the annotations under GitHub Actions only."""
    if os.environ.get("GITHUB_ACTIONS") != "true":
        return
    out = stream if stream is not None else sys.stdout
    for level, message in lines:
        write_command(out, annotation(level, visible_text(redact(message))))


def _wanted(summary_md: Path | None) -> bool:
    return summary_md is not None or bool(os.environ.get(STEP_SUMMARY_ENV))


def _option(gate: Threshold) -> str:
    return f"--fail-{'over' if gate.upper else 'under'} {gate}"


def evaluate_ci_report(
    outcome: RunOutcome,
    gates: tuple[Sequence[Threshold], Sequence[str], str | None],
    config: EvaluationConfig,
    summary_md: Path | None,
) -> None:
    """``evaluate``'s summary and annotations. ``gates``: the thresholds, the failures and
    the line of an incomplete run (or ``None``)."""
    thresholds, failures, incomplete = gates
    engine = outcome.engine
    redact = summary_redactor([config], engine.redact if engine is not None else None)
    problems = [("error", f"gate failed: {failure}") for failure in failures]
    if incomplete is not None:
        problems.append(("error", incomplete))
    _annotate(problems, redact, None)
    if not _wanted(summary_md):
        return
    with guarded_import():
        from graphrag_eval.report.markdown import GateRow, gates_markdown, run_markdown

    lines = []
    if outcome.tally.failed_values:
        failed = plural(outcome.tally.failed_values, "metric value")
        lines.append(f"{failed} failed (each failed metric has its _error key in the results)")
    if incomplete is not None:
        lines.append(incomplete)
    lines.append(f"Results in {outcome.out_dir}/")
    if outcome.html_report:
        lines.append(f"HTML report: {outcome.out_dir / REPORT_HTML}")
    title = f"graphrag-eval evaluate: {outcome.out_dir}"
    aggregates = outcome.written.aggregates
    parts = [run_markdown(title, aggregates, outcome.layout, lines, redact)]
    micro = aggregates.micro
    rows = [GateRow(_option(gate), tuple(check_thresholds(micro, [gate]))) for gate in thresholds]
    table = gates_markdown(rows, redact)
    if table:
        parts.append(table)
    write_summary("\n\n".join(parts), summary_md)


def compare_ci_report(
    comparison: Comparison,
    gates: tuple[Sequence[Threshold], bool, Sequence[str]],
    configs: Sequence[EvaluationConfig | None],
    page: Path | None,
    summary_md: Path | None,
    annotations_to: TextIO | None = None,
) -> None:
    """``compare``'s summary and annotations. ``gates``: the thresholds, whether
    ``--fail-on-regression`` was given, and the failures; ``page``: the HTML comparison's
    path when one was written; ``annotations_to``: where the annotations go (standard output
    unless the comparison itself is written there)."""
    thresholds, on_regression, failures = gates
    redact = summary_redactor(configs)
    scores = [name for name, change in comparison.overall.items() if change.is_score]
    regressions = check_regressions(comparison, scores)

    def regressed(metric: str) -> list[str]:
        return check_regressions(comparison, [metric])

    failed = set(failures)
    problems = [("error", f"gate failed: {failure}") for failure in failures]
    problems += [("warning", line) for line in regressions if line not in failed]
    _annotate(problems, redact, annotations_to)
    if not _wanted(summary_md):
        return
    with guarded_import():
        from graphrag_eval.comparison.markdown import comparison_markdown
        from graphrag_eval.report.markdown import GateRow, gates_markdown, md_text

    rows = [
        GateRow(
            _option(gate),
            (*check_comparison_thresholds(comparison, [gate]), *regressed(gate.metric)),
        )
        for gate in thresholds
    ]
    if on_regression:
        watched = [name for name, spec in comparison.keys.items() if not spec.lower_is_better]
        rows.append(GateRow("--fail-on-regression", tuple(check_regressions(comparison, watched))))
    parts = [comparison_markdown(comparison, redact)]
    table = gates_markdown(rows, redact)
    if table:
        parts.append(table)
    if page is not None:
        parts.append(f"HTML comparison: {md_text(str(page), redact)}")
    write_summary("\n\n".join(parts), summary_md)
