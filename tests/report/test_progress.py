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
    for _ in range(39):  # one item every 0.25 s: 4 a second
        clock.now += 0.25
        progress.advance()
    assert written == []  # 9.75 s: not yet
    clock.now += 0.25
    progress.advance()  # the 40th, 10 s after the start
    assert written == ["scored 40/1,000 questions (4%), 10 s elapsed, ETA 4 min"]
    for _ in range(19):
        clock.now += 0.25
        progress.advance()
    assert len(written) == 1  # 4.75 s after the last line
    for _ in range(21):
        clock.now += 0.25
        progress.advance()
    assert written[1] == "scored 80/1,000 questions (8%), 20 s elapsed, ETA 4 min"


def test_no_time_left_until_it_means_something_then_from_the_recent_rate() -> None:
    """A local model loads for 10 s, then items finish 10 a second: the first line has no
    ETA (one item says nothing of the rate), later ones the time left at the recent rate,
    never the whole run's average, which the loading would inflate."""
    clock = Clock()
    progress, written = lines_of(200, clock, interval_s=10.0)
    clock.now += 10.0
    progress.advance()
    assert written == ["scored 1/200 questions (0%), 10 s elapsed"]
    for _ in range(100):
        clock.now += 0.1
        progress.advance()
    assert written[1] == "scored 101/200 questions (50%), 20 s elapsed, ETA 10 s"


def test_no_time_left_from_items_that_finished_all_at_once() -> None:
    clock = Clock()
    progress, written = lines_of(100, clock, interval_s=10.0)
    clock.now += 12.0
    for _ in range(10):  # one concurrent wave: no rate to speak of yet
        progress.advance()
    assert written == ["scored 1/100 questions (1%), 12 s elapsed"]
    assert progress.line(clock.now) == "scored 10/100 questions (10%), 12 s elapsed"


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
        "scored 1/3 questions (33%), 20 s elapsed",
        "scored 3/3 questions (100%), 20 s elapsed",
    ]


def test_the_bar_shows_the_time_left_once_it_means_something() -> None:
    clock = Clock()
    terminal = Console(file=io.StringIO(), force_terminal=True, width=100)
    bar = _Bar(terminal, 100, clock)
    try:
        column = bar._progress.columns[-1]
        task = bar._progress.tasks[0]
        for _ in range(4):
            clock.now += 0.5
            bar.advance()
        assert str(column.render(task)) == "eta -"
        for _ in range(6):
            clock.now += 0.5
            bar.advance()
        assert str(column.render(task)) == "eta 45 s"  # 2 a second, 90 left
    finally:
        bar.stop()


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
