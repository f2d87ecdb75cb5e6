"""`make grade` grades a Japanese submission as it grades the same answers in English (slow).

Two labs (lab 00, which runs Ray, and the quiz), each handed in four times: the learner copy of each
edition with the solution's answers written in, and each edition's learner copy as released (no
answers). The class grader must give each Japanese submission exactly the English one's scores.

Every lab's round trip already grades the solution's answers in the Japanese copy and compares
them with the English solution, cell for cell (``solution_ja``, ``roundtrip_rules.edition_problems``),
through the function the class grader calls. This module is what the proof does not cover: the
whole ``make grade`` batch (``grader.classroom.grade``: finding the edition among a class's
submissions, its state file) and the Japanese copy handed in blank.
"""
import json
import subprocess
import sys

import nbformat
import pytest

from grader.authoring import editions
from grader.grading import course
from grader.proof import mutants

pytestmark = pytest.mark.slow
LABS = ["00_lab_setup", "10_quiz"]


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    base = tmp_path_factory.mktemp("editions")
    subs, out = base / "submitted", base / "out"
    for lab in LABS:
        copies = {"en": course.release_path(lab), "ja": editions.edition_path("ja", lab)}
        for edition, release in copies.items():
            for kind, answers in (("answered", mutants.answer_sources(lab)), ("blank", None)):
                path = subs / f"{edition}_{kind}" / lab / f"{lab}.ipynb"
                path.parent.mkdir(parents=True, exist_ok=True)
                nbformat.write(mutants.submission(lab, answers, release=release), path)
    cmd = [sys.executable, "-m", "grader.classroom.grade", str(subs), "--out", str(out), "--workers", "2",
           "--cell-timeout", "120", "--timeout", "900", "--labs", *LABS]
    run = subprocess.run(cmd, cwd=course.ROOT, capture_output=True, text=True, timeout=1800)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    state = json.loads((out / "state.json").read_text())
    return {tuple(key.split("/")): entry for key, entry in state.items()}  # "<student>/<lab>"


@pytest.mark.parametrize("lab", LABS)
@pytest.mark.parametrize("kind", ["answered", "blank"])
def test_the_japanese_submission_gets_the_english_ones_scores(graded, lab, kind):
    english, japanese = graded[(f"en_{kind}", lab)], graded[(f"ja_{kind}", lab)]
    assert english["status"] == japanese["status"] == "graded", (english["reason"], japanese["reason"])
    assert {g: s[:2] for g, s in japanese["scores"].items()} == {g: s[:2] for g, s in english["scores"].items()}
    earned = sum(s[0] or 0 for s in english["scores"].values())
    possible = sum(s[1] or 0 for s in english["scores"].values())
    assert (earned == possible) if kind == "answered" else (earned < possible)
