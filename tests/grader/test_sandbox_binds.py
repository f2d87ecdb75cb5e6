"""What the grading sandbox shows of the course (grader/grading/isolation.py): the course's Python
and the raylab package learner code imports, never the course root where the answer key lives.

The grader and raylab are one editable install (pyproject.toml) whose import finder maps each
package to its folder, so neither folder is on the course Python's sys.path: the sandbox asks a
fresh interpreter where raylab lives and binds that folder alone."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import grader
import raylab
from grader.grading import course, isolation

# Run by a fresh interpreter: can it import what hidden tests use, and what can it see of the course?
PROBE = r'''
import importlib.util, json, os, sys
root, key = sys.argv[1], sys.argv[2]
import raylab, raylab.checks
def read(path):
    try:
        with open(path, 'rb') as f:
            return 'READ %d bytes' % len(f.read(64))
    except OSError as exc:
        return 'refused: ' + type(exc).__name__
def listing(path):
    try:
        return sorted(os.listdir(path))
    except OSError as exc:
        return 'refused: ' + type(exc).__name__
print(json.dumps({"raylab": os.path.dirname(raylab.__file__), "checks": raylab.checks.__name__,
                  "grader": importlib.util.find_spec("grader") is not None,
                  "key": read(key), "pyproject": read(os.path.join(root, "pyproject.toml")),
                  "git": read(os.path.join(root, ".git", "HEAD")),
                  "root": listing(root), "solutions": listing(os.path.join(root, "solutions"))}))
'''


def _report(argv: list[str]) -> dict:
    key = course.solution_path(course.labs()[0])
    done = subprocess.run([*argv, sys.executable, "-c", PROBE, str(course.ROOT), str(key)], cwd="/",
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.splitlines()[-1])


def _inside(path: str, folders: list[str]) -> bool:
    return any(path == f or path.startswith(f + "/") for f in folders)


def test_the_binds_hold_raylab_and_neither_the_grader_nor_the_course_root():
    binds = isolation.python_binds()
    assert _inside(str(Path(raylab.__file__).resolve().parent), binds), binds
    assert not _inside(str(Path(grader.__file__).resolve().parent), binds), binds
    assert not [b for b in binds if _inside(str(course.ROOT), [b])], binds


def test_binds_refuse_a_python_whose_path_holds_the_course_root():
    report = {"path": [], "packages": {"raylab": [str(Path(raylab.__file__).resolve().parent)]}}
    assert isolation.binds_from(report)  # the course's own layout is accepted
    for shown in (course.ROOT, course.ROOT.parent):
        with pytest.raises(RuntimeError, match="course root"):
            isolation.binds_from({**report, "path": [str(shown)]})


# Skipped only where the sandbox cannot run at all: where it can, a probe that fails (raylab not
# importable inside, say) is a failure here, not a silent grading without the sandbox.
@pytest.mark.skipif(os.geteuid() != 0 or not all(map(shutil.which, ("unshare", "setpriv"))),
                    reason="the sandbox needs root and util-linux")
def test_a_sandboxed_interpreter_imports_raylab_and_reads_nothing_of_the_course():
    assert isolation.available()[0], isolation.available()[1]
    # The control: outside the sandbox the same probe reads the answer key and lists the root.
    outside = _report([])
    assert outside["key"].startswith("READ") and "solutions" in outside["root"], outside
    work = Path(tempfile.mkdtemp(prefix="rg-binds-"))
    try:
        with isolation.Sandbox(work, isolation.Limits(memory_bytes=None, pids=None)) as sb:
            inside = _report(sb.command([]))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    assert inside["raylab"] == outside["raylab"] and inside["checks"] == "raylab.checks", inside
    assert inside["grader"] is False, inside
    for name in ("key", "pyproject", "git", "solutions"):
        assert inside[name].startswith("refused"), (name, inside)
    # Only the mount points on the way to the venv and raylab exist there, if the clone holds them.
    assert isinstance(inside["root"], str) or set(inside["root"]) <= {".venv", "src"}, inside
