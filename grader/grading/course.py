"""The course as nbgrader sees it: labs, paths, and thin wrappers over the real nbgrader CLI.

Everything here shells out to ``nbgrader`` from the repository root, so the tests exercise exactly
the commands an instructor runs. A grading work folder (submissions, autograded copies, feedback,
gradebook) is selected with ``RAYLAB_GRADING_DIR``; tests use a temporary one.
"""
from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS = ROOT / "solutions"
NOTEBOOKS = ROOT / "notebooks"
# What an author keeps beside a lab's notebook that nbgrader never copies: not into the learner's
# release, not beside a submission while it is graded (grader/grading/nbgrader_config.py ignores it).
MUTANTS_FILE = "mutants.yaml"
AUTHOR_ONLY = (MUTANTS_FILE,)


def labs() -> list[str]:
    """Assignment ids in course order (``00_lab_setup``, ``01_...``, ...)."""
    return sorted(p.name for p in SOLUTIONS.iterdir()
                  if p.is_dir() and (p / f"{p.name}.ipynb").exists())


def solution_path(lab: str) -> Path:
    return SOLUTIONS / lab / f"{lab}.ipynb"


def mutants_path(lab: str) -> Path:
    """The lab's wrong and right answers and its requirements (grader/proof/mutants.py)."""
    return SOLUTIONS / lab / MUTANTS_FILE


def release_path(lab: str) -> Path:
    return NOTEBOOKS / lab / f"{lab}.ipynb"


def bin_path(name: str) -> str:
    """A console script of the environment this Python runs in (the course venv)."""
    candidate = Path(sys.executable).parent / name
    return str(candidate) if candidate.exists() else name


@functools.lru_cache(maxsize=1)
def can_isolate_network() -> bool:
    """Whether ``unshare --net`` works here (root, or user namespaces enabled)."""
    for cmd in (["unshare", "--net", "true"], ["unshare", "--user", "--map-root-user", "--net", "true"]):
        try:
            if subprocess.run(cmd, capture_output=True, timeout=10).returncode == 0:
                return True
        except (OSError, subprocess.TimeoutExpired):
            continue
    return False


def net_isolated(cmd: list[str]) -> list[str]:
    """Wrap ``cmd`` so it runs in a fresh network namespace with only loopback up.

    A Ray 2.58.0 local cluster listens on every interface without authentication; inside the
    namespace there is no interface but loopback, so nothing outside this machine can reach it.
    """
    if not can_isolate_network():
        return cmd
    unshare = ["unshare", "--net"] if os.geteuid() == 0 else \
        ["unshare", "--user", "--map-root-user", "--net"]
    script = 'ip link set lo up 2>/dev/null || true; exec "$@"'
    return unshare + ["sh", "-c", script, "sh"] + cmd


@dataclass
class NbgraderRun:
    returncode: int
    output: str


def nbgrader(*args: str, grading_dir: Path | None = None, env: dict | None = None,
             isolate_network: bool = False, timeout: float | None = None) -> NbgraderRun:
    """Run ``nbgrader <args>`` from the repository root (where nbgrader_config.py is)."""
    run_env = dict(os.environ)
    run_env.setdefault("RAYLAB_RUN_ID", uuid.uuid4().hex)
    if grading_dir is not None:
        run_env["RAYLAB_GRADING_DIR"] = str(Path(grading_dir).resolve())
        run_env.setdefault("RAYLAB_SCRATCH", str(Path(grading_dir).resolve() / "scratch"))
    # nbgrader starts kernels with the "python3" kernelspec: make it this environment's Python.
    run_env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{run_env.get('PATH', '')}"
    run_env.update(env or {})
    cmd = [bin_path("nbgrader"), *args]
    if isolate_network:
        cmd = net_isolated(cmd)
    proc = subprocess.run(cmd, cwd=ROOT, env=run_env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=timeout)
    return NbgraderRun(proc.returncode, proc.stdout)


def _source_arg(source_dir: Path | None) -> list[str]:
    """Point nbgrader at another source folder (``<source_dir>/<lab>/<lab>.ipynb``)."""
    return [] if source_dir is None else [f"--CourseDirectory.source_directory={Path(source_dir).resolve()}"]


def generate(lab: str, grading_dir: Path, release_dir: Path | None = None,
             source_dir: Path | None = None) -> NbgraderRun:
    """``nbgrader generate_assignment``: learner copy plus the gradebook record of every cell."""
    args = ["generate_assignment", lab, "--force", *_source_arg(source_dir)]
    if release_dir is not None:
        args.append(f"--CourseDirectory.release_directory={Path(release_dir).resolve()}")
    return nbgrader(*args, grading_dir=grading_dir)


def submit(lab: str, student: str, notebook: Path, grading_dir: Path) -> Path:
    """Place a notebook where ``nbgrader autograde`` looks for a submission."""
    dest = Path(grading_dir) / "submitted" / student / lab / f"{lab}.ipynb"
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(notebook, dest)
    return dest


def cell_scores(lab: str, student: str, grading_dir: Path) -> dict[str, tuple[float | None, float]]:
    """``{grade_id: (auto_score, max_score)}`` for one submission, read from the SQLite gradebook."""
    from nbgrader.api import Gradebook

    url = "sqlite:///" + str(Path(grading_dir).resolve() / "gradebook.db")
    with Gradebook(url) as gb:
        sub = gb.find_submission_notebook(lab, lab, student)
        return {g.name: (g.auto_score, g.max_score) for g in sub.grades}
