"""How a submission's code is kept away from what it must not touch while it is graded.

Each submission is autograded in its own worker folder by the real ``nbgrader autograde``, which
runs as the grading user (it must read the gradebook, where the hidden tests live). The *kernel*
that executes the learner's code is started through ``grader/sandbox/kernel.sh``:

- **as an unprivileged user** (``nobody`` by default): it cannot write the gradebook, the
  autograded output or any file of the course, and cannot read the worker's root-only folders
  (the private gradebook copy, the autograded notebook with the hidden tests restored);
- **in a private mount namespace** in which ``solutions/``, the course's grading folders, the class's
  submission folder and the class's output folder are covered by empty, unreadable mounts;
- **in a network namespace with only loopback** (the whole worker runs there): the local Ray
  cluster the lab starts is unreachable from any other machine and cannot reach out.

What this does not protect: the learner's code runs in the same kernel as the test cells, so it can
see the test code at the moment it runs and interfere with it in-process. The autograde pipeline
adds a per-run token to every test cell and zeroes (and flags) a test cell that neither finished nor
showed an error (``grader/nbgrader_ext.py``), which defeats the common trick of swallowing
exceptions, but an adversary inside the kernel can still, for example, monkeypatch the checks a
test cell calls. Grades of flagged submissions deserve a look. CPU time and memory are bounded only
by the per-submission wall-clock limit and the machine.

Isolation needs root (or unprivileged user namespaces) and ``unshare``/``setpriv`` from
util-linux. Where that is missing the grader still runs, without the sandbox, and says so.
"""
from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path

KERNEL_SH = Path(__file__).resolve().parent / "sandbox" / "kernel.sh"
ENTER_SH = Path(__file__).resolve().parent / "sandbox" / "enter.sh"
KERNEL_NAME = "raylab-sandboxed"
SANDBOX_IDS = os.environ.get("RAYLAB_SANDBOX_USER", "65534:65534")


def expose_spec() -> str:
    """``BLOCKED:PREFIX`` when the interpreter sits below a folder others cannot traverse.

    pyenv under ``/root`` (mode 0700) is the common case: the sandbox user could not even start
    the course's Python. enter.sh then covers BLOCKED with a tmpfs holding only PREFIX.
    """
    prefix = Path(sys.base_prefix).resolve()
    for parent in reversed(prefix.parents):
        if parent != Path("/") and not os.stat(parent).st_mode & 0o001:
            return f"{parent}:{prefix}"
    return ""


def sandbox_env(home: Path, hide: list[str]) -> dict:
    return {"RAYLAB_SANDBOX_HOME": str(home), "RAYLAB_SANDBOX_PYTHON": sys.executable,
            "RAYLAB_SANDBOX_HIDE": ":".join(hide), "RAYLAB_SANDBOX_EXPOSE": expose_spec(),
            "RAYLAB_SANDBOX_USER": SANDBOX_IDS}


@functools.lru_cache(maxsize=1)
def available() -> tuple[bool, str]:
    """Whether the kernel sandbox works here, and why not if it does not.

    The probe runs the course's Python the way a kernel and its Ray workers do (a child process
    that execs the interpreter again), as the sandbox user.
    """
    if os.geteuid() != 0:
        return False, "not running as root: submissions run as the grading user (no sandbox)"
    import tempfile

    home = Path(tempfile.mkdtemp(prefix="rg-probe-"))
    try:
        os.chmod(home, 0o755)
        chown_tree(home)
        code = ("import subprocess, sys, platform; import raylab; "
                "subprocess.run([sys.executable, '-c', 'import ray'], check=True); "
                "print(platform.python_version())")
        env = dict(os.environ, **sandbox_env(home, []))
        proc = subprocess.run(["/bin/sh", str(ENTER_SH), sys.executable, "-c", code], env=env,
                              capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"sandbox probe failed: {exc}"
    finally:
        import shutil

        shutil.rmtree(home, ignore_errors=True)
    import platform

    if proc.returncode != 0 or proc.stdout.strip() != platform.python_version():
        return False, ("the sandbox user cannot run the course's Python: "
                       f"{(proc.stderr or proc.stdout).strip()[-300:]}")
    return True, f"kernel runs as uid:gid {SANDBOX_IDS} in private mount and network namespaces"


def write_kernelspec(jupyter_dir: Path) -> None:
    """A kernelspec that starts the course's Python through the sandbox launcher."""
    spec_dir = jupyter_dir / "kernels" / KERNEL_NAME
    spec_dir.mkdir(parents=True, exist_ok=True)
    (spec_dir / "kernel.json").write_text(json.dumps({
        "argv": ["/bin/sh", str(KERNEL_SH), "{connection_file}"],
        "display_name": "Python 3 (raylab grading sandbox)",
        "language": "python",
    }))


def chown_tree(path: Path) -> None:
    uid, gid = (int(x) for x in SANDBOX_IDS.split(":"))
    for root, dirs, files in os.walk(path):
        os.chown(root, uid, gid)
        for name in files:
            os.chown(os.path.join(root, name), uid, gid)
