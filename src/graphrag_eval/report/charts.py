"""Charts for the HTML report, drawn with pygal as inline SVG (no scripts, no fonts to load).

pygal escapes every label and title it writes into the SVG, so user text (template ids) is
safe in them. Its tooltip script is switched off: the report must open offline and run no
code, and the numbers the tooltips would show are in the tables beside the charts.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from itertools import repeat
from operator import sub, truediv
from typing import Any

import pygal
from markupsafe import Markup
from pygal.style import Style

from graphrag_eval.formatting import plural, visible_text

# pygal appends an import hook to sys.meta_path for its map plugins (pygal.maps.*). The hook
# has no find_spec, so every later import that reaches it raises an ImportWarning. Charts
# need no plugin: take the hook out again.
sys.meta_path[:] = [
    finder for finder in sys.meta_path if type(finder).__name__ != "PluginImportFixer"
]

__all__ = ["difference_chart", "histogram"]

_STYLE = Style(
    background="white",
    plot_background="white",
    foreground="#222",
    foreground_strong="#111",
    foreground_subtle="#666",
    font_family="system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif",
    colors=("#3b6fb6", "#c0392b", "#27ae60", "#8e44ad"),
    title_font_size=15,
    label_font_size=11,
    major_label_font_size=11,
    value_font_size=10,
)
_BINS = 10
_MAX_LABEL = 40


def _without_scripts(root: Any) -> Any:
    """Drop the inline script pygal always writes (its tooltip settings): the report runs no
    code, and its Content-Security-Policy would block the script anyway."""
    for parent in list(root.iter()):
        for child in list(parent):
            if str(child.tag).rsplit("}", 1)[-1] == "script":
                parent.remove(child)
    return root


def _render(chart: pygal.graph.graph.Graph) -> Markup:
    chart.add_xml_filter(_without_scripts)
    svg = chart.render(is_unicode=True)
    # pygal escaped the text it put in the SVG; mark it safe so it is not escaped twice.
    # Labels are user text (metric names): their control characters are shown escaped.
    return Markup(visible_text(svg))


def _config(**settings: object) -> dict[str, object]:
    base: dict[str, object] = {
        "style": _STYLE,
        "js": [],
        "disable_xml_declaration": True,
        "show_legend": False,
        "width": 520,
        "height": 300,
        "margin": 12,
        "truncate_label": _MAX_LABEL,
    }
    base.update(settings)
    return base


def histogram(name: str, values: Sequence[float], maximum: float | None) -> Markup:
    """The distribution of one metric's values over the questions, in 10 bins."""
    low = 0.0 if maximum is not None else min(values)
    high = float(maximum) if maximum is not None else max(values)
    width = (high - low) / _BINS if high > low else 1.0
    counts = [0] * _BINS
    binned: Iterable[tuple[int, int]] = [(0, len(values))]
    if high > low:  # each value's bin, int((value - low) / width), by C loops, then counted
        bins = map(int, map(truediv, map(sub, values, repeat(low)), repeat(width)))
        binned = Counter(bins).items()
    for index, count in binned:
        counts[min(max(index, 0), _BINS - 1)] += count
    digits = 0 if width >= 1 else (1 if width >= 0.1 else 2)
    labels = [
        f"{low + width * i:.{digits}f}\u2013{low + width * (i + 1):.{digits}f}"
        for i in range(_BINS)
    ]
    chart = pygal.Bar(
        **_config(
            title=name,
            x_title=f"{plural(len(values), 'question')}, by value",
            spacing=2,
            y_labels=_count_labels(max(counts)),
            value_formatter=lambda count: f"{count:,.0f}",
        )
    )
    chart.x_labels = labels
    chart.add(name, counts)
    return _render(chart)


def _count_labels(top: int) -> list[int]:
    """Whole numbers from 0 to at least ``top``, about five of them."""
    step = 1
    while top / step > 5:
        step = step * 5 // 2 if str(step).startswith("2") else step * 2
    return list(range(0, top + step, step)) if top else [0, 1]


def _span(values: Sequence[float]) -> tuple[float, float]:
    """An axis range that shows 0 and every value, whiskers included, with a margin."""
    low, high = min(0.0, *values), max(0.0, *values)
    margin = (high - low) * 0.05 or 1.0
    return low - margin, high + margin


def difference_chart(rows: Sequence[tuple[str, float, float, float]]) -> Markup:
    """Differences (B - A) with their confidence intervals, in points of each metric's scale
    (percent of its best value), one bar per metric: ``(metric, difference, low, high)``."""
    chart = pygal.HorizontalBar(
        **_config(
            title="Difference B - A, % of the metric's scale, with confidence interval",
            height=max(160, 60 + 26 * len(rows)),
            width=720,
            value_formatter=lambda value: f"{value:+.3g}",
            range=_span([value for _, *values in rows for value in values]),
        )
    )
    chart.x_labels = [metric for metric, *_ in rows]
    chart.add(
        "difference",
        [
            {
                "value": difference,
                "ci": {"low": low, "high": high},
                "color": "#27ae60" if low > 0 else ("#c0392b" if high < 0 else "#7f8c8d"),
            }
            for _, difference, low, high in rows
        ],
    )
    return _render(chart)
