"""`make new-lab` in a fresh clone of the course, then `make test-fast` there: a new lab, still in
progress, leaves the quick tier green (what docs/authoring.md promises an author), and the clone
goes away with the test's folder."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from grader.grading import course

VENV = Path(sys.executable).parent.parent
STAMP = VENV / ".installed"


def _make(clone: Path, *args: str, timeout: int) -> subprocess.CompletedProcess:
    # -o: take the environment as installed (this test's own), so make does not reinstall the
    # course package from the clone into it; the pytest of this run must not leak into the next.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "RAYLAB_PROOF_PLAN"))}
    return subprocess.run(["make", "-C", str(clone), "-o", str(STAMP), f"VENV={VENV}", *args],
                          capture_output=True, text=True, timeout=timeout, env=env)


@pytest.mark.slow
def test_a_new_lab_leaves_the_quick_tier_green(tmp_path):
    assert STAMP.exists(), "run make setup first"
    clone = tmp_path / "course"
    subprocess.run(["git", "clone", "-q", str(course.ROOT), str(clone)], check=True, timeout=300)
    made = _make(clone, "new-lab", "NAME=11_probe_lab", timeout=300)
    assert made.returncode == 0, made.stdout[-2000:] + made.stderr[-2000:]
    assert (clone / "solutions" / "11_probe_lab" / "11_probe_lab.ipynb").exists()
    quick = _make(clone, "test-fast", timeout=1200)
    tail = (quick.stdout + quick.stderr)[-3000:]
    assert quick.returncode == 0, tail
    assert " passed" in tail and " failed" not in tail, tail
