"""What-if simulation: replay a workload through the queue's own scheduler core.

* :mod:`workload` reads and checks a workload CSV;
* :mod:`engine` replays it on a virtual clock (the fast engine);
* :mod:`metrics` turns the replay into waits, utilization, goodput and lost work;
* :mod:`handler_engine` replays it through the real Lambda handler on the emulated AWS,
  to show both engines decide alike.
"""
