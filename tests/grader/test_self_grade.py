"""`make grade-mine`: a learner grades their own notebook with the instructor's grader."""
import nbformat
import pytest

from grader.classroom import self_grade
from grader.proof import mutants

LAB = "10_quiz"  # the quickest lab to run whole


def test_a_notebook_that_names_no_lab_gets_a_clear_error(tmp_path):
    stray = tmp_path / "my_copy.ipynb"
    nbformat.write(nbformat.v4.new_notebook(), stray)
    with pytest.raises(SystemExit, match="not a lab notebook of this course"):
        self_grade.main([str(stray)])


@pytest.mark.slow
def test_learner_gets_scores_and_the_feedback_page(tmp_path, capsys):
    mine = tmp_path / LAB / f"{LAB}.ipynb"
    mine.parent.mkdir()
    nbformat.write(mutants.submission(LAB, mutants.answer_sources(LAB)), mine)
    before = mine.read_bytes()
    assert self_grade.main([str(mine), "--feedback-dir", str(tmp_path / "fb")]) == 0
    out = capsys.readouterr().out
    first = next(line for line in out.splitlines() if line.startswith(LAB + ":"))
    total, top = (float(x) for x in first.split(":")[1].split("points")[0].split("/"))
    assert total == top > 0, out
    page = (tmp_path / "fb" / f"{LAB}.html").read_text()
    assert "<html" in page.lower()
    assert mine.read_bytes() == before  # the learner's notebook is never changed



def test_the_report_lists_each_exercise_and_explains_a_failure():
    graded = {"lab": LAB, "status": "graded", "seconds": 3.2, "flags": ["a note"], "reason": "",
              "scores": {"a_tests": (1.0, 2.0, None), "b_tests": (2.0, 2.0, None), "intro": (None, 0.0, None)}}
    text = self_grade.report(graded)
    assert text.splitlines()[0] == f"{LAB}: 3 / 4 points (3 s)"
    assert "a_tests" in text and "ok  b_tests" in text.replace("  ok ", "ok  ") and "intro" not in text
    assert "note: a note" in text
    failed = dict(graded, status="failed", reason="not a notebook (invalid JSON)", log_tail="")
    assert self_grade.report(failed).startswith("Not graded: not a notebook")
