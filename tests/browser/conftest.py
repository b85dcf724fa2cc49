"""`smq ui` in a real browser: Debian's Chromium, driven by Playwright for Python (which
never downloads a browser of its own here: it is pointed at the installed one). `make test`
installs Chromium where it can; on a machine without it these tests say how to get it."""

import os
import shutil

import pytest

FLAGS = [
    # As root in a container, and with this machine's network closed: no sandbox, no GPU,
    # none of Chromium's own background connections.
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> str | None:
    return (
        os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    )


@pytest.fixture(scope="session")
def browser():
    executable = chromium_path()
    if executable is None:
        pytest.skip("no Chromium: apt-get install chromium (make test does, where it can)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=FLAGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    opened = context.new_page()
    yield opened
    context.close()
