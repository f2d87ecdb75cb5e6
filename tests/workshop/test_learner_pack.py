"""`make learner-pack` (issue 17): the archive a learner outside the hub gets holds nothing of the
answer key and starts with the course's own `make setup` / `make lab` (fast: no install)."""
from __future__ import annotations

import re
import subprocess
import tarfile
from pathlib import Path

import nbformat
import pytest

from grader.authoring import learner_pack
from grader.grading import course, feedback_guard

ROOT = Path(__file__).resolve().parents[2]

MARKERS = ("BEGIN HIDDEN TESTS", "END HIDDEN TESTS", "BEGIN SOLUTION", "END SOLUTION")
_BARE_CALL = re.compile(r"[\w.]+\(\)")
_SOLUTION_BLOCK = re.compile(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", re.S)


@pytest.fixture(scope="module")
def pack(tmp_path_factory) -> Path:
    scratch = tmp_path_factory.mktemp("learner-pack")
    archive = learner_pack.build(scratch / "pack.tar.gz")
    with tarfile.open(archive) as tar:
        names = tar.getnames()
        assert all(n.startswith(learner_pack.NAME + "/") and ".." not in n for n in names)
        tar.extractall(scratch / "unpacked", filter="data")
    return scratch / "unpacked" / learner_pack.NAME


def _texts(pack: Path) -> dict[Path, str]:
    return {p: p.read_text(errors="replace") for p in pack.rglob("*") if p.is_file()}


def test_pack_has_what_a_learner_needs(pack):
    labs = sorted(p.name for p in (ROOT / "notebooks").iterdir() if p.is_dir())
    for lab in labs:
        assert (pack / "notebooks" / lab / f"{lab}.ipynb").is_file()
        assert (pack / "notebooks-ja" / lab / f"{lab}.ipynb").is_file()  # the Japanese edition
    for name in ("Makefile", "README.md", "pyproject.toml", "requirements.txt", "constraints.txt",
                 "environment.yml", "nbgrader_config.py", "src/raylab/__init__.py",
                 "src/raylab/cluster.py", "workshop/learner-jupyter-config/labconfig/page_config.json"):
        assert (pack / name).is_file(), name
    # The learner notebooks are the released ones, byte for byte.
    for lab in labs:
        assert ((pack / "notebooks" / lab / f"{lab}.ipynb").read_bytes()
                == (ROOT / "notebooks" / lab / f"{lab}.ipynb").read_bytes())


def test_nothing_of_the_answer_key_is_inside(pack):
    parts = {part for p in pack.rglob("*") for part in p.relative_to(pack).parts}
    for name in ("solutions", "grader", "tests", "mutants", "mutants.yaml", ".git", ".grading", "feedback", "scripts"):
        assert name not in parts, name
    assert not list(pack.rglob("*.db")), "a gradebook is inside"
    texts = _texts(pack)
    for path, text in texts.items():
        for marker in MARKERS:
            assert marker not in text, f"{marker!r} in {path.relative_to(pack)}"
    hidden, solution = _answer_key_lines()
    assert len(hidden) > 50 and len(solution) > 20  # the solutions were read
    for path, text in texts.items():
        found = [line for line in hidden if line in text]
        assert not found, f"{path.relative_to(pack)} holds hidden-test lines: {found[:3]}"
        # Solution lines are looked for in the notebooks only: raylab, which learners get in
        # every setting, shares idioms with the solutions (`module = getattr(model, "module", model)`).
        found = [line for line in solution if line in text] if path.suffix == ".ipynb" else []
        assert not found, f"{path.relative_to(pack)} holds solution lines: {found[:3]}"
    # The search is not blind: it finds both kinds of lines in a solution notebook.
    some_solution = (ROOT / "solutions" / "01_train_v2_responsibilities" / "01_train_v2_responsibilities.ipynb").read_text()
    assert [line for line in hidden if line in some_solution]
    assert [line for line in solution if line in some_solution]
    # No mutant file, by content.
    mutants = {p.read_bytes() for p in (ROOT / "solutions").glob("*/mutants.yaml")}
    assert len(mutants) == len(list((ROOT / "solutions").glob("*/*.ipynb")))
    assert not [p for p in texts if p.read_bytes() in mutants]


def _answer_key_lines() -> tuple[set[str], set[str]]:
    """The lines of every hidden test and every solution block of the course, less those a
    learner copy already shows (feedback_guard's rule for hidden tests). Left out as too generic
    to be evidence: a bare call such as `opt.zero_grad()` (raylab's DDP loop shares it with a hidden
    test) and solution lines under 40 characters."""
    hidden = {line for line in feedback_guard.course_hidden_lines() if not _BARE_CALL.fullmatch(line)}
    public = feedback_guard.public_text()
    solution = set()
    for nb_path in sorted(course.SOLUTIONS.glob("*/*.ipynb")):
        for cell in nbformat.read(nb_path, as_version=4).cells:
            for block in _SOLUTION_BLOCK.findall(cell.source):
                solution |= {line.strip() for line in block.splitlines()
                             if len(line.strip()) >= 40 and line.strip() not in public}
    return hidden, solution


def _rule(makefile: str, target: str) -> str:
    """A rule's line and its recipe lines."""
    lines = makefile.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{target}:"))
    end = start + 1
    while end < len(lines) and lines[end].startswith("\t"):
        end += 1
    return "\n".join(lines[start:end])


def test_pack_makefile_has_the_courses_setup_and_lab(pack):
    mine = (pack / "Makefile").read_text()
    course_makefile = (ROOT / "Makefile").read_text()
    for target in ("$(STAMP)", "setup", "lab"):
        assert _rule(mine, target) == _rule(course_makefile, target), target
    for variable in ("AUTH_ENV =", "LEARNER_CONFIG :=", "STAMP  :=", "BIN    :="):
        line = next(x for x in mine.splitlines() if x.startswith(variable))
        assert line in course_makefile.splitlines(), line
    # make itself reads both targets (dry run: nothing is installed or started).
    dry = subprocess.run(["make", "-n", "-C", str(pack), "setup", "lab"], capture_output=True,
                         text=True, timeout=60)
    assert dry.returncode == 0, dry.stderr
    assert "pip install" in dry.stdout and "jupyter lab --ServerApp.root_dir=notebooks" in dry.stdout
    assert "--ServerApp.ip=127.0.0.1" in dry.stdout
    # Its help lists the two commands and nothing of the instructor's.
    shown = subprocess.run(["make", "-s", "-C", str(pack), "help"], capture_output=True, text=True,
                           timeout=60).stdout
    assert "make setup" in shown and "make lab" in shown
    assert "grade" not in shown and "prove" not in shown and "release" not in shown
