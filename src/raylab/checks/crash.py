"""Crash a process in the middle of a learner's run, as a machine that dies would.

The failure exercises judge how a learner's code survives a worker or a trial killed mid-run. The
test starts the run, and a background thread watches for the moment to strike (a worker that has
reported three times, a trial that has logged three results) and sends ``SIGKILL`` then::

    with kill_when(find_victim) as crash:
        result = run_the_learners_code()
    check(crash.victim, "nothing to crash ...")

``find_victim()`` returns ``None`` until it is time, then a dict with the ``pid`` to kill and
whatever the test wants to remember about it (its worker group, the last checkpointed epoch).
"""
from __future__ import annotations

import os
import signal
import threading
import time
from typing import Callable


class kill_when:  # noqa: N801 - used as a function in a with statement
    """Watch with ``find_victim`` every ``interval_s`` while the block runs; kill the first victim
    it names (once) and keep its dict in :attr:`victim` (``{}`` while none was found)."""

    def __init__(self, find_victim: Callable[[], dict | None], interval_s: float = 0.05):
        self._find, self._interval = find_victim, interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self.victim: dict = {}

    def _watch(self) -> None:
        while not self._stop.is_set():
            found = self._find()
            if found is not None:
                try:
                    os.kill(found["pid"], signal.SIGKILL)
                except ProcessLookupError:  # it ended on its own first: look again
                    time.sleep(self._interval)
                    continue
                self.victim = dict(found)
                return
            time.sleep(self._interval)

    def __enter__(self) -> "kill_when":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
