"""training-job-queue, the user side: local emulation and tooling (``tjq.local``)."""
