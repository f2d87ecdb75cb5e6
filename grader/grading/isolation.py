"""The sandbox a submission's code runs in while it is graded (the allow-list design).

``nbgrader autograde`` runs as the grading user (it must read the gradebook, where the hidden tests
live). The *kernel* that executes the learner's code, the kernel's Ray cluster and everything they
start run through ``grader/grading/sandbox/enter.sh``:

- **a root file system built from an allow-list**: a fresh tmpfs holding read-only binds of the
  system folders, the Python installation, the course's virtual environment and the ``raylab``
  package, plus its own home, work folder, ``/tmp`` and ``/dev/shm``. Nothing else exists there:
  no ``.git``, no ``solutions/``, no gradebook, no other copy of the course, no other sandbox;
- **its own PID namespace** (the kernel is PID 1: when it exits, every process it left behind is
  killed), **IPC namespace** and **mount namespace**; the whole grading worker (nbgrader included)
  runs in a **network namespace with loopback only** (``grader/grading/autograde.py``);
- **its own user** (a uid leased for this submission only, never shared with another submission
  being graded at the same time on this machine), with no capabilities and ``no_new_privs``;
- **its own control group** (``grader/grading/cgroups.py``): memory and process-count limits where the
  machine allows them, and the list of its processes, from which nothing can escape;
- **an environment built from an allow-list** (:func:`kernel_env`): nothing of the instructor's
  environment (tokens, credentials) reaches learner code; IPython history is off.

When the submission is done the grader kills whatever is left in its group; the tmpfs folders
disappear with the mount namespace. What this does not protect: learner code and test cells share
one kernel (see ``grader/grading/tamper_scan.py`` and README's guarantees).

The sandbox needs root and util-linux (``unshare``, ``setpriv``, ``pivot_root``). Where that is
missing the grader still runs, without it, and says so.
"""
from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import os
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from grader.grading import course
from grader.grading.cgroups import SubmissionCgroup

ENTER_SH = Path(__file__).resolve().parent / "sandbox" / "enter.sh"
KERNEL_NAME = "raylab-sandboxed"
HOME = "/home/learner"
# uids leased to running submissions: UID_BASE .. UID_BASE + UID_SLOTS - 1 (no account needed;
# the sandbox writes its own /etc/passwd). Above the ranges useradd and /etc/subuid hand out.
UID_BASE = int(os.environ.get("RAYLAB_SANDBOX_UID_BASE", "610000"))
UID_SLOTS = 4096
LEASE_DIR = Path("/run/raylab-sandbox") if os.access("/run", os.W_OK) else Path(tempfile.gettempdir()) / "raylab-sandbox"

GiB = 1024 ** 3
# Folders and files of the host the sandbox sees (read-only), besides the Python environment.
SYSTEM_BINDS = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/sys",
                "/etc/alternatives", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
                "/etc/localtime", "/etc/hosts", "/etc/host.conf", "/etc/nsswitch.conf",
                "/etc/gai.conf", "/etc/ssl", "/etc/ca-certificates", "/etc/mime.types",
                "/etc/os-release", "/etc/protocols", "/etc/services", "/etc/matplotlibrc",
                "/etc/fonts"]
# Environment variables passed from the grader to learner code (names, then prefixes): the
# course's bounded Ray Train limits (tests and CI set them) and the hint switch. Nothing else.
PASSED_NAMES = ("RAYLAB_HINTS", "TZ")
PASSED_PREFIXES = ("RAY_TRAIN_",)


@dataclass(frozen=True)
class Limits:
    """Per-submission limits. Memory covers the tmpfs folders too (their pages are charged to
    the group). Lab 07, the heaviest, peaks at 4.9 GiB of Ray processes on 2 cores."""
    memory_bytes: int | None = 8 * GiB
    pids: int | None = 4096  # threads count: a raylet has ~50, each Ray worker 20-40
    disk_bytes: int = 2 * GiB  # home, work folder, /tmp (Ray's session logs live there)
    shm_bytes: int = 1 * GiB  # Ray's object store (the labs ask for 80 MiB)


# The course's packages learner code imports (its kernel, its Ray workers): raylab only. The
# grader's package stays outside: nothing a kernel runs imports it.
LEARNER_PACKAGES = ("raylab",)
# What a fresh interpreter reports: its sys.path, and where each learner package lives. The
# editable install maps each course package to its folder with an import finder, so the folders
# are not on sys.path; the finder says where they are.
_FRESH = ("import importlib.util, json, sys\n"
          "found = {n: list(importlib.util.find_spec(n).submodule_search_locations) for n in %r}\n"
          "print(json.dumps({'path': sys.path, 'packages': found}))" % (LEARNER_PACKAGES,))


@functools.lru_cache(maxsize=1)
def python_binds() -> list[str]:
    """What the sandbox shows of the course's Python (:func:`binds_from`), asked of a fresh
    interpreter, not this one: the grader's own ``sys.path`` may hold the course root (the current
    folder of ``python -m``), which the sandbox must not see."""
    out = subprocess.run([sys.executable, "-c", _FRESH], env={"PATH": "/usr/bin:/bin"}, cwd="/",
                         capture_output=True, text=True, check=True).stdout
    return binds_from(json.loads(out))


def binds_from(fresh: dict) -> list[str]:
    """The interpreter, the virtual environment, every folder on the fresh interpreter's
    ``sys.path`` outside them and the folders of :data:`LEARNER_PACKAGES` (``src/raylab``), from
    its report ``{"path": [...], "packages": {name: [folder, ...]}}``. Refuses a list that would
    show the course root (``solutions/``, the ledger, the clone's git history)."""
    paths = {str(Path(sys.base_prefix).resolve()), str(Path(sys.prefix).resolve())}
    entries = fresh["path"] + [loc for locs in fresh["packages"].values() for loc in locs]
    for entry in entries:
        if entry and Path(entry).is_dir() and Path(entry).resolve() != Path("/"):
            p = str(Path(entry).resolve())
            if not any(p == q or p.startswith(q + "/") for q in paths):
                paths.add(p)
    shown = sorted(p for p in paths if course.ROOT == Path(p) or Path(p) in course.ROOT.parents)
    if shown:
        raise RuntimeError(f"the sandbox would show the course root {course.ROOT} through {shown}")
    return sorted(paths)


def kernel_env(extra: dict | None = None) -> dict:
    """The complete environment of learner code (built, not filtered from the grader's)."""
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
           "HOME": HOME, "USER": "learner", "LOGNAME": "learner", "LANG": "C.UTF-8",
           "LC_ALL": "C.UTF-8", "TMPDIR": "/tmp", "PYTHONUNBUFFERED": "1",
           "NBGRADER_EXECUTION": "autograde", "RAYLAB_SCRATCH": f"{HOME}/scratch",
           "MPLCONFIGDIR": f"{HOME}/.mpl", "IPYTHONDIR": f"{HOME}/.ipython"}
    env.update({k: v for k, v in os.environ.items()
                if k in PASSED_NAMES or k.startswith(PASSED_PREFIXES)})
    env.update(extra or {})
    return env


@contextlib.contextmanager
def leased_uid():
    """A uid no other running submission on this machine holds (an flock per uid)."""
    LEASE_DIR.mkdir(mode=0o700, parents=True, exist_ok=True)
    start = int.from_bytes(os.urandom(2), "little") % UID_SLOTS
    for k in range(UID_SLOTS):
        uid = UID_BASE + (start + k) % UID_SLOTS
        fh = open(LEASE_DIR / f"{uid}.lock", "w")
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.close()
            continue
        try:
            yield uid
        finally:
            fh.close()
        return
    raise RuntimeError("no free sandbox uid")


class Sandbox:
    """The sandbox of one submission; ``with Sandbox(work, limits) as sb:`` then
    ``sb.write_kernelspec(...)`` or ``sb.command([...])``; leftovers are killed on exit."""

    def __init__(self, work: Path, limits: Limits = Limits(), env: dict | None = None):
        self.work, self.limits, self.extra_env = Path(work), limits, env
        self.leftover = 0
        self.oom = False

    def __enter__(self) -> "Sandbox":
        self._stack = contextlib.ExitStack()
        self.uid = self._stack.enter_context(leased_uid())
        self.cgroup = self._stack.enter_context(
            SubmissionCgroup(memory_bytes=self.limits.memory_bytes, pids=self.limits.pids))
        self.root = self.work / "sandbox-root"
        self.root.mkdir(mode=0o700)
        env_file, self.config = self.work / "sandbox-env.sh", self.work / "sandbox.sh"
        pairs = [f"{k}={v}" for k, v in kernel_env(self.extra_env).items()]
        env_file.write_text("set -- " + " ".join(shlex.quote(p) for p in pairs) + ' "$@"\n')
        binds = [p for p in SYSTEM_BINDS + python_binds() if os.path.lexists(p)]
        values = {"SB_ROOT": str(self.root), "SB_BINDS": ":".join(binds), "SB_UID": self.uid,
                  "SB_GID": self.uid, "SB_CGROUPS": ":".join(self.cgroup.join_paths),
                  "SB_DISK": self.limits.disk_bytes, "SB_SHM": self.limits.shm_bytes,
                  "SB_ENV": str(env_file)}
        self.config.write_text("".join(f"{k}={shlex.quote(str(v))}\n" for k, v in values.items()))
        return self

    @property
    def missing_limits(self) -> list[str]:
        return self.cgroup.missing

    def command(self, argv: list[str], connection_file: str | None = None) -> list[str]:
        conn = ["--conn", connection_file] if connection_file else []
        return ["/bin/sh", str(ENTER_SH), str(self.config), *conn, *argv]

    def write_kernelspec(self, jupyter_dir: Path) -> None:
        """The kernel nbgrader starts: the course's Python, inside this sandbox, no history."""
        argv = self.command([sys.executable, "-m", "ipykernel_launcher", "-f", f"{HOME}/.kernel.json",
                             "--HistoryManager.enabled=False"], connection_file="{connection_file}")
        _write_spec(jupyter_dir, argv, "Python 3 (raylab grading sandbox)")

    def __exit__(self, *exc) -> None:
        try:
            self.leftover = self.cgroup.kill_all(grace_s=2.0)
            self.oom = self.cgroup.oom_killed()
        finally:
            self._stack.close()


def write_plain_kernelspec(jupyter_dir: Path, extra_env: dict | None = None) -> None:
    """Without the sandbox (no root): at least the allow-listed environment and no history."""
    env = kernel_env(extra_env)
    env.update(HOME=os.environ.get("HOME", "/tmp"), RAYLAB_SCRATCH=extra_env.get("RAYLAB_SCRATCH", "")
               if extra_env else "", IPYTHONDIR=str(jupyter_dir / "ipython"),
               MPLCONFIGDIR=str(jupyter_dir / "mpl"), TMPDIR=tempfile.gettempdir())
    argv = ["env", "-i", *[f"{k}={v}" for k, v in env.items() if v],
            sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}",
            "--HistoryManager.enabled=False"]
    _write_spec(jupyter_dir, argv, "Python 3 (raylab grading, no sandbox)")


def _write_spec(jupyter_dir: Path, argv: list[str], name: str) -> None:
    spec_dir = jupyter_dir / "kernels" / KERNEL_NAME
    spec_dir.mkdir(parents=True, exist_ok=True)
    (spec_dir / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": name,
                                                      "language": "python"}))


@functools.lru_cache(maxsize=1)
def available() -> tuple[bool, str]:
    """Whether the sandbox works here, and why not if it does not.

    The probe runs the course's Python the way a kernel and its Ray workers do (a child process
    that execs the interpreter again and imports Ray), inside a sandbox.
    """
    if os.geteuid() != 0:
        return False, "not running as root: submissions run as the grading user (no sandbox)"
    import platform
    import shutil

    work = Path(tempfile.mkdtemp(prefix="rg-probe-"))
    try:
        with Sandbox(work, Limits(memory_bytes=None, pids=None)) as sb:
            code = ("import subprocess, sys, platform, os; import raylab; "
                    "subprocess.run([sys.executable, '-c', 'import ray'], check=True); "
                    "print(platform.python_version(), os.getpid())")
            proc = subprocess.run(sb.command([sys.executable, "-c", code]), capture_output=True,
                                  text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired, RuntimeError) as exc:
        return False, f"sandbox probe failed: {exc}"
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if proc.returncode != 0 or proc.stdout.split() != [platform.python_version(), "1"]:
        return False, f"the sandbox cannot run the course's Python: {(proc.stderr or proc.stdout).strip()[-300:]}"
    limits = ", ".join(sb.missing_limits)
    return True, ("allow-list root, own PID/IPC/mount namespaces, own uid per submission, "
                  "loopback-only network" + (f"; not enforced here: {limits}" if limits else ""))
