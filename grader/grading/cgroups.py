"""One control group per graded submission: limits, and the list of its processes.

Every process a submission starts (its kernel, the kernel's Ray cluster, anything they fork or
daemonise) inherits the group, and an unprivileged process cannot leave it. So the grader finds
a submission's processes by group, never by something the learner's code can change (its
environment, its session, its name), and can kill them all when the submission is done.

Two layouts are handled, because the machines this course is graded on have both:

- **cgroup v2** (``/sys/fs/cgroup/cgroup.controllers``): one group with ``memory.max`` and
  ``pids.max`` where those controllers are enabled for the grader's own group; ``cgroup.kill``.
- **cgroup v1 / hybrid** (``/sys/fs/cgroup/memory``, ``/sys/fs/cgroup/pids`` and a controller-less
  v2 tree at ``/sys/fs/cgroup/unified``): ``memory.limit_in_bytes`` and ``pids.max`` in their
  hierarchies, ``cgroup.kill`` from the unified tree when it has one.

A limit the machine cannot enforce is reported in :attr:`SubmissionCgroup.missing` (and printed
by the class grader), never silently assumed. Each group is created below the grader's own group,
so a grader that is itself a Ray task or a CI job stays inside what it was given.
"""
from __future__ import annotations

import os
import signal
import time
import uuid
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")


def own_paths() -> dict[str, str]:
    """``{controller or '' (v2): path of this process's group}`` from /proc/self/cgroup."""
    found = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for name in (controllers.split(",") if controllers else [""]):
            found[name] = path
    return found


def _layout() -> dict[str, Path]:
    """Where to create groups: ``{'procs': dir, 'memory': dir, 'pids': dir}`` (those present)."""
    own = own_paths()
    dirs: dict[str, Path] = {}
    if (CGROUP_ROOT / "cgroup.controllers").exists():  # pure v2
        base = CGROUP_ROOT / own.get("", "/").lstrip("/")
        dirs["procs"] = base
        enabled = set((base / "cgroup.subtree_control").read_text().split()) if (base / "cgroup.subtree_control").exists() else set()
        for ctl in ("memory", "pids"):
            if ctl in enabled:
                dirs[ctl] = base
        return dirs
    if (CGROUP_ROOT / "unified" / "cgroup.procs").exists() and "" in own:
        dirs["procs"] = CGROUP_ROOT / "unified" / own[""].lstrip("/")
    for ctl in ("memory", "pids"):
        if (CGROUP_ROOT / ctl / "cgroup.procs").exists() and ctl in own:
            dirs[ctl] = CGROUP_ROOT / ctl / own[ctl].lstrip("/")
            dirs.setdefault("procs", dirs[ctl])
    return dirs


class SubmissionCgroup:
    """A fresh group (one folder per hierarchy) for one submission. Use as a context manager."""

    def __init__(self, *, memory_bytes: int | None, pids: int | None):
        self.memory_bytes, self.pids = memory_bytes, pids
        self.name = f"raylab-grade-{uuid.uuid4().hex[:12]}"
        self.dirs: list[Path] = []
        self.missing: list[str] = []
        self._v2 = (CGROUP_ROOT / "cgroup.controllers").exists()

    def __enter__(self) -> "SubmissionCgroup":
        try:
            layout = _layout()
        except OSError:
            layout = {}
        made: dict[Path, Path] = {}
        for role, parent in layout.items():
            if parent not in made:
                try:
                    (parent / self.name).mkdir()
                    made[parent] = parent / self.name
                except OSError:
                    continue
        self.dirs = list(made.values())
        procs = made.get(layout.get("procs"))
        self._procs_dir = procs
        if procs is None:
            self.missing.append("process tracking")
        self._set(made.get(layout.get("memory")), "memory", self.memory_bytes,
                  "memory.max" if self._v2 else "memory.limit_in_bytes")
        self._set(made.get(layout.get("pids")), "process count", self.pids, "pids.max")
        return self

    def _set(self, folder: Path | None, what: str, value: int | None, knob: str) -> None:
        if value is None:
            return
        try:
            (folder / knob).write_text(str(value))  # type: ignore[operator]
            if knob == "memory.limit_in_bytes" and (folder / "memory.memsw.limit_in_bytes").exists():
                try:  # with swap, the limit must cover swap too, or memory just moves there
                    (folder / "memory.memsw.limit_in_bytes").write_text(str(value))
                except OSError:
                    pass
        except (OSError, TypeError):
            self.missing.append(f"{what} limit")

    @property
    def join_paths(self) -> list[str]:
        """Folders whose ``cgroup.procs`` a process writes its pid to, to join the group."""
        return [str(d) for d in self.dirs]

    def pids_inside(self) -> set[int]:
        found: set[int] = set()
        for d in self.dirs:
            try:
                found |= {int(p) for p in (d / "cgroup.procs").read_text().split()}
            except OSError:
                continue
        return found

    def oom_killed(self) -> bool:
        """Whether the memory limit made the kernel kill a process of this submission."""
        for d in self.dirs:
            for name in ("memory.events", "memory.oom_control"):
                try:
                    for line in (d / name).read_text().splitlines():
                        key, _, value = line.partition(" ")
                        if key == "oom_kill" and int(value) > 0:
                            return True
                except (OSError, ValueError):
                    continue
        return False

    def kill_all(self, grace_s: float = 0.0) -> int:
        """Kill every process still in the group; return how many there were."""
        deadline = time.monotonic() + grace_s
        while grace_s and self.pids_inside() and time.monotonic() < deadline:
            time.sleep(0.1)  # processes that are exiting on their own
        left = self.pids_inside()
        if not left:
            return 0
        for _ in range(100):
            kill_file = self._procs_dir / "cgroup.kill" if self._procs_dir else None
            if kill_file is not None and kill_file.exists():
                try:
                    kill_file.write_text("1")
                except OSError:
                    kill_file = None
            if kill_file is None or not kill_file.exists():
                for pid in self.pids_inside():
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except (ProcessLookupError, PermissionError):
                        pass
            time.sleep(0.05)
            if not self.pids_inside():
                break
        return len(left)

    def __exit__(self, *exc) -> None:
        self.kill_all()
        for d in self.dirs:
            for _ in range(50):
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:  # processes still exiting
                    time.sleep(0.1)
