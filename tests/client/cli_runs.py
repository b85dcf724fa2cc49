"""Running `smq` in the test's own process, as a user at a terminal would see it."""

from tjq.cli import main


def smq(capsys, *argv) -> tuple[int, str, str]:
    """``smq ARGV...``: its exit status, what it printed, and what it printed as errors."""
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err
