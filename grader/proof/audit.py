"""Which stored gradings a run grades again to check the ledger instead of trusting it.

Two kinds each run: a **rotation** that walks the ledger in key order, so every entry is reached
within :func:`rotation_bound` consecutive runs while the ledger stands, and a few entries chosen
**at random** when the run starts, so no entry can count on when its turn comes. A run is
numbered by the commit it tests (``git rev-list --count HEAD``): each commit is a new run.
An audited grading must give its stored result cell for cell (``ledger.differences``); a forged,
stale or flaky entry fails the run and is named.
"""
from __future__ import annotations

import math
import random
import subprocess

from grader.proof.keys import ROOT

ROTATION_PER_RUN = 2
RANDOM_PER_RUN = 1


def rotation_bound(entries: int, per_run: int = ROTATION_PER_RUN) -> int:
    """Consecutive runs in which the rotation reaches every one of ``entries`` stored gradings."""
    return max(1, math.ceil(entries / per_run))


def rotation(keys, run: int, per_run: int = ROTATION_PER_RUN) -> list[str]:
    """The stored keys run number ``run`` audits: those whose place in key order is ``run``
    modulo :func:`rotation_bound` (at most ``per_run``)."""
    ordered = sorted(keys)
    slots = rotation_bound(len(ordered), per_run)
    return [k for i, k in enumerate(ordered) if i % slots == run % slots]


def chosen(keys, run: int, rng: random.Random | None = None, per_run: int = ROTATION_PER_RUN,
           at_random: int = RANDOM_PER_RUN) -> dict[str, str]:
    """key -> why it is audited this run ("rotation" or "random")."""
    picked = {k: "rotation" for k in rotation(keys, run, per_run)}
    rest = sorted(set(keys) - set(picked))
    for k in (rng or random.SystemRandom()).sample(rest, min(at_random, len(rest))):
        picked[k] = "random"
    return picked


def run_number() -> int:
    """This run's number: the count of commits up to the one under test (0 outside git)."""
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "rev-list", "--count", "HEAD"], capture_output=True,
                             text=True, check=True, timeout=60).stdout
        return int(out.strip())
    except (OSError, subprocess.SubprocessError, ValueError):
        return 0
