"""`smq status` of a queue deeper than one page of GET /jobs."""

from tjq.cli import main
from tjq.local.calls import training_request

from job_queue.models import Job, JobState
from tests.client.conftest import P5, quiet_local_api


def test_status_shows_the_first_page_and_says_how_many_more(capsys, monkeypatch):
    # No sweep during the test: it would start the first of them.
    with quiet_local_api(capacity={P5: 1}, sweep_seconds=3600) as local:
        for name, value in local.environment().items():
            monkeypatch.setenv(name, value)
        # One job holds the instance, so that the sweep counts the queue and starts none.
        blocker = training_request("blocker", 9, run_seconds=3600)
        assert local.cloud.api("POST", "/add-job", blocker)[0] == 201
        store = local.cloud.deps.store
        store.bulk_load(
            [
                Job(
                    name=f"deep-{i:04d}",
                    priority=1,
                    seq=10 + i,
                    demand={P5: 1},
                    state=JobState.PENDING,
                    submitted_at=0.0,
                    request={"TrainingJobName": f"deep-{i:04d}"},
                )
                for i in range(130)
            ]
        )
        local.cloud.sweep()
        assert main(["status"]) == 0
        out = capsys.readouterr().out
        assert sum(line.startswith("deep-") for line in out.splitlines()) == 100
        assert "... and about 30 more waiting (smq status --all lists them)" in out
        assert main(["status", "--all"]) == 0
        out = capsys.readouterr().out
        assert sum(line.startswith("deep-") for line in out.splitlines()) == 130
        assert "more waiting" not in out
