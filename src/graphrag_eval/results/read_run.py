"""Saved runs: the output directory of ``graphrag-eval evaluate``, read back for reports and
comparisons (docs/report.md).

A run is named by its directory (which holds ``results.jsonl`` and ``run.yaml``) or by a
results file (JSONL, JSON or YAML); ``run.yaml`` beside the file is read when it is there.
The aggregates are computed again from the results, with the aggregation settings the run
used (from ``run.yaml``) unless a config is given.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graphrag_eval.config import ConfigSource, EvaluationConfig, load_config
from graphrag_eval.errors import ConfigError, InputError
from graphrag_eval.files.documents import read_document
from graphrag_eval.results.aggregation import aggregate, load_results
from graphrag_eval.results.from_records import layout_for, read_records, records_layout
from graphrag_eval.results.model import ResultLayout, RunResult
from graphrag_eval.results.write_run import RESULT_FILE_NAMES, RUN_YAML

__all__ = ["RESULT_FILE_NAMES", "RUN_YAML", "SavedRun", "find_results", "load_run", "run_config"]


@dataclass(slots=True)
class SavedRun:
    """One evaluation run read from disk."""

    label: str
    """How the run is called in reports: its directory or file as given."""
    results_path: Path
    results: Sequence[dict[str, Any]]
    aggregates: dict[str, Any]
    config: EvaluationConfig
    info: dict[str, Any] = field(default_factory=dict)
    """The run's ``run.yaml`` (settings, counts, judge costs), or empty when there is none."""
    problems: list[InputError] = field(default_factory=list)
    """Records of the results file that could not be read and were skipped."""
    _typed: RunResult | None = field(default=None, repr=False, compare=False)
    _layout: ResultLayout | None = field(default=None, repr=False, compare=False)

    def typed(self) -> RunResult:
        """The results as typed results, read with the metrics of the run's config (read
        once, on first use)."""
        if self._typed is None:
            self._typed = read_records(self.results, self.layout())
        return self._typed

    def has_typed(self) -> bool:
        """Whether the typed results were read already (by :func:`load_run`, or a call of
        :meth:`typed`)."""
        return self._typed is not None

    def layout(self) -> ResultLayout:
        """How the results' keys are read: the metrics of the run's config, and a metric of
        its own for each numeric key none of them declares (worked out once)."""
        if self._layout is None:
            if self._typed is not None:
                self._layout = self._typed.layout
            else:
                self._layout = records_layout(self.results, layout_for(self.config))
        return self._layout


def load_run(path: str | Path, config: ConfigSource = None) -> SavedRun:
    """Read a run from its output directory or its results file.

    Raises :class:`InputError` when there are no results to read.
    """
    path = Path(path)
    results_path = find_results(path)
    info = _read_info(results_path.parent / RUN_YAML)
    settings = run_config(results_path, config, info)
    problems: list[InputError] = []
    results = load_results(results_path, problems)
    if not results:
        reason = f" ({problems[0]})" if problems else ""
        raise InputError(f"no results to read{reason}", file=str(results_path))
    typed = read_records(results, layout_for(settings))
    return SavedRun(
        label=str(path),
        results_path=results_path,
        results=results,
        aggregates=aggregate(typed, settings).to_dict(),
        config=settings,
        info=info,
        problems=problems,
        _typed=typed,
    )


def find_results(path: str | Path) -> Path:
    """The results file of a run named by its output directory or by the file itself.

    Raises :class:`InputError` when there is none.
    """
    path = Path(path)
    if path.is_dir():
        found = [path / name for name in RESULT_FILE_NAMES if (path / name).is_file()]
        if not found:
            raise InputError(
                f"no {' or '.join(RESULT_FILE_NAMES[:2])} in this directory (is it the output "
                "directory of graphrag-eval evaluate?)",
                file=str(path),
            )
        return found[0]
    if not path.exists():
        raise InputError("no such file or directory", file=str(path))
    return path


def run_config(
    results_path: Path, config: ConfigSource = None, info: Mapping[str, Any] | None = None
) -> EvaluationConfig:
    """The settings to aggregate a run's results with: ``config`` when given, else the
    aggregation settings the run used (from its ``run.yaml``, beside the results file), else
    the defaults."""
    if config is not None:
        return load_config(config)
    if info is None:
        info = _read_info(results_path.parent / RUN_YAML)
    return _run_config(info, results_path.parent)


def _read_info(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        data = read_document(path)
    except (OSError, ValueError):
        return {}  # a damaged run.yaml costs the settings section, not the report
    return dict(data) if isinstance(data, Mapping) else {}


def _run_config(info: Mapping[str, Any], directory: Path) -> EvaluationConfig:
    """The aggregation settings the run used; the rest of its config is not needed here."""
    saved = info.get("config")
    if not isinstance(saved, Mapping) or not isinstance(saved.get("aggregation"), Mapping):
        return EvaluationConfig()
    try:
        return load_config({"aggregation": saved["aggregation"]})
    except ConfigError as exc:
        raise ConfigError(
            f"the aggregation settings saved in the run cannot be used ({exc}); pass -c CONFIG",
            file=str(directory / RUN_YAML),
        ) from None
