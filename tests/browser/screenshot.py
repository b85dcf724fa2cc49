"""The README's picture of `smq ui`: the scripted day (tests/browser/scenario.py) in
headless Chromium, the timeline fitted to it.

    .venv/bin/python -m tests.browser.screenshot docs/smq-ui.png
"""

import sys

from playwright.sync_api import sync_playwright
from tjq.ui.server import UiApi, UiServer

from tests.browser.conftest import FLAGS, chromium_path
from tests.browser.scenario import scripted_day


def main(path: str) -> None:
    with scripted_day() as (_, client), sync_playwright() as playwright:
        server = UiServer(UiApi(client), port=0)
        server.start()
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=FLAGS)
        page = browser.new_page(viewport={"width": 1280, "height": 1000})
        page.goto(server.url)
        page.click("#zoom button[data-span='fit']")
        page.wait_for_selector("svg.share-chart[data-share='QS1'][data-most-borrowed='1']")
        page.screenshot(path=path, full_page=True)
        browser.close()
        server.shutdown()


if __name__ == "__main__":
    main(sys.argv[1])
