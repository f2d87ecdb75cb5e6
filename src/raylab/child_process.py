"""Run code in a child process with a hard time limit.

Labs use this for demos that must not share the notebook's process or that can hang by design
(a skipped ``train.report``, too few CPUs, the legacy Train implementation): the child gets its
own environment variables, and the whole process group is killed at the limit, so a cell never
blocks forever. :func:`run_snippet` runs a piece of source code (with its own local cluster, or
none); :func:`run_in_child` calls a Python function (pickled) that joins this process's cluster.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass


@dataclass
class SnippetResult:
    returncode: int | None
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool

    def tail(self, lines: int = 15, stream: str = "stdout") -> str:
        return "\n".join(getattr(self, stream).splitlines()[-lines:])


def run_snippet(code: str, *, timeout_s: float, env: dict | None = None,
                cwd: str | None = None) -> SnippetResult:
    """Run ``code`` with this interpreter in a new process session; kill the session at ``timeout_s``.

    ``env`` entries are added to (not substituted for) the current environment; a value of
    ``None`` removes that variable.
    """
    child_env = dict(os.environ)
    for key, value in (env or {}).items():
        if value is None:
            child_env.pop(key, None)
        else:
            child_env[key] = str(value)
    # The child is a plain script: it must not believe it runs under nbgrader's kernel.
    child_env.setdefault("PYTHONUNBUFFERED", "1")
    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], env=child_env, cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    timed_out = False
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc.pid, signal.SIGTERM)
        try:
            out, err = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            _kill_group(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
    return SnippetResult(returncode=proc.returncode, stdout=out, stderr=err,
                         seconds=round(time.monotonic() - start, 2), timed_out=timed_out)


def _kill_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        pass


# --- a function called in a child process --------------------------------------------------------

_CHILD = """
import os, sys, traceback
import ray
from ray import cloudpickle
with open(os.environ["RAYLAB_CHILD_IN"], "rb") as f:
    fn = cloudpickle.load(f)
if os.environ.get("RAYLAB_CHILD_ADDRESS"):
    ray.init(address=os.environ["RAYLAB_CHILD_ADDRESS"],
             log_to_driver=os.environ.get("RAYLAB_CHILD_LOG_TO_DRIVER") == "1")
try:
    out = {"value": fn(), "error": None}
except BaseException as exc:
    out = {"value": None, "error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
with open(os.environ["RAYLAB_CHILD_OUT"], "wb") as f:
    cloudpickle.dump(out, f)
"""


@dataclass
class ChildRun:
    """What :func:`run_in_child` brings back: ``fn``'s return value (or its error) and the process."""

    value: object
    error: str | None
    timed_out: bool
    seconds: float
    output: str  # the child's stdout and stderr, for when something unexpected happened


def run_in_child(fn, *, timeout_s: float, env: dict | None = None, connect: bool = True,
                 log_to_driver: bool = False) -> ChildRun:
    """Call ``fn()`` in a new Python process and kill that process after ``timeout_s``.

    ``fn`` is shipped with Ray's cloudpickle, so a function defined in a notebook works, and the
    child connects to this process's Ray cluster (``connect=True``) instead of starting its own.
    ``env`` sets environment variables in the child only, e.g. ``RAY_TRAIN_COLLECTIVE_TIMEOUT_S``:
    Ray Train reads them in the driver and forwards them to the controller and workers it starts,
    so the notebook's own runs keep their settings. The return value must be picklable. With
    ``log_to_driver=True`` the log lines of the child's Ray processes (the Train controller's among
    them) end up in ``ChildRun.output``.
    """
    import tempfile

    import ray
    from ray import cloudpickle

    with tempfile.TemporaryDirectory(prefix="raylab-child-") as tmp:
        src, dst = os.path.join(tmp, "fn.pkl"), os.path.join(tmp, "out.pkl")
        with open(src, "wb") as f:
            cloudpickle.dump(fn, f)
        child_env = {"RAYLAB_CHILD_IN": src, "RAYLAB_CHILD_OUT": dst,
                     "RAYLAB_CHILD_LOG_TO_DRIVER": "1" if log_to_driver else "0",
                     # what this process can import by name, the child can too
                     "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        if connect:
            child_env["RAYLAB_CHILD_ADDRESS"] = ray.get_runtime_context().gcs_address
        child_env.update(env or {})
        res = run_snippet(_CHILD, timeout_s=timeout_s, env=child_env)
        out = {"value": None, "error": "the child process ended without a result"}
        if os.path.exists(dst):
            with open(dst, "rb") as f:
                out = cloudpickle.load(f)
        if res.timed_out:
            out["error"] = f"killed after {timeout_s:g} s"
    return ChildRun(value=out["value"], error=out["error"], timed_out=res.timed_out,
                    seconds=res.seconds, output=(res.stdout + res.stderr)[-20000:])
