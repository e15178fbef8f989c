"""The HTML report and the comparison page in a real headless Chromium: they load nothing,
run nothing (not even what a question, answer, template id or judge reason plants), show the
planted markup as text, and render their sections, tables and charts.

The runs come from the real command line (``graphrag-eval evaluate`` and ``compare``) with
the local OpenAI-compatible judge server, whose reasons carry the planted markup too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest
import yaml
from PIL import Image

from graphrag_eval.cli import main

from builders import sparql, sparql_ref, step
from judge_server import JudgeServer, default_judge

if TYPE_CHECKING:
    from playwright.sync_api import Page

    from conftest import OpenedPage, OpenPage

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

SCRIPT = "<script>window.__pwned=1</script>"
IMAGE = '<img src=x onerror="window.__pwned=1">'
PLANTED = SCRIPT + IMAGE
EVIL_TEMPLATE = "evil_" + PLANTED

REPORT_SECTIONS = {
    "overview": "Overview",
    "metrics": "Metrics",
    "charts": "Charts",
    "templates": "Per template",
    "steps": "Steps",
    "judge": "Judge cost",
    "worst": "Worst questions",
    "settings": "Settings",
}
CHART_BLUE = (0x3B, 0x6F, 0xB6)  # the bars of the report's histograms
BETTER_GREEN = (0x27, 0xAE, 0x60)  # a significantly better difference in the comparison


def planted_judge(body: dict[str, Any]) -> str | None:
    """The default judge, except that its answer-correctness reason is the planted markup."""
    reply = default_judge(body)
    if reply.count("\t") == 3:  # claim counts and a reason, tab-separated
        return reply.rsplit("\t", 1)[0] + "\t" + PLANTED
    return reply


def planted_reference() -> list[dict[str, Any]]:
    """Eight questions (enough pairs for a comparison verdict) in three templates; the first
    question's text and the last template's id carry the planted markup."""
    texts = {
        "q1": "Which transformers are in OSLO? " + PLANTED,
        "q2": "Which lines leave BERGEN?",
        "q3": "Which breakers are in TROMSO?",
        "q4": "Which substations are in region NORTH?",
        "q5": "Which generators feed HAMAR?",
        "q6": "Which busbars are in MOLDE?",
        "q7": "Which loads are in BODO?",
        "q8": "Which switches are in ALTA?",
    }
    templates = {"transformers": ["q1", "q2", "q3"], "lines": ["q4", "q5"]}
    templates[EVIL_TEMPLATE] = ["q6", "q7", "q8"]
    return [
        {
            "template_id": template_id,
            "questions": [
                {
                    "id": qid,
                    "question_text": texts[qid],
                    "reference_answer": f"{qid.upper()} one, {qid.upper()} two",
                    "reference_steps": [
                        [sparql_ref(sparql(["a", "city"], [[qid, "OSLO"], ["shared", "X"]]))]
                    ],
                }
                for qid in ids
            ],
        }
        for template_id, ids in templates.items()
    ]


def planted_responses(correct: set[str]) -> list[dict[str, Any]]:
    """Responses to the eight questions: right steps for ``correct``, wrong ones otherwise;
    q1's answer, q3's step error and q8's error carry the planted markup."""
    responses: list[dict[str, Any]] = []
    for number in range(1, 9):
        qid = f"q{number}"
        first = qid if qid in correct else "wrong " + PLANTED
        output = sparql(["a", "city"], [[first, "OSLO"], ["shared", "X"]])
        responses.append(
            {
                "question_id": qid,
                "actual_answer": f"{qid.upper()} one",
                "actual_steps": [step("sparql_query", output, "s1")],
            }
        )
    responses[0]["actual_answer"] = "Q1 one " + PLANTED
    responses[2]["actual_steps"].append(
        step("sparql_query", None, "s2", status="error", error="boom " + PLANTED)
    )
    responses[7] = {"question_id": "q8", "status": "error", "error": "crashed " + PLANTED}
    return responses


@dataclass(frozen=True)
class PlantedRuns:
    run_a: Path
    run_b: Path
    comparison: Path


def cli(*args: str | Path) -> None:
    """Run the command line to success. In a thread of its own: the session's playwright
    keeps an event loop running in this one, where the command's ``asyncio.run`` refuses to
    start."""
    with ThreadPoolExecutor(max_workers=1) as worker:
        code = worker.submit(main, [str(arg) for arg in args]).result()
    assert code == 0, f"graphrag-eval {' '.join(map(str, args))} exited {code}"


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PlantedRuns]:
    """Run A (three questions right), run B (all seven answered right) and their comparison
    page, made by the command line with the planted-markup judge."""
    folder = tmp_path_factory.mktemp("planted")
    reference = folder / "reference.yaml"
    reference.write_text(yaml.safe_dump(planted_reference()), encoding="utf-8")
    with pytest.MonkeyPatch.context() as env, JudgeServer(responder=planted_judge) as server:
        env.delenv("OPENAI_API_KEY", raising=False)
        env.delenv("GRAPHRAG_EVAL_CACHE", raising=False)
        env.setenv("XDG_CACHE_HOME", str(folder / "xdg-cache"))
        config = folder / "config.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "metrics": ["steps_score", "answer_correctness"],
                    "llm": {
                        "generation": {
                            "provider": "openai-compatible",
                            "base_url": server.url,
                            "model": "gpt-4o-mini",
                        },
                        "cache": {"path": str(folder / "judge-cache.sqlite3")},
                    },
                }
            ),
            encoding="utf-8",
        )
        runs = []
        for name, correct in (("run-a", {"q2", "q4", "q6"}), ("run-b", set(planted_ids()))):
            responses = folder / f"{name}.jsonl"
            responses.write_text(
                "".join(json.dumps(item) + "\n" for item in planted_responses(correct)),
                encoding="utf-8",
            )
            cli("evaluate", reference, responses, "-c", config, "-o", folder / name, "-q")
            runs.append(folder / name)
    comparison = folder / "comparison.html"
    cli("compare", *runs, "--html", comparison)
    yield PlantedRuns(runs[0], runs[1], comparison)


def planted_ids() -> list[str]:
    return [f"q{number}" for number in range(1, 9)]


def assert_inert(opened: OpenedPage) -> None:
    """Nothing loaded but the file, nothing ran, nothing complained."""
    page = opened.page
    assert opened.requests == [opened.url]
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.locator("script").count() == 0
    assert page.locator("img").count() == 0
    assert opened.console_errors == []
    assert opened.page_errors == []


def open_all_details(page: Page) -> None:
    count = page.evaluate(
        "() => { const closed = [...document.querySelectorAll('details:not([open])')];"
        " closed.forEach(details => { details.open = true; }); return closed.length; }"
    )
    assert count > 0


def assert_shows_planted_text(page: Page) -> None:
    text = page.locator("body").inner_text()
    assert SCRIPT in text
    assert IMAGE in text


def chart_box(page: Page, selector: str) -> tuple[int, int, int, int]:
    """The first ``selector`` element's box in full-page coordinates (left, top, right,
    bottom)."""
    box = page.locator(selector).first.evaluate(
        "element => { const r = element.getBoundingClientRect();"
        " return [r.left + window.scrollX, r.top + window.scrollY,"
        " r.right + window.scrollX, r.bottom + window.scrollY]; }"
    )
    left, top, right, bottom = (round(value) for value in box)
    return left, top, right, bottom


def colour_share(pixels: np.ndarray, colour: tuple[int, int, int]) -> float:
    """The share of ``pixels`` that are ``colour`` drawn with an opacity of 0.5 to 1 on white
    (pygal draws bars slightly transparent), within a few levels for antialiasing."""
    rgb = pixels[..., :3].astype(float)
    close = np.zeros(rgb.shape[:2], dtype=bool)
    for alpha in np.arange(0.5, 1.0001, 0.05):
        blended = alpha * np.array(colour, dtype=float) + (1 - alpha) * 255
        close |= np.all(np.abs(rgb - blended) <= 6, axis=-1)
    return float(close.mean())


def check_screenshot(
    page: Page,
    path: Path,
    chart_selector: str,
    bar_colour: tuple[int, int, int],
    min_height: int,
) -> None:
    """A full-page screenshot that shows the page, not a blank or broken one."""
    box = chart_box(page, chart_selector)
    page.screenshot(path=str(path), full_page=True)
    with Image.open(path) as image:
        pixels = np.asarray(image.convert("RGB"))
    height, width = pixels.shape[:2]
    assert width >= 1200
    assert height > min_height
    packed = pixels.astype(np.uint32) @ np.array([1 << 16, 1 << 8, 1], dtype=np.uint32)
    colours = len(np.unique(packed))
    assert colours > 200, f"{colours} colours: a blank or unstyled page"
    not_white = np.any(pixels < 250, axis=-1).mean()
    assert not_white > 0.03, f"only {not_white:.1%} of the page is not white"
    left, top, right, bottom = box
    assert right - left > 200 and bottom - top > 100
    chart = pixels[top:bottom, left:right]
    assert colour_share(chart, bar_colour) > 0.005, "no bars of the chart colour in the chart"


# The report of a run --------------------------------------------------------------------


def test_report_loads_nothing_and_runs_no_planted_code(
    planted: PlantedRuns, open_page: OpenPage
) -> None:
    opened = open_page(planted.run_a / "report.html")
    assert_inert(opened)
    # The planted markup runs nowhere, not even in the parts shown later.
    open_all_details(opened.page)
    assert opened.page.evaluate("typeof window.__pwned") == "undefined"
    assert opened.page.locator("script, img").count() == 0
    assert opened.requests == [opened.url]


def test_report_shows_planted_markup_as_text(planted: PlantedRuns, open_page: OpenPage) -> None:
    page = open_page(planted.run_a / "report.html").page
    assert_shows_planted_text(page)
    # In each place it was planted: the template id, the question, the answer, the reason.
    assert page.locator("summary", has_text=EVIL_TEMPLATE).count() >= 1
    assert page.locator("summary", has_text="Which transformers are in OSLO? " + PLANTED).count()
    assert page.locator("div.text", has_text="Q1 one " + PLANTED).count() >= 1
    reasons = page.locator("dt", has_text="answer_correctness_reason")
    assert reasons.count() >= 1
    assert page.locator("div.text", has_text=PLANTED).count() >= 3


def test_report_has_every_section(planted: PlantedRuns, open_page: OpenPage) -> None:
    page = open_page(planted.run_a / "report.html").page
    for anchor, heading in REPORT_SECTIONS.items():
        section = page.locator(f"h2#{anchor}")
        assert section.is_visible(), anchor
        assert section.inner_text().startswith(heading)
        assert page.locator(f'nav a[href="#{anchor}"]').count() == 1


def test_report_charts_are_inline_svg_with_bars(planted: PlantedRuns, open_page: OpenPage) -> None:
    page = open_page(planted.run_a / "report.html").page
    charts = page.locator(".charts svg")
    assert charts.count() >= 1
    assert charts.first.is_visible()
    bars = page.evaluate(
        "[...document.querySelectorAll('.charts svg rect.rect')]"
        ".filter(rect => rect.getBoundingClientRect().height > 1).length"
    )
    assert bars >= 2  # steps_score: some questions at 0, some at 1


def test_report_lists_the_templates(planted: PlantedRuns, open_page: OpenPage) -> None:
    page = open_page(planted.run_a / "report.html").page
    expected = {"transformers", "lines", EVIL_TEMPLATE}
    means = page.locator("table.bars tbody tr td:first-child").all_inner_texts()
    assert set(means) == expected
    summaries = page.locator("#templates ~ details > summary").all_inner_texts()
    for template_id in expected:
        assert any(summary.startswith(template_id) for summary in summaries), template_id


def test_worst_question_opens_to_question_reference_and_answer(
    planted: PlantedRuns, open_page: OpenPage
) -> None:
    page = open_page(planted.run_a / "report.html").page
    item = page.locator("details", has=page.locator("summary", has_text="Which lines leave"))
    assert item.count() == 1
    assert item.get_attribute("open") is None
    answer = item.locator("div.text", has_text=re.compile(r"^Q2 one$"))
    assert not answer.is_visible()
    item.locator("summary").click()
    assert item.get_attribute("open") is not None
    fields = item.locator("dl.item").inner_text()
    assert "Which lines leave BERGEN?" in fields
    assert "Q2 one, Q2 two" in fields  # the reference answer
    assert answer.is_visible()
    assert item.locator("dt", has_text="reference answer").is_visible()
    assert item.locator("dt", has_text="actual answer").is_visible()


def test_report_screenshot_shows_the_page(
    planted: PlantedRuns, open_page: OpenPage, tmp_path: Path
) -> None:
    page = open_page(planted.run_a / "report.html").page
    check_screenshot(page, tmp_path / "report.png", ".charts svg", CHART_BLUE, min_height=1000)


# Steps that did not match ---------------------------------------------------------------


def test_worst_question_shows_why_its_step_did_not_match(
    planted: PlantedRuns, open_page: OpenPage
) -> None:
    page = open_page(planted.run_a / "report.html").page
    item = page.locator("details", has=page.locator("summary", has_text="Which lines leave"))
    assert item.count() == 0 or item.locator(".mismatch").count() == 0  # q2 matched
    wrong = page.locator("details", has=page.locator("summary", has_text="TROMSO"))
    wrong.locator("summary").click()
    mismatch = wrong.locator(".mismatch")
    assert mismatch.count() == 1
    assert "reference step 1.1 (sparql_query) · nearest actual step s1" in mismatch.inner_text()
    assert mismatch.locator(".reason").inner_text() == (
        "required column 'a' has no matching actual column (closest: 'a', 1 of 2 values differ)"
    )


def test_question_page_shows_the_sparql_side_by_side(
    planted: PlantedRuns, open_page: OpenPage, tmp_path: Path
) -> None:
    page_path = tmp_path / "q1.html"
    cli("report", planted.run_a, "--question", "q1", "-o", page_path)
    opened = open_page(page_path)
    assert_inert(opened)
    page = opened.page
    assert page.locator("h1").inner_text() == "Question q1"
    assert page.locator("details[open]").count() == 1
    table = page.locator(".mismatch table.side-by-side")
    assert table.is_visible()
    heads = table.locator("thead tr").nth(1).locator("th").all_inner_texts()
    assert heads == ["a", "city", "", "a", "city"]
    first, second = table.locator("tbody tr").all()
    # Row 1, the one that differs, first: the reference row (q1, OSLO) is missing and faces
    # the extra actual row that shares OSLO, the changed cell outlined; then the row in both.
    assert first.locator("td.missing.differs").inner_text() == "'q1'"
    assert first.locator("td.extra.differs").inner_text() == "'wrong " + PLANTED + "'"
    assert first.locator("td.missing:not(.differs)").inner_text() == "'OSLO'"
    assert first.locator(".mark").all_inner_texts() == ["missing", "extra"]
    assert second.locator("td.missing, td.extra, td.differs, .mark").count() == 0
    assert second.locator("td").all_inner_texts() == ["'shared'", "'X'", "", "'shared'", "'X'"]
    missing = first.locator("td.missing").first
    colour = missing.evaluate("cell => getComputedStyle(cell).backgroundColor")
    assert colour == "rgb(251, 227, 224)"
    assert_shows_planted_text(page)


def test_report_question_unknown_is_one_line_exit_2(
    planted: PlantedRuns, capsys: pytest.CaptureFixture[str]
) -> None:
    with ThreadPoolExecutor(max_workers=1) as worker:
        code = worker.submit(main, ["report", str(planted.run_a), "--question", "nope"]).result()
    assert code == 2
    err = capsys.readouterr().err
    assert "no question 'nope' in this run" in err and err.count("\n") == 1


# The comparison page --------------------------------------------------------------------


def test_comparison_page_loads_nothing_and_runs_no_planted_code(
    planted: PlantedRuns, open_page: OpenPage
) -> None:
    opened = open_page(planted.comparison)
    assert_inert(opened)
    open_all_details(opened.page)
    assert opened.page.evaluate("typeof window.__pwned") == "undefined"
    assert opened.requests == [opened.url]
    assert_shows_planted_text(opened.page)
    assert opened.page.locator("summary", has_text=EVIL_TEMPLATE).count() == 1
    assert opened.page.locator("td", has_text="Which transformers are in OSLO? " + PLANTED).count()


def test_comparison_page_has_verdicts(planted: PlantedRuns, open_page: OpenPage) -> None:
    page = open_page(planted.comparison).page
    overall = page.locator("h2#overall ~ div.scroll table").first
    rows = overall.locator("tbody tr")
    steps = rows.filter(has=page.locator("td:first-child", has_text="steps_score"))
    assert steps.count() == 1
    verdict = steps.locator("td.better")
    assert verdict.inner_text() == "better"
    verdicts = overall.locator("tbody td.nowrap").all_inner_texts()
    assert verdicts and set(verdicts) <= {
        "better",
        "worse",
        "unchanged",
        "too few pairs",
        "no pairs",
    }
    assert page.locator(".card .value.better").inner_text() == str(
        sum(1 for text in verdicts if text == "better")
    )
    assert page.locator(".charts svg").count() == 1


def test_comparison_screenshot_shows_the_page(
    planted: PlantedRuns, open_page: OpenPage, tmp_path: Path
) -> None:
    page = open_page(planted.comparison).page
    check_screenshot(page, tmp_path / "comparison.png", ".charts svg", BETTER_GREEN, min_height=600)


def costly_result(index: int, candidate: bool) -> dict[str, Any]:
    """A question of a run whose judge costs are written to the ten-millionth of a dollar and
    whose metric names, template ids and question texts are long (a custom evaluation's, the
    example data's)."""
    value = 0.8 + (index % 5) * 0.02 - (0.3 if candidate else 0.0)
    cost = 0.0000573 + (index % 3) * 1e-6 - (1.5e-7 if candidate else 0.0)
    return {
        "template_id": "list_all_substations_that_are_connected_via_an_ac_line_or_a_dc_line"
        f"_to_substation_named_SUBSTATION_{index % 2}",
        "question_id": f"{index:032x}",  # as long as the example data's hexadecimal ids
        "question_text": "List all substations that are connected via an AC line or a DC line "
        f"to substation number {index}, with their names and the names of the lines",
        "status": "success",
        "answer_f1": value,
        "conciseness_of_the_answer_to_the_question_score": value,
        "answer_correctness_cost": cost,
        "answer_relevance_cost": cost * 3,
        "input_tokens": 1_200_000 + index * 37 + (1000 if candidate else 0),
        "total_tokens": 1_200_260 + index * 37,
        "elapsed_sec": 106.5 + index * 0.1,
    }


def test_comparison_tables_fit_a_1280_px_window(open_page: OpenPage, tmp_path: Path) -> None:
    """No table of the comparison is wider than the page at 1280 px (the window the report is
    designed for): nothing to scroll sideways to read a verdict."""
    runs = []
    for name, candidate in (("baseline", False), ("candidate", True)):
        path = tmp_path / f"{name}.jsonl"
        path.write_text(
            "".join(json.dumps(costly_result(index, candidate)) + "\n" for index in range(20)),
            encoding="utf-8",
        )
        runs.append(path)
    comparison = tmp_path / "comparison.html"
    cli("compare", *runs, "--html", comparison)
    page = open_page(comparison).page
    open_all_details(page)
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    widths = page.evaluate(
        "[...document.querySelectorAll('.scroll')].map(e => [e.scrollWidth, e.clientWidth])"
    )
    assert len(widths) == 6  # scores and costs: overall and per template
    for scroll_width, client_width in widths:
        assert scroll_width <= client_width
    assert page.locator("h3#resources ~ div.scroll td.metric").all_inner_texts()[:2] == [
        "answer_correctness_cost",
        "answer_relevance_cost",
    ]


# The example data -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def example_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("examples") / "out"
    cli(
        "evaluate",
        EXAMPLES / "reference.yaml",
        EXAMPLES / "responses.jsonl",
        "-c",
        EXAMPLES / "config.yaml",
        "-o",
        out,
        "-q",
    )
    return out / "report.html"


def test_example_report_in_the_browser(
    example_report: Path, open_page: OpenPage, tmp_path: Path
) -> None:
    opened = open_page(example_report)
    assert_inert(opened)
    page = opened.page
    for anchor in REPORT_SECTIONS:
        assert page.locator(f"h2#{anchor}").is_visible(), anchor
    assert page.locator("table.bars tbody tr").count() >= 2
    worst = page.locator("h2#worst ~ details").first
    assert worst.get_attribute("open") is not None
    assert worst.locator("dt", has_text="question").first.is_visible()
    check_screenshot(page, tmp_path / "examples.png", ".charts svg", CHART_BLUE, min_height=1000)
