"""Progress of ``graphrag-eval evaluate`` on standard error.

On a terminal it is a bar that redraws itself (rich), with the time left. Anywhere else (a CI
log, a file) a redrawn bar would fill the log with control codes, so it is a plain line every
few seconds instead, e.g. ``scored 120/1,000 questions (12%), 35 s elapsed, ETA 4 min``
(README.md, "Use from the command line").

The time left (:class:`TimeLeft`) comes from the recent rate, the items finished in the last
:data:`ETA_WINDOW_S` seconds, so the start of a run (loading a local model, a cold cache)
does not skew it; and it is shown only once it means something: after :data:`ETA_MIN_ITEMS`
items, finished over at least :data:`ETA_MIN_SPAN_S` seconds.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from types import TracebackType

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text

from graphrag_eval.formatting import plural

__all__ = [
    "ETA_MIN_ITEMS",
    "ETA_MIN_SPAN_S",
    "ETA_WINDOW_S",
    "LINE_INTERVAL_S",
    "ProgressDisplay",
    "ProgressLines",
    "TimeLeft",
    "format_duration",
    "start_progress",
]

LINE_INTERVAL_S = 10.0
"""Seconds between two progress lines in a log."""
ETA_MIN_ITEMS = 5
"""Items finished before any time left is shown."""
ETA_MIN_SPAN_S = 3.0
"""Seconds over which the items the rate is measured on must have finished."""
ETA_WINDOW_S = 30.0
"""The rate is that of the items finished in the last this many seconds (at least the last
:data:`_WINDOW_MIN_ITEMS`, however long ago)."""
_WINDOW_MIN_ITEMS = 20
_WINDOW_MAX_ITEMS = 10_000  # bounds the memory of a very fast run


class TimeLeft:
    """The time left of a run of ``total`` items, from the rate at which they finish lately
    (see the module's docstring)."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.done = 0
        self._finished: deque[float] = deque(maxlen=_WINDOW_MAX_ITEMS)
        """When the items of the window finished."""

    def record(self, now: float) -> None:
        """One more item finished at ``now``."""
        self.done += 1
        finished = self._finished
        finished.append(now)
        while len(finished) > _WINDOW_MIN_ITEMS and now - finished[0] > ETA_WINDOW_S:
            finished.popleft()

    def seconds(self, now: float) -> float | None:
        """The seconds left at ``now``, or ``None`` while no estimate means anything yet (or
        the run is over)."""
        if self.done < ETA_MIN_ITEMS or self.done >= self.total or len(self._finished) < 2:
            return None
        # Items finished after the window's first, over the time since it: a stall since the
        # last item (a slow judge) lowers the rate as it lasts.
        span = now - self._finished[0]
        if span < ETA_MIN_SPAN_S:
            return None
        rate = (len(self._finished) - 1) / span
        return (self.total - self.done) / rate


def format_duration(seconds: float) -> str:
    """A duration as people read it in a log: ``35 s``, ``4 min``, ``2 h 5 min``."""
    seconds = max(0.0, seconds)
    if seconds < 59.5:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if minutes else f"{hours} h"


class ProgressDisplay:
    """Shows how many of ``total`` items are done; a context manager that stops it."""

    def advance(self) -> None:
        """One more item is done."""

    def stop(self) -> None:
        """The run is over (or interrupted): finish the display."""

    def __enter__(self) -> ProgressDisplay:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


class _TimeLeftColumn(ProgressColumn):
    """The bar's time left, from :class:`TimeLeft` (rich's own shows one after two items)."""

    def __init__(self, time_left: TimeLeft, clock: Callable[[], float]) -> None:
        super().__init__()
        self._time_left = time_left
        self._clock = clock

    def render(self, task: Task) -> Text:
        seconds = self._time_left.seconds(self._clock())
        text = "-" if seconds is None else format_duration(seconds)
        return Text(f"eta {text}", style="progress.remaining")


class _Bar(ProgressDisplay):
    """rich's bar, for a terminal; it disappears when the run is over."""

    def __init__(
        self, console: Console, total: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._time_left = TimeLeft(total)
        self._clock = clock
        self._progress = Progress(
            TextColumn("evaluating"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            _TimeLeftColumn(self._time_left, clock),
            console=console,
            transient=True,
        )
        self._task = self._progress.add_task("evaluating", total=total)
        self._progress.start()

    def advance(self) -> None:
        self._time_left.record(self._clock())
        self._progress.advance(self._task)

    def stop(self) -> None:
        self._progress.stop()


class ProgressLines(ProgressDisplay):
    """Plain progress lines for a log: one when ``interval_s`` seconds have passed since the
    last, and a last one when the run is over if any was written (or ``final`` is set).

    ``write`` takes each line (without its newline); ``clock`` gives the time in seconds (a
    monotonic clock; tests pass their own).
    """

    def __init__(
        self,
        total: int,
        write: Callable[[str], None],
        *,
        interval_s: float = LINE_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
        final: bool = False,
    ) -> None:
        self.total = total
        self._time_left = TimeLeft(total)
        self._write = write
        self._interval_s = interval_s
        self._clock = clock
        self._final = final
        self._started = self._last = clock()
        self._written_at: int | None = None  # ``done`` at the last line written
        self._stopped = False

    @property
    def done(self) -> int:
        """The items finished so far."""
        return self._time_left.done

    def line(self, now: float) -> str:
        """The progress line at time ``now``."""
        elapsed = now - self._started
        percent = 100 * self.done // self.total if self.total else 100
        text = (
            f"scored {self.done:,}/{plural(self.total, 'question')} ({percent}%), "
            f"{format_duration(elapsed)} elapsed"
        )
        left = self._time_left.seconds(now)
        if left is not None:
            text += f", ETA {format_duration(left)}"
        return text

    def advance(self) -> None:
        now = self._clock()
        self._time_left.record(now)
        if now - self._last >= self._interval_s:
            self._emit(now)

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        if (self._final or self._written_at is not None) and self._written_at != self.done:
            self._emit(self._clock())

    def _emit(self, now: float) -> None:
        self._write(self.line(now))
        self._last = now
        self._written_at = self.done


def start_progress(
    console: Console, total: int, show: bool, *, forced: bool = False
) -> ProgressDisplay:
    """The progress display of a run of ``total`` items on ``console`` (standard error): a
    bar on a terminal, plain lines elsewhere, nothing unless ``show``. ``forced`` (the user
    asked for progress) writes a last line even when the run was too short for any other."""
    if not show:
        return ProgressDisplay()
    if console.is_terminal:
        return _Bar(console, total)

    def write(line: str) -> None:
        console.print(line, markup=False, highlight=False, soft_wrap=True)

    return ProgressLines(total, write, final=forced)
