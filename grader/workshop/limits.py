"""Per-learner limits of the workshop hub: one control group per learner, plus RLIMIT_NPROC.

The hub (:class:`grader.workshop.hub.WorkshopSpawner`) creates the learner's group before it
spawns their server, and the server's process joins it between fork and exec, while it is still
root (``preexec_fn``), so the server, its kernels, their Ray clusters and anything they fork are
inside; an unprivileged process cannot leave it. What each limit does:

- **CPU**: ``cpu.cfs_quota_us`` (v1) / ``cpu.max`` (v2) = ``cpus`` x the period: all of a
  learner's processes together get at most ``cpus`` cores of time. Each learner's group also has
  the same CPU weight, so under contention learners share the machine equally, whatever the
  number of processes each runs. Ray's *logical* CPUs are another thing: the labs start their own
  2-CPU clusters (``raylab.CLUSTER_CPUS``), which is how many tasks Ray runs at once, not a limit
  on the machine; ``ray.init(num_cpus=64)`` would schedule more, and the quota caps those.
- **memory**: ``memory.limit_in_bytes`` (+ ``memory.memsw.limit_in_bytes`` where swap is
  accounted) / ``memory.max``: the learner's processes together, page cache and ``/dev/shm``
  pages they touch included (Ray's object store); past it the kernel kills one of them.
- **tasks**: ``pids.max``: processes and threads of the group together.
- **RLIMIT_NPROC** (``resource.setrlimit``, no cgroups needed): tasks of the learner's uid, all
  processes of that user on the machine together; holds wherever the hub runs as root.

Not used: ``RLIMIT_AS``. It limits each process's *virtual* address space, not the learner's
total, and Ray's and torch's processes reserve far more address space than they use (see
docs/workshop.md for the figures measured here), so a limit low enough to matter breaks Ray.

A limit the machine cannot enforce (no such controller, a cgroup tree that is not writable, v2
without the controller delegated to the hub's group) is listed by :meth:`LearnerGroup.create` in
``missing`` and logged by the hub, never silently assumed.
"""
from __future__ import annotations

import os
import resource
from dataclasses import asdict, dataclass, field
from pathlib import Path

from grader.grading.cgroups import CGROUP_ROOT, own_paths  # the grading sandbox reads the same hierarchy

GIB = 1024 ** 3
CFS_PERIOD_US = 100_000


@dataclass
class Limits:
    cpus: float | None = 2.0
    memory_bytes: int | None = 6 * GIB
    tasks: int | None = 4096
    nproc: int | None = 4096

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class LearnerGroup:
    """The control group(s) of one learner (one folder per cgroup v1 hierarchy, or one v2 group)."""
    name: str
    limits: Limits
    root: Path = CGROUP_ROOT
    folders: list[Path] = field(default_factory=list)
    held: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)

    @property
    def group_name(self) -> str:
        return f"raylab-workshop-{self.name}"

    def _knobs(self, v2: bool) -> dict[str, list[tuple[str, str, bool]]]:
        """controller -> [(file, value, required)] for the limits that are set."""
        lim = self.limits
        knobs: dict[str, list[tuple[str, str]]] = {}
        if lim.cpus:
            quota = str(int(lim.cpus * CFS_PERIOD_US))
            knobs["cpu"] = ([("cpu.max", f"{quota} {CFS_PERIOD_US}", True)] if v2 else
                            [("cpu.cfs_period_us", str(CFS_PERIOD_US), True),
                             ("cpu.cfs_quota_us", quota, True)])
        if lim.memory_bytes:
            value = str(lim.memory_bytes)
            # v1: memory+swap must stay >= memory, so lift it first, then set both (without swap
            # accounting the memsw files are absent and the plain limit still holds).
            knobs["memory"] = ([("memory.max", value, True), ("memory.swap.max", "0", False)] if v2
                               else [("memory.memsw.limit_in_bytes", "-1", False),
                                     ("memory.limit_in_bytes", value, True),
                                     ("memory.memsw.limit_in_bytes", value, False)])
        if lim.tasks:
            knobs["pids"] = [("pids.max", str(lim.tasks), True)]
        return knobs

    def create(self) -> "LearnerGroup":
        """Create the group(s) and write the limits (again: a restarted hub resets them)."""
        self.folders, self.held, self.missing = [], [], []
        try:
            own = own_paths()
        except OSError:
            own = {}
        v2 = (self.root / "cgroup.controllers").exists()
        wanted = self._knobs(v2)
        if v2:
            base = self.root / own.get("", "/").lstrip("/")
            try:
                enabled = set((base / "cgroup.subtree_control").read_text().split())
            except OSError:
                enabled = set()
            folder = base / self.group_name
            try:
                folder.mkdir(exist_ok=True)
                self.folders.append(folder)
            except OSError as exc:
                self.missing += [f"{ctl} (cgroup v2 not writable: {exc.strerror})" for ctl in wanted]
                wanted = {}
            for ctl, knobs in wanted.items():
                if ctl not in enabled:
                    self.missing.append(f"{ctl} (not delegated to the hub's cgroup {base})")
                    continue
                self._write(folder, ctl, knobs)
        else:
            for ctl, knobs in wanted.items():
                hierarchy = self.root / ctl
                if not (hierarchy / "cgroup.procs").exists() or ctl not in own:
                    self.missing.append(f"{ctl} (no cgroup v1 {ctl} hierarchy)")
                    continue
                folder = hierarchy / own[ctl].lstrip("/") / self.group_name
                try:
                    folder.mkdir(exist_ok=True)
                except OSError as exc:
                    self.missing.append(f"{ctl} ({folder} not writable: {exc.strerror})")
                    continue
                self.folders.append(folder)
                self._write(folder, ctl, knobs)
        if self.limits.nproc:
            self.held.append("nproc")
        return self

    def _write(self, folder: Path, ctl: str, knobs: list[tuple[str, str, bool]]) -> None:
        for knob, value, required in knobs:
            try:
                (folder / knob).write_text(value)
            except OSError as exc:
                if required:
                    self.missing.append(f"{ctl} ({knob}: {exc.strerror})")
                    return
        self.held.append(ctl)

    def preexec(self, then=None):
        """A ``preexec_fn``: join the group(s), lower RLIMIT_NPROC, then ``then()`` (which drops
        root). Joining fails loudly: a server outside its group would run without limits."""
        procs = [str(folder / "cgroup.procs") for folder in self.folders]
        nproc = self.limits.nproc

        def preexec():
            pid = str(os.getpid())
            for path in procs:
                with open(path, "w") as handle:
                    handle.write(pid)
            if nproc:
                resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
            if then is not None:
                then()

        return preexec

    def remove(self) -> None:
        """Remove the learner's (empty) group folders, wherever :meth:`create` would put them."""
        try:
            own = own_paths()
        except OSError:
            return
        if (self.root / "cgroup.controllers").exists():
            candidates = [self.root / own.get("", "/").lstrip("/") / self.group_name]
        else:
            candidates = [self.root / ctl / own[ctl].lstrip("/") / self.group_name
                          for ctl in ("cpu", "memory", "pids") if ctl in own]
        for folder in candidates:
            try:
                folder.rmdir()
            except OSError:
                pass

    def members(self) -> set[int]:
        found: set[int] = set()
        for folder in self.folders:
            try:
                found |= {int(p) for p in (folder / "cgroup.procs").read_text().split()}
            except OSError:
                continue
        return found


def describe(group: LearnerGroup) -> str:
    lim = group.limits
    parts = []
    if "cpu" in group.held:
        parts.append(f"{lim.cpus:g} CPUs")
    if "memory" in group.held:
        parts.append(f"{lim.memory_bytes / GIB:g} GiB")
    if "pids" in group.held:
        parts.append(f"{lim.tasks} tasks")
    if "nproc" in group.held:
        parts.append(f"RLIMIT_NPROC {lim.nproc}")
    text = f"{group.name}: " + (", ".join(parts) or "no limits")
    if group.missing:
        text += "; not enforced here: " + ", ".join(group.missing)
    return text
