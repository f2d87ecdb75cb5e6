"""What a user's server sees of the machine: its own mount namespace, set up by the hub as root
between fork and exec (``preexec_fn``, like the per-learner limits).

For a **learner**, every top-level folder but the system's (``/usr``, ``/etc``, ``/var``...) is
covered by an empty tmpfs, and only what the learner needs is shown again, bind-mounted at its own
path: their home, the course's virtual environment and ``src/`` (``raylab``), the Python the venv
was built from, the exchange and the learner configuration. Any other checkout of the course on
the machine (``/work``, ``/opt``, ``/srv``, another home...) is not there at all, whatever its
permissions. ``/tmp``, ``/var/tmp`` and ``/dev/shm`` are the learner's own fresh tmpfs (no other
user's ``/tmp/ray`` sessions, no files left by others), and ``/proc`` is a new instance with
``hidepid=2``: a learner sees their own processes only (and Ray, which finds clusters by reading
the process table, finds only theirs).

For an **instructor**, only what keeps the course's Python from them is covered: a venv built
from a Python under ``/root`` (pyenv's) cannot run as another user, so ``/root`` is covered and
that Python shown again. Learners get the same treatment: everyone runs the grader's interpreter.

Each step that fails raises: the server does not start rather than start unconfined. ``make
workshop`` tries the whole thing once first (:func:`probe`) and says when this machine cannot.
"""
from __future__ import annotations

import ctypes
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

CLONE_NEWNS = 0x00020000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_BIND, MS_REC, MS_PRIVATE = 2, 4, 8, 4096, 16384, 1 << 18
# Top-level folders a learner's server sees as they are: the operating system.
SYSTEM = {"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "dev", "sys", "proc", "run", "var"}
# Folders everyone may write to: a fresh tmpfs each (mode 1777), so nothing is shared.
PRIVATE_TMP = {"/tmp": "1g", "/var/tmp": "256m", "/dev/shm": "2g"}


@dataclass
class Plan:
    """The mounts of one server's namespace, computed by the hub (as root) before the fork."""
    cover: list[str] = field(default_factory=list)   # empty tmpfs over these
    private: dict[str, str] = field(default_factory=dict)  # fresh 1777 tmpfs: path -> size
    show: list[str] = field(default_factory=list)     # bind-mounted again at their own path
    hidepid: bool = False
    home: str | None = None


def python_paths(root: Path) -> list[str]:
    """The course's interpreter: its venv, ``src/`` (the editable ``raylab``), the base Python."""
    return [str(root / ".venv"), str(root / "src"), os.path.realpath(sys.base_prefix)]


def _blocked_top(path: str) -> str | None:
    """The top-level folder to cover so that ``path`` can be shown to everyone: the first folder
    above it that other users cannot enter, as its top-level folder."""
    current = Path("/")
    for part in Path(path).parts[1:]:
        current = current / part
        if current.exists() and not current.stat().st_mode & 0o001:
            return "/" + Path(path).parts[1]
    return None


def learner_plan(home: str, shown: list[str]) -> Plan:
    """Everything but the system, the learner's home and ``shown`` covered; private tmp; hidepid."""
    tops = [f"/{entry.name}" for entry in os.scandir("/") if entry.is_dir(follow_symlinks=False)
            and entry.name not in SYSTEM and f"/{entry.name}" not in PRIVATE_TMP]
    show = sorted({home, *[p for p in shown if os.path.exists(p)]})
    return Plan(cover=sorted(tops), private=dict(PRIVATE_TMP), show=show, hidepid=True, home=home)


def instructor_plan(home: str, shown: list[str]) -> Plan:
    """Only the top-level folders that keep ``shown`` (the course's Python) from other users."""
    cover = sorted({top for p in shown if (top := _blocked_top(p))})
    return Plan(cover=cover, show=sorted(p for p in shown if any(p.startswith(c + "/") for c in cover)),
                home=home)


def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
    return libc


def _call(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def preexec(plan: Plan, then=None):
    """A ``preexec_fn`` that builds ``plan``'s namespace (as root), then calls ``then()``."""
    libc = _libc()

    def mount(source, target, fstype, flags, data=None):
        _call(libc.mount(source and source.encode(), target.encode(), fstype and fstype.encode(), flags,
                         data and data.encode()), f"mount {target}")

    def confine():
        _call(libc.unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)")
        mount(None, "/", None, MS_REC | MS_PRIVATE)
        # Opened before anything is covered: once a folder is under a tmpfs its path is gone, but
        # an O_PATH descriptor still names it (bind-mounted from /proc/self/fd/N).
        sources = [(path, os.open(path, os.O_PATH)) for path in plan.show]
        for top in plan.cover:
            mount("tmpfs", top, "tmpfs", MS_NOSUID | MS_NODEV, "mode=755,size=16m")
        for path, size in plan.private.items():
            if os.path.isdir(path):
                mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, f"mode=1777,size={size}")
        for path, fd in sources:
            if not os.path.exists(path):  # under a cover: a mount point on the tmpfs
                os.makedirs(path, mode=0o755)
            mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)
            os.close(fd)
        if plan.hidepid:
            mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=2")
        if plan.home:
            os.chdir(plan.home)
        if then is not None:
            then()

    return confine


def probe(shown: list[str]) -> str | None:
    """Build a learner's namespace once for a throw-away process; None when it works here, else
    why not (no CAP_SYS_ADMIN, no mount namespaces: many containers)."""
    import tempfile

    plan = learner_plan(shown[0], shown)
    check = ("import os, sys; left, shown = sys.argv[1], sys.argv[2:]; "
             "assert all(os.path.exists(p) for p in shown), shown; "
             "assert not os.path.exists(left), 'the /tmp of the machine is still visible'")
    with tempfile.NamedTemporaryFile(dir="/tmp", prefix="raylab-confine-probe-") as left:
        try:
            run = subprocess.run([sys.executable, "-c", check, left.name, *plan.show],
                                 preexec_fn=preexec(plan), capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.SubprocessError) as exc:
            return f"{type(exc).__name__}: {exc}"
    return None if run.returncode == 0 else (run.stderr.strip().splitlines() or ["failed"])[-1]
