"""`make demo`: the blog's scenario through the installed SDK over HTTP to the local API."""

import os

from tjq import demo


def test_demo_shows_the_blog_sequence_through_the_sdk():
    before = dict(os.environ)
    printed: list[str] = []
    tables = demo.run(out=printed.append)

    assert [("job2", "running", 2), ("job1", "running", 1), ("job3", "pending", 1)] in tables
    assert [
        ("job4", "running", 3),
        ("job2", "running", 2),
        ("job1", "preempted", 1),
        ("job3", "pending", 1),
    ] in tables
    assert [("job4", "running", 3), ("job1", "running", 1), ("job3", "pending", 1)] in tables
    assert tables[-1] == []
    text = "\n".join(printed)
    assert "[queue] job1: started as SageMaker job job1" in text  # said as each job is queued
    assert "[queue] job3: queued at position 1 (priority 1)" in text
    assert text.rstrip().endswith("(the queue is empty)")
    assert dict(os.environ) == before, "the demo leaves the environment as it found it"
