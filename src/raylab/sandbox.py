"""Run a Python snippet in its own process with a hard time limit.

Labs use this for demos that must not share the notebook's Ray cluster or that can hang by design
(a skipped ``train.report``, too few CPUs, the legacy Train implementation): the child gets its
own environment variables and its own local cluster, and the whole process group is killed at the
limit, so a cell never blocks forever.
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
