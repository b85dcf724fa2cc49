"""Jobs that wait for other jobs: which dependent jobs join the line, which wait on, and
which can never run — decided for all of them at once, so a failure cancels a whole chain in
one pass."""

import pytest

from job_queue.models import JobState
from job_queue.scheduler.dependencies import (
    MAX_PARENTS,
    Dependency,
    Dependent,
    Kind,
    settle,
)
from job_queue.scheduler.waiting_for import Reason

P, R, C, F, X, S = (
    JobState.PENDING,
    JobState.RUNNING,
    JobState.COMPLETED,
    JobState.FAILED,
    JobState.CANCELLED,
    JobState.STOPPED,
)


def on(text: str) -> Dependency:
    return Dependency.parse(text)


def dependent(name: str, text: str) -> Dependent:
    return Dependent(name, on(text))


@pytest.mark.parametrize(
    ("title", "dependents", "states", "ready", "doomed", "waiting"),
    [
        (
            "a chain of three: train runs, so evaluate and export wait",
            [dependent("evaluate", "afterok:train"), dependent("export", "afterok:evaluate")],
            {"train": R},
            [],
            {},
            ["evaluate", "export"],
        ),
        (
            "a chain of three: train completed, so evaluate joins the line; export waits on",
            [dependent("evaluate", "afterok:train"), dependent("export", "afterok:evaluate")],
            {"train": C},
            ["evaluate"],
            {},
            ["export"],
        ),
        (
            "fan-in: the merge waits until both parents completed",
            [dependent("merge", "afterok:a,b")],
            {"a": C, "b": R},
            [],
            {},
            ["merge"],
        ),
        (
            "fan-in: both completed, the merge joins the line",
            [dependent("merge", "afterok:a b")],
            {"a": C, "b": C},
            ["merge"],
            {},
            [],
        ),
        (
            "a failed parent cancels two levels of children in one pass",
            [dependent("evaluate", "afterok:train"), dependent("export", "afterok:evaluate")],
            {"train": F},
            [],
            {"evaluate": "train ended failed", "export": "evaluate will never run"},
            [],
        ),
        (
            "a grandchild queued at a higher priority (offered first) is cancelled as well",
            [dependent("export", "afterok:evaluate"), dependent("evaluate", "afterok:train")],
            {"train": X},
            [],
            {"evaluate": "train ended cancelled", "export": "evaluate will never run"},
            [],
        ),
        (
            "a cancelled parent: afterok can never hold",
            [dependent("evaluate", "afterok:train")],
            {"train": X},
            [],
            {"evaluate": "train ended cancelled (afterok)"},
            [],
        ),
        (
            "a preempted parent that waits to resume: its children keep waiting",
            [dependent("evaluate", "afterok:train")],
            {"train": JobState.PREEMPTED},
            [],
            {},
            ["evaluate"],
        ),
        (
            "afternotok: the clean-up job runs when the training failed",
            [dependent("cleanup", "afternotok:train")],
            {"train": F},
            ["cleanup"],
            {},
            [],
        ),
        (
            "afternotok: the clean-up job is cancelled when the training completed",
            [dependent("cleanup", "afternotok:train")],
            {"train": C},
            [],
            {"cleanup": "train completed (afternotok)"},
            [],
        ),
        (
            "afternotok: a parent doomed in the same pass counts as not completing",
            [dependent("evaluate", "afterok:train"), dependent("cleanup", "afternotok:evaluate")],
            {"train": F},
            ["cleanup"],
            {"evaluate": "train ended failed"},
            [],
        ),
        (
            "after: whatever the parents' end, once they all ended",
            [dependent("report", "after:a,b,c")],
            {"a": C, "b": F, "c": S},
            ["report"],
            {},
            [],
        ),
        (
            "after: one parent still running holds it back",
            [dependent("report", "after:a,b")],
            {"a": X, "b": R},
            [],
            {},
            ["report"],
        ),
        (
            "after: a parent doomed in the pass has ended, so the job after it joins the line",
            [dependent("evaluate", "afterok:train"), dependent("report", "after:evaluate")],
            {"train": F},
            ["report"],
            {"evaluate": "train ended failed"},
            [],
        ),
        (
            "a parent no longer in the records: afterok never holds, after does",
            [dependent("evaluate", "afterok:old"), dependent("report", "after:old")],
            {"old": None},
            ["report"],
            {"evaluate": "old is no longer in the queue's records"},
            [],
        ),
    ],
)
def test_settling_dependent_jobs(title, dependents, states, ready, doomed, waiting):
    settled = settle(dependents, states)
    assert list(settled.ready) == ready, title
    assert set(settled.doomed) == set(doomed), title
    for name, says in doomed.items():
        assert says in settled.doomed[name], title
        assert settled.doomed[name].startswith("dependency never satisfied"), title
    assert set(settled.waiting) == set(waiting), title


def test_a_waiting_job_is_told_which_parents_it_waits_for_and_their_states():
    settled = settle([dependent("merge", "afterok:a,b,c")], {"a": C, "b": R, "c": P})
    why = settled.waiting["merge"]
    assert why.code is Reason.DEPENDENCY
    assert why.jobs == ("b", "c")
    assert why.message == "waits for b (running), c (pending) to end (afterok)"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("afterok:job-a,job-b", Dependency(Kind.AFTEROK, ("job-a", "job-b"))),
        ("job-a", Dependency(Kind.AFTEROK, ("job-a",))),
        ("after: a  b ", Dependency(Kind.AFTER, ("a", "b"))),
        ("AfterNotOK:a,a", Dependency(Kind.AFTERNOTOK, ("a",))),
    ],
)
def test_the_depends_on_tag_reads_kind_and_parents(text, expected):
    assert Dependency.parse(text) == expected
    assert Dependency.parse(str(expected)) == expected


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "be [after|afterok|afternotok:]job"),
        ("afterany:a", "dependency type among after, afterok, afternotok"),
        ("afterok:", "name a list of jobs"),
        ("afterok:" + ",".join(f"j{i}" for i in range(MAX_PARENTS + 1)), "at most 20 jobs"),
    ],
)
def test_a_bad_depends_on_tag_is_refused_naming_the_problem(text, says):
    with pytest.raises(ValueError, match=r"\[after" if text == "" else says):
        Dependency.parse(text)
