"""What a team lead sees in `smq ui`, in headless Chromium, after a scripted day on a local
API (tests/browser/scenario.py): who runs on which instance, who waits and why, the
preemption and the warm start on the timeline, a share borrowing, a job's detail, and the
page's answer when the queue cannot be reached or refuses an action."""

import re

import pytest
from playwright.sync_api import expect
from tjq.api import QueueClient
from tjq.ui.server import UiApi, UiServer

from tests.browser.scenario import G5, request, scripted_day, states, wait_for
from tests.client.conftest import quiet_local_api

TIMEOUT = 60_000  # ms: a busy machine may take long to draw


@pytest.fixture(scope="module")
def day():
    with scripted_day() as (local, client):
        yield local, client


@pytest.fixture
def ui(day):
    """A read-only `smq ui` server on the day's queue."""
    yield from _served(UiApi(day[1]))


@pytest.fixture
def ui_with_actions(day):
    yield from _served(UiApi(day[1], allow_actions=True))


def _served(api):
    server = UiServer(api, port=0)
    server.start()
    yield server
    server.shutdown()
    server.server_close()


def opened(page, server):
    page.goto(server.url)
    expect(page.locator(".lane").first).to_be_visible(timeout=TIMEOUT)
    return page


def test_each_instance_is_a_lane_with_the_job_on_it(page, ui):
    opened(page, ui)
    lanes = page.locator(".lane")
    expect(lanes).to_have_count(2, timeout=TIMEOUT)
    urgent = page.locator(".lane[data-job='urgent']")
    expect(urgent).to_contain_text("priority 5", timeout=TIMEOUT)
    expect(urgent).to_contain_text("share QS2")
    expect(urgent).to_contain_text("no checkpoints declared")
    tune_a = page.locator(".lane[data-job='tune-a']")
    expect(tune_a).to_contain_text("priority 1 · share QS1 · testing · running")
    # The instance type and its number, for each lane.
    assert sorted(lanes.locator(".where").all_inner_texts()) == [
        "ml.g5.xlarge #1",
        "ml.g5.xlarge #2",
    ]


def test_the_line_shows_position_expected_start_and_why_it_waits(page, ui):
    opened(page, ui)
    row = page.locator("#queue tr.queued[data-job='tune-b']")
    expect(row).to_be_visible(timeout=TIMEOUT)
    cells = row.locator("td").all_inner_texts()
    assert cells[:4] == ["1", "tune-b", "1", "QS1"]
    assert cells[6] and cells[7]  # likely, and at the latest
    assert "its share QS1 holds 1 of its limit of 1" in cells[8]
    expect(page.locator("#waiting-count")).to_have_text("(1 waiting)")


def test_the_timeline_marks_the_preemption_the_warm_start_and_the_pool(page, ui):
    opened(page, ui)
    page.click("#zoom button[data-span='fit']")
    preempted = page.locator(".marker-preempted[data-job='tune-b']")
    expect(preempted).to_have_count(1, timeout=TIMEOUT)
    assert "tune-b was preempted: lost" in preempted.locator("title").text_content()
    expect(page.locator(".marker-warm[data-job='tune-a']")).to_have_count(1)
    expect(page.locator(".marker-warm[data-job='tune-b']")).to_have_count(0)  # a cold start
    expect(page.locator("rect.bar[data-job='warm-up'][data-phase='pool_idle']")).to_have_count(1)
    expect(page.locator("rect.bar[data-job='tune-b'][data-phase='stopping']")).to_have_count(1)
    # One row per job, in the order they first held instances.
    labels = page.locator("#gantt-svg text.row-label").all_text_contents()
    assert labels == ["warm-up", "tune-a", "tune-b", "urgent"]
    # urgent (priority 5) and tune-a (priority 1) run in different colours.
    fills = {
        job: page.locator(f"rect.bar[data-job='{job}'][data-phase='running']").first.get_attribute(
            "fill"
        )
        for job in ("urgent", "tune-a")
    }
    assert fills["urgent"] != fills["tune-a"]


def test_the_shares_show_limits_use_and_the_borrowing_and_lending_over_time(page, ui):
    opened(page, ui)
    page.click("#zoom button[data-span='fit']")
    qs2 = page.locator("#share-table tr[data-share='QS2']")
    expect(qs2).to_be_visible(timeout=TIMEOUT)
    # QS2 took its instance back: it uses its own, nobody borrows now.
    assert qs2.locator("td").all_inner_texts()[:7] == [
        "QS2",
        "LEND",
        "ml.g5.xlarge",
        "1",
        "1",
        "0",
        "0",
    ]
    # QS1 held two instances of its limit of one while tune-b borrowed QS2's.
    qs1 = page.locator("svg.share-chart[data-share='QS1']")
    expect(qs1).to_have_attribute("data-most-borrowed", "1", timeout=TIMEOUT)
    expect(qs1.locator("text")).to_have_text("QS1: limit 1, borrowed up to 1")
    expect(qs1).to_have_attribute("data-most-lent", "0")
    # What tune-b borrowed, QS2 lent, until urgent took it back.
    qs2_chart = page.locator("svg.share-chart[data-share='QS2']")
    expect(qs2_chart).to_have_attribute("data-most-borrowed", "0")
    expect(qs2_chart).to_have_attribute("data-most-lent", "1")
    expect(qs2_chart.locator("text")).to_have_text("QS2: limit 1, lent up to 1")


def test_a_row_opens_the_jobs_attempts_and_history(page, ui):
    opened(page, ui)
    page.click("#queue tr.queued[data-job='tune-b']")
    detail = page.locator("#detail")
    expect(detail).to_be_visible(timeout=TIMEOUT)
    expect(detail.locator("table.attempts tbody tr")).to_have_count(1)
    expect(detail.locator("table.attempts")).to_contain_text("preempted by urgent")
    expect(detail).to_contain_text("smq logs tune-b")
    # Read-only: nothing on the page can cancel or reprioritise.
    expect(detail.locator("button.cancel")).to_have_count(0)


def test_with_actions_the_page_cancels_and_shows_the_queues_refusal(page, ui_with_actions, day):
    client = day[1]
    client.submit(request("extra", 1, "QS1", run_seconds=600))
    opened(page, ui_with_actions)
    page.click("#queue tr.queued[data-job='extra']")
    detail = page.locator("#detail")
    expect(detail.locator("button.cancel")).to_be_visible(timeout=TIMEOUT)
    client.cancel("extra")  # behind the page's back: its buttons now ask too late
    detail.locator("input[aria-label='new priority']").fill("3")
    detail.locator("button.set-priority").click()
    expect(detail.locator(".answer.refused")).to_contain_text("refused:", timeout=TIMEOUT)
    expect(detail.locator(".answer.refused")).to_contain_text("cancelled")

    client.submit(request("extra-2", 1, "QS1", run_seconds=600))
    page.click("#detail-close")
    page.locator("#queue tr.queued[data-job='extra-2']").click(timeout=TIMEOUT)
    detail.locator("button.cancel").click(timeout=TIMEOUT)
    wait_for(lambda: "extra-2" not in states(client), "the page's cancel of extra-2")


def test_an_unreachable_queue_is_shown_and_retried_until_it_answers(page, day):
    api = UiApi(QueueClient("http://127.0.0.1:9/prod", retries=0))
    for server in _served(api):
        page.goto(server.url)
        problem = page.locator("#problem")
        expect(problem).to_contain_text("Cannot reach the queue", timeout=TIMEOUT)
        expect(problem).to_contain_text("Trying again every 5 s")
        api.client = day[1]  # the endpoint comes back
        expect(problem).to_be_hidden(timeout=TIMEOUT)
        expect(page.locator(".lane[data-job='urgent']")).to_be_visible(timeout=TIMEOUT)


def test_a_training_plans_instances_are_lanes_of_their_own(page):
    arn = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/g5-plan"
    with quiet_local_api(
        capacity={G5: [1, {"training_plan": arn}]},
        training_plans=[f"g5-plan={G5}:1:0:36000"],
        run_seconds=600,
    ) as local:
        client = QueueClient(local.api_url)
        for server in _served(UiApi(client)):
            opened(page, server)
            reserved = page.locator(".lane.idle[data-plan='g5-plan']")
            expect(reserved).to_contain_text("plan g5-plan", timeout=TIMEOUT)
            expect(reserved).to_contain_text("reserved, idle")
            expect(page.locator(".lane.idle:not([data-plan])")).to_have_count(1)
            job = request("on-plan", 1, None, run_seconds=600)
            job["StoppingCondition"]["MaxRuntimeInSeconds"] = 3600  # ends inside the window
            client.submit(job)
            on_plan = page.locator(".lane[data-job='on-plan']")
            expect(on_plan).to_contain_text("plan g5-plan", timeout=TIMEOUT)  # paid for: first
            expect(page.locator(".lane.idle[data-plan]")).to_have_count(0)
            page.click(".lane[data-job='on-plan']")
            link = page.locator("#detail table.attempts a.logs")
            expect(link).to_have_attribute("href", re.compile(r"logStreamNameFilter\$3Don-plan$"))
