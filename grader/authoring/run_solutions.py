"""``make check``: run every solution notebook headless and print lab, status and seconds.

Run it on the room's machines before a workshop: it executes the instructor solutions top to bottom
against a real local Ray cluster, as a learner would (``--grading`` runs them the way nbgrader
does, with ``NBGRADER_EXECUTION`` set). Executed copies go to a scratch folder, never back into
the repository. Exits non-zero if any lab fails.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

from grader.grading import course


def run_notebook(path: Path, *, grading: bool, timeout: int = 600, workdir: Path | None = None,
                 hidden_tests: bool = True):
    """Execute a notebook copy; return (status, seconds, executed notebook). ``hidden_tests=False``
    runs it as a learner's finished copy runs: the hidden tests removed, as nbgrader removes them
    from the learner copy (they run only when the notebook is graded)."""
    nb = nbformat.read(path, as_version=4)
    if not hidden_tests:
        from nbgrader.preprocessors import ClearHiddenTests

        nb, _ = ClearHiddenTests().preprocess(nb, {})
    workdir = Path(workdir or tempfile.mkdtemp(prefix="raylab-check-"))
    env_backup = dict(os.environ)
    if grading:
        os.environ["NBGRADER_EXECUTION"] = "autograde"
    else:
        os.environ.pop("NBGRADER_EXECUTION", None)
    os.environ.setdefault("RAYLAB_SCRATCH", str(workdir / "scratch"))
    start = time.monotonic()
    try:
        NotebookClient(nb, timeout=timeout, kernel_name="python3",
                       resources={"metadata": {"path": str(workdir)}}).execute()
        status = "ok"
    except CellTimeoutError:
        status = "timeout"
    except DeadKernelError:
        status = "kernel died"
    except CellExecutionError as exc:
        first = str(exc).strip().splitlines()[-1][:80] if str(exc).strip() else "error"
        status = f"error: {first}"
    finally:
        os.environ.clear()
        os.environ.update(env_backup)
    return status, time.monotonic() - start, nb


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("labs", nargs="*", help="assignment ids (default: all)")
    parser.add_argument("--grading", action="store_true", help="run as nbgrader does (grading mode)")
    args = parser.parse_args(argv)
    labs = args.labs or course.labs()
    mode = "grading" if args.grading else "learner"
    print(f"{'lab':<36} {'status':<10} {'seconds':>8}   ({mode} mode)")
    failed, total = 0, 0.0
    for lab in labs:
        status, seconds, _ = run_notebook(course.solution_path(lab), grading=args.grading)
        total += seconds
        failed += status != "ok"
        print(f"{lab:<36} {status:<10} {seconds:>8.1f}", flush=True)
    print(f"{'total':<36} {'':<10} {total:>8.1f}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
