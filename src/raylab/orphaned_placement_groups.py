"""Remove the placement groups of Train runs whose controller was killed (Tune stopped the trial).

Why this exists. A Ray Train V2 run reserves its workers' CPUs as one placement group, created by
the run's controller actor. Ray 2.58.0 keeps a placement group made by a (non-detached) actor
until that actor **and** its job are gone, so when Tune's scheduler stops a trial early, the
trial's driver, its Train controller and workers die, but their placement group stays reserved
until the whole Tune script exits. Ray Train ships a watchdog for this
(``ray/train/v2/_internal/execution/controller/placement_group_cleaner.py``), but it asks the
State API whether the controller is alive, and the State API needs the dashboard of
``ray[default]``, which the course's install (``ray[train,tune]``, no dashboard) does not have:
the watchdog only logs "State API may be temporarily unavailable" and the next trial waits for
CPUs forever. Measured on the course cluster: a 4-trial ASHA experiment whose trials each run a
2-worker Train run hangs after the first stopped trial; with :func:`running` active it finishes.

:func:`running` does the watchdog's job from the notebook: every half second it asks the GCS
(no dashboard needed) for live placement groups whose creator actor is dead and removes them.
A placement group made by a driver (Tune's trial reservations) or a detached actor is never
touched.
"""
from __future__ import annotations

import contextlib
import threading

CHECK_INTERVAL_S = 0.5
_LIVE_STATES = ("PENDING", "PREPARED", "CREATED", "RESCHEDULING")


def find() -> list[bytes]:
    """Binary ids of live, non-detached placement groups whose creator actor has died."""
    import ray
    from ray.core.generated import gcs_pb2

    table = gcs_pb2.PlacementGroupTableData
    live = {getattr(table, state) for state in _LIVE_STATES}
    accessor = ray._private.state.state._connect_and_get_accessor()
    orphans = []
    for raw in accessor.get_placement_group_table():
        pg = table.FromString(raw)
        made_by_actor = not ray.ActorID(pg.creator_actor_id).is_nil()
        if pg.state in live and made_by_actor and pg.creator_actor_dead and not pg.is_detached:
            orphans.append(pg.placement_group_id)
    return orphans


def remove_all() -> int:
    """Remove every placement group :func:`find` reports; return how many."""
    import ray
    from ray.util.placement_group import PlacementGroup, remove_placement_group

    ids = find()
    for pg_id in ids:
        remove_placement_group(PlacementGroup(ray.PlacementGroupID(pg_id)))
    return len(ids)


class _Cleaner(threading.Thread):
    def __init__(self, interval_s: float):
        super().__init__(name="raylab-orphaned-placement-groups", daemon=True)
        self.interval_s, self.removed = interval_s, 0
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.wait(self.interval_s):
            try:
                self.removed += remove_all()
            except Exception:  # Ray shut down under us: nothing left to clean
                return

    def stop(self) -> None:
        self._stop_event.set()
        self.join(timeout=5)


@contextlib.contextmanager
def running(interval_s: float = CHECK_INTERVAL_S):
    """Remove orphaned placement groups in the background while the block runs.

    Yields the cleaner; its ``removed`` attribute counts what it removed. Needs ``ray.init``
    (``raylab.setup``) first.
    """
    cleaner = _Cleaner(interval_s)
    cleaner.start()
    try:
        yield cleaner
    finally:
        cleaner.stop()
