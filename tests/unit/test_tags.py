"""Adding tags: an explicit choice replaces a tag, a default fills in only what is missing."""

from job_queue import tags

USER = [{"Key": "team", "Value": "nlp"}, {"Key": "priority", "Value": "2"}]


def test_a_default_never_overrides_the_users_tag():
    added = tags.with_tags(USER, {"priority": "5", "share": "vision"}, replace=False)
    assert added == [*USER, {"Key": "share", "Value": "vision"}]


def test_an_explicit_choice_replaces_the_tag():
    added = tags.with_tags(USER, {"priority": "7"}, replace=True)
    assert added == [{"Key": "team", "Value": "nlp"}, {"Key": "priority", "Value": "7"}]


def test_adding_tags_leaves_the_given_list_alone():
    given = [dict(tag) for tag in USER]
    tags.with_tags(given, {"priority": "7"}, replace=True)
    assert given == USER


def test_the_last_tag_of_a_key_counts():
    assert tags.value([*USER, {"Key": "priority", "Value": "9"}], "priority") == "9"
    assert tags.value(None, "priority") is None


def test_the_queues_tags_lead_back_to_the_queued_job():
    on_sagemaker = tags.queue_tags("team-queue", "train", 2)
    assert on_sagemaker == {
        "training-job-queue:queue": "team-queue",
        "training-job-queue:job": "train",
        "training-job-queue:attempt": "2",
    }
    assert tags.queued_job(on_sagemaker, "team-queue") == "train"
    assert tags.queued_job(on_sagemaker, "other-queue") is None
    assert tags.queued_job({"training-job-queue:queue": "team-queue"}, "team-queue") is None
