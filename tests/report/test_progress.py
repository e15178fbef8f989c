"""Progress of evaluate in a log: plain lines every few seconds, timed by an injected clock."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from graphrag_eval.report.progress import (
    ProgressLines,
    _Bar,
    format_duration,
    start_progress,
)


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def lines_of(total: int, clock: Clock, **options: object) -> tuple[ProgressLines, list[str]]:
    written: list[str] = []
    return ProgressLines(total, written.append, clock=clock, **options), written  # type: ignore[arg-type]


def test_a_line_every_interval_with_the_time_left() -> None:
    clock = Clock()
    progress, written = lines_of(1000, clock, interval_s=10.0)
    for _ in range(119):
        clock.now += 0.05
        progress.advance()
    assert written == []  # 5.95 s: not yet
    clock.now = 1035.0
    progress.advance()  # the 120th, 35 s after the start
    assert written == ["scored 120/1,000 questions (12%), 35 s elapsed, ETA 4 min"]
    clock.now = 1040.0
    progress.advance()  # 5 s after the last line
    assert len(written) == 1
    clock.now = 1045.0
    progress.advance()
    assert written[1] == "scored 122/1,000 questions (12%), 45 s elapsed, ETA 5 min"


def test_the_last_line_when_lines_were_written() -> None:
    clock = Clock()
    progress, written = lines_of(3, clock, interval_s=10.0)
    clock.now += 20
    progress.advance()
    progress.advance()
    progress.advance()
    with progress:
        pass  # leaving the context stops the display, once
    progress.stop()
    assert written == [
        "scored 1/3 questions (33%), 20 s elapsed, ETA 40 s",
        "scored 3/3 questions (100%), 20 s elapsed",
    ]


def test_a_short_run_writes_nothing_unless_asked() -> None:
    clock = Clock()
    quiet, written = lines_of(2, clock)
    quiet.advance()
    quiet.advance()
    quiet.stop()
    assert written == []
    forced, written = lines_of(1, clock, final=True)
    forced.advance()
    forced.stop()
    assert written == ["scored 1/1 question (100%), 0 s elapsed"]


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0.2, "0 s"),
        (59, "59 s"),
        (61, "1 min"),
        (256.7, "4 min"),
        (3600, "1 h"),
        (7500, "2 h 5 min"),
    ],
)
def test_durations(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


def test_a_log_gets_lines_without_control_codes_and_a_terminal_gets_the_bar() -> None:
    log = io.StringIO()
    display = start_progress(Console(file=log, width=80), 2, True, forced=True)
    assert isinstance(display, ProgressLines)
    with display:
        display.advance()
        display.advance()
    assert log.getvalue().startswith("scored 2/2 questions (100%), ")
    assert "\x1b" not in log.getvalue()
    terminal = Console(file=io.StringIO(), force_terminal=True, width=80)
    bar = start_progress(terminal, 2, True)
    bar.stop()
    assert isinstance(bar, _Bar)
    off = start_progress(Console(file=io.StringIO()), 2, False)
    assert not isinstance(off, ProgressLines | _Bar)
