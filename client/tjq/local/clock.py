"""A clock that moves only when told to."""

import threading

EPOCH = 1_767_225_600.0  # 2026-01-01T00:00:00Z: simulated time starts here


class SimClock:
    """Simulated time in epoch seconds; callable, so it can stand in for ``time.time``."""

    def __init__(self, start: float = EPOCH) -> None:
        self._now = start
        self._lock = threading.Lock()

    def __call__(self) -> float:
        return self._now

    def set(self, when: float) -> None:
        with self._lock:
            self._now = max(self._now, when)  # never backwards

    def sleep(self, seconds: float) -> None:
        """Stand-in for time.sleep: back-off waits cost no real time."""
