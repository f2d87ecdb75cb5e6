"""The one local Ray cluster a lab runs on, and the lab's setup/teardown.

Every lab starts the same cluster the chapter uses: ``address="local"``, 2 logical CPUs, no
dashboard and an 80 MiB object store. In grading mode (nbgrader sets ``NBGRADER_EXECUTION``)
the cluster is started quietly: worker output is not forwarded and the kernel's stderr is routed
to stdout, because nbgrader scores a test cell 0 as soon as anything appears on stderr, and Ray
prints log lines from background threads into whichever cell happens to be running.
"""
from __future__ import annotations

import contextlib
import getpass
import logging
import os
import random
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from raylab.i18n import _
from raylab.processes import descendant_pids, kill_processes, new_descendants

RAY_VERSION = "2.58.0"
CLUSTER_CPUS = 2
OBJECT_STORE_BYTES = 80 * 1024 * 1024  # the chapter's size; Ray refuses less than 75 MiB

# Measured on 2 cores (make bench-startup, 4 Dec 2026): an empty 2-worker fit() takes about 8 s
# with these and 12 s with Ray's defaults; polling every 0.1 s instead of 0.5 s saved 1.2 s. They are
# read by the Train controller and workers (Ray forwards RAY_TRAIN_* variables to them). The
# preemption watcher only matters on spot/preemptible nodes, which a laptop is not.
FAST_LOCAL_TRAIN_ENV = {
    "RAY_TRAIN_HEALTH_CHECK_INTERVAL_S": "0.1",
    "RAY_TRAIN_ENABLE_PREEMPTION_WATCHER": "0",
    "RAY_TRAIN_METRICS_ENABLED": "0",
}


@contextlib.contextmanager
def env_vars(**values):
    """Set environment variables for the ``with`` block only (Ray Train reads several of its
    limits from the driver's environment when a run starts); the old values come back after."""
    old = {key: os.environ.get(key) for key in values}
    os.environ.update({key: str(value) for key, value in values.items()})
    try:
        yield
    finally:
        for key, value in old.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def grading_mode() -> bool:
    """True while nbgrader executes the notebook (autograde or validate)."""
    return bool(os.environ.get("NBGRADER_EXECUTION"))


def scratch_dir(*parts: str, fresh: bool = False) -> Path:
    """An absolute folder for Train/Tune results and other files a lab writes.

    ``RAYLAB_SCRATCH`` wins (the grader gives every submission its own); otherwise a per-user
    folder under the system temp dir. ``fresh=True`` adds a unique suffix so re-running a cell
    never silently resumes an earlier run (Train resumes a run whose name and storage path match).
    """
    base = os.environ.get("RAYLAB_SCRATCH") or os.path.join(
        tempfile.gettempdir(), f"raylab-{getpass.getuser()}")
    path = Path(base, *parts)
    if fresh:
        path = path.with_name(f"{path.name}-{time.strftime('%H%M%S')}-{uuid.uuid4().hex[:6]}")
    path.mkdir(parents=True, exist_ok=True)
    return path.resolve()


def route_stderr_to_stdout() -> None:
    """Send everything this process writes to stderr to stdout instead.

    Used in grading mode only. Python-level writers (``warnings``, logging handlers already
    created, ``print(file=sys.stderr)``) are re-pointed, and file descriptor 2 is duplicated from
    1 so C++ log lines from Ray's core worker land on stdout too. Errors still reach nbgrader as
    error outputs: a traceback is never a stderr stream.
    """
    old_streams = {id(sys.stderr), id(sys.__stderr__)}
    sys.stderr = sys.stdout
    loggers = [logging.getLogger()] + [
        lg for lg in logging.Logger.manager.loggerDict.values() if isinstance(lg, logging.Logger)]
    for lg in loggers:
        for handler in lg.handlers:
            if isinstance(handler, logging.StreamHandler) and id(handler.stream) in old_streams:
                handler.setStream(sys.stdout)
    try:
        sys.stdout.flush()
        os.dup2(1, 2)
    except (OSError, ValueError, AttributeError):  # no real fds (some test runners): Python-level is enough
        pass


def start_cluster(num_cpus: int = CLUSTER_CPUS, *, resources: dict | None = None,
                  object_store_bytes: int = OBJECT_STORE_BYTES, quiet: bool | None = None,
                  **init_kwargs):
    """Start (or restart) the course's local Ray cluster and return ``ray.init``'s context.

    The cluster listens on several TCP ports on every network interface and, by default, asks
    for no authentication: on a shared network, run the labs behind a firewall or in a
    container/VM, and set ``RAYLAB_RAY_AUTH=token`` to refuse clients without the token
    (:func:`use_token_auth`). The grader runs each submission in a network namespace with
    loopback only.
    """
    quiet = grading_mode() if quiet is None else quiet
    if os.environ.get(TOKEN_AUTH_SWITCH, "").lower() == "token":
        use_token_auth()
        _require_token_mode()
    for key, value in FAST_LOCAL_TRAIN_ENV.items():
        os.environ.setdefault(key, value)
    if quiet:
        route_stderr_to_stdout()
    import ray

    if ray.is_initialized():  # re-running a setup cell: start clean rather than fail
        ray.shutdown()
    init_kwargs.setdefault("log_to_driver", not quiet)
    if quiet:
        init_kwargs.setdefault("logging_level", logging.WARNING)
    kwargs = dict(address="local", num_cpus=num_cpus, include_dashboard=False,
                  object_store_memory=object_store_bytes, resources=resources, **init_kwargs)
    for attempt in range(1, START_ATTEMPTS + 1):
        before = descendant_pids()
        try:
            with env_vars(**own_address_env()):
                return ray.init(**kwargs)
        except Exception as exc:
            # Whatever the failure, the half-started processes are ours to remove: left running
            # they hold ports and memory until the kernel exits.
            ray.shutdown()
            kill_processes(new_descendants(before))
            # Ray 2.58.0 gives its raylet a fixed 30 s to register with the GCS. On a busy 2-core
            # machine (a class being graded, a laptop doing something else) that can run out, and
            # a second try usually fits.
            if "timed out during startup" not in str(exc) or attempt == START_ATTEMPTS:
                raise
            print("[raylab] " + _("Ray's node did not register within 30 s (busy machine?); starting it "
                                  "again (attempt {attempt} of {attempts})").format(
                      attempt=attempt + 1, attempts=START_ATTEMPTS), flush=True)


START_ATTEMPTS = 2

# Ray Train's placement-group cleaner (and any Ray client given no address) looks for "the" cluster
# by scanning the machine's process table for GCS servers. With another cluster on the machine
# (another learner, a grader) it dies with "Found multiple active Ray instances: {...}", naming the
# other users' clusters, and its traceback reaches the notebook late, in whatever cell runs next
# (measured on the shared 2-core machine, 6 Dec 2026). Ray reads RAY_ADDRESS first, so the cluster's
# processes get this cluster's address, on a GCS port chosen here (RAY_GCS_SERVER_PORT). Only while
# ray.init starts them: they copy the environment then, and the kernel's own environment is left as
# it was (ray.init(address="local") ignores RAY_ADDRESS; a later subprocess behaves as before).
def own_address_env() -> dict[str, str]:
    """RAY_ADDRESS and RAY_GCS_SERVER_PORT for the cluster about to start, on a free port."""
    import socket

    with socket.socket() as probe:
        probe.bind(("", 0))
        port = probe.getsockname()[1]
    # A loopback host: Ray resolves it to the node's own address (the GCS listens on every interface).
    return {"RAY_GCS_SERVER_PORT": str(port), "RAY_ADDRESS": f"127.0.0.1:{port}"}


# Opt-in switch: RAYLAB_RAY_AUTH=token starts the course's clusters with Ray's token
# authentication (tests/helpers/test_ray_auth.py measures what it refuses). Off by default: the labs
# teach nothing that changes with it, and its cost was not measured on a quiet machine yet.
TOKEN_AUTH_SWITCH = "RAYLAB_RAY_AUTH"


def use_token_auth(token_path: str | os.PathLike | None = None) -> Path:
    """Turn on Ray's token authentication for clusters this process starts or joins.

    Ray reads ``RAY_AUTH_MODE`` from the environment only. The token goes in a file only its
    owner can read: left to itself, ``ray.init`` writes ``~/.ray/auth_token`` with the process's
    umask (0644 under the usual 022), readable by anyone who can enter the home folder.
    """
    import secrets

    path = Path(token_path or os.environ.get("RAY_AUTH_TOKEN_PATH")
                or Path.home() / ".ray" / "auth_token")
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    if not path.exists() or not path.read_text().strip():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_hex(32))
    os.chmod(path, 0o600)
    os.environ["RAY_AUTH_MODE"] = "token"
    os.environ["RAY_AUTH_TOKEN_PATH"] = str(path)
    return path


def _require_token_mode() -> None:
    """Ray fixes its authentication mode when ``ray`` is first imported; a switch flipped later
    would start a cluster whose own driver is refused. Say so instead."""
    from ray._raylet import AuthenticationMode, get_authentication_mode

    if get_authentication_mode() != AuthenticationMode.TOKEN:
        raise RuntimeError(_(
            "Token authentication must be on before Ray is imported: start JupyterLab with "
            "`RAYLAB_RAY_AUTH=token make lab` (it exports RAY_AUTH_MODE=token), then restart "
            "the kernel."))


def stop_cluster(wait_s: float = 15.0) -> list[dict]:
    """Shut Ray down and wait until the processes of *this* cluster are gone; return survivors.

    A local cluster's processes (GCS, raylet, workers) descend from the driver that started it,
    so other clusters on the machine (another learner, a parallel grader) are left alone.
    """
    import psutil
    import ray

    if not ray.is_initialized():  # nothing of ours to stop (e.g. a lab that never started Ray)
        return []
    ours = psutil.Process().children(recursive=True)
    ray.shutdown()
    deadline = time.monotonic() + wait_s
    while True:
        left = []
        for proc in ours:
            try:
                if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                    left.append({"pid": proc.pid, "cmdline": " ".join(proc.cmdline())[:200]})
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.2)


@dataclass
class Lab:
    """What :func:`setup` hands a notebook: where to write, and what the cluster looks like."""

    name: str
    storage: Path
    resources: dict = field(default_factory=dict)
    grading: bool = False

    def run_storage(self, label: str) -> str:
        """A fresh absolute ``storage_path`` for one Train/Tune run of this lab."""
        return str(scratch_dir(self.name, label, fresh=True))


def setup(name: str, *, num_cpus: int = CLUSTER_CPUS, resources: dict | None = None,
          seed: int = 0, start_ray: bool = True) -> Lab:
    """One call at the top of every lab: seeds, scratch folder and the local cluster."""
    from raylab import hints

    hints.install()
    random.seed(seed)
    try:
        import numpy as np

        np.random.seed(seed)
    except ImportError:  # numpy always ships with the course; keep the helper importable anyway
        pass
    lab = Lab(name=name, storage=scratch_dir(name), grading=grading_mode())
    if start_ray:
        start_cluster(num_cpus=num_cpus, resources=resources)
        import ray

        lab.resources = dict(ray.cluster_resources())
    mode = _("grading mode") if lab.grading else _("learner mode")
    cpus = lab.resources.get("CPU", 0)
    print(f"[raylab] {name}: " + _("Ray {version} ({mode}), {cpus:g} logical CPUs, scratch at {storage}").format(
        version=_ray_version(), mode=mode, cpus=cpus, storage=lab.storage))
    return lab


def teardown() -> None:
    """Last cell of every lab: stop Ray and confirm no Ray process is left behind."""
    left = stop_cluster()
    if left:
        print("[raylab] " + _("{n} Ray process(es) still running: {pids}").format(
            n=len(left), pids=", ".join(str(p["pid"]) for p in left)))
    else:
        print("[raylab] " + _("Ray is stopped; no Ray process left."))


def _ray_version() -> str:
    import ray

    return ray.__version__
