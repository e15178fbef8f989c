"""Fixtures of the browser tests: Debian's Chromium, one headless browser per test module
driven by playwright, and pages that record what they load.

The suite never installs the browser itself: ``tests/setup_browser.sh``, which README.md's
test command runs before pytest, installs Debian's ``chromium`` when it is missing and it can
(root, apt-get). Without it the browser tests fail under CI (the CI environment variable set:
they must run there) and are skipped with the reason otherwise.

Helpers that test modules need are fixtures (``open_page``), because a conftest module cannot
be imported by name under ``--import-mode=importlib``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Browser, ConsoleMessage, Page, Request

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",  # CI runs as root, where Chromium's sandbox refuses to start
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _unavailable(reason: str) -> NoReturn:
    """Fail under CI (the browser tests must run there), skip elsewhere."""
    if os.environ.get("CI"):
        pytest.fail(f"browser tests cannot run under CI: {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def chromium_executable() -> Path:
    """Debian's Chromium, which ``tests/setup_browser.sh`` installs (never this fixture)."""
    if not CHROMIUM.is_file():
        _unavailable(
            f"Chromium is not at {CHROMIUM}: install it first with sh tests/setup_browser.sh "
            "(Debian's chromium package; needs root)"
        )
    return CHROMIUM


@pytest.fixture(scope="module")
def browser(chromium_executable: Path) -> Iterator[Browser]:
    """One headless Chromium per test module.

    Not per session: playwright's sync API keeps an event loop running in the main thread
    while it is started, and every ``asyncio.run`` of a later test would then refuse to start.
    """
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("the playwright package is not installed (pip install -e '.[dev]')")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=str(chromium_executable), args=CHROMIUM_ARGS, headless=True
        )
        try:
            yield launched
        finally:
            launched.close()


@dataclass
class OpenedPage:
    """A page and everything it asked for or complained about since it was opened."""

    page: Page
    url: str
    requests: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)


OpenPage = Callable[[Path], OpenedPage]


@pytest.fixture
def open_page(browser: Browser) -> Iterator[OpenPage]:
    """``open_page(path)``: the HTML file opened over file:// in a fresh context (1280 px wide),
    recording every request, console error and uncaught page error."""
    contexts = []

    def open_file(path: Path) -> OpenedPage:
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(5_000)  # a local file: fail fast, not after 30 s
        opened = OpenedPage(page, path.resolve().as_uri())

        def on_request(request: Request) -> None:
            opened.requests.append(request.url)

        def on_console(message: ConsoleMessage) -> None:
            if message.type == "error":
                opened.console_errors.append(message.text)

        page.on("request", on_request)
        page.on("console", on_console)
        page.on("pageerror", lambda error: opened.page_errors.append(str(error)))
        page.goto(opened.url, wait_until="load")
        return opened

    yield open_file
    for context in contexts:
        context.close()
