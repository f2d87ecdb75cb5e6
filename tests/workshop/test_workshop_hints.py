"""Feedback hints that place the failing check (grader.workshop.hints), on a notebook really run
by a kernel (nbclient): a test cell whose visible checks pass and whose hidden check fails gets the
"hidden" hint, one whose visible check fails gets the "visible" hint, and neither hint quotes the
hidden check."""
from __future__ import annotations

import nbformat

from grader.workshop import hints as workshop_hints


def _grade_cell(source: str, grade_id: str):
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["nbgrader"] = {"grade": True, "grade_id": grade_id, "points": 1, "solution": False,
                                 "locked": True, "schema_version": 3}
    return cell


def test_each_generic_hint_says_whether_a_visible_or_a_hidden_check_failed():
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("answer = 41"),
        _grade_cell("assert isinstance(answer, int)\n### BEGIN HIDDEN TESTS\nassert answer == 42, 'wrong value'\n"
                    "### END HIDDEN TESTS", "hidden_fails"),
        _grade_cell("assert answer > 100, 'too small'\n### BEGIN HIDDEN TESTS\nassert answer\n### END HIDDEN TESTS",
                    "visible_fails"),
        _grade_cell("assert answer", "passes"),
    ]
    NotebookClient(nb, timeout=120, allow_errors=True, kernel_name="python3").execute()
    page = "".join(f"<pre>AssertionError: x\nHint: reread &quot;Section {i}&quot; and run the visible checks again.</pre>"
                   for i in (1, 2))
    refined, changed = workshop_hints.refine(page, nbformat.writes(nb))
    assert changed == 2
    first, second = refined.split("</pre>")[:2]
    assert "one of the hidden checks failed" in first and "Section 1" in first
    assert "a visible check of this cell failed" in second and "Section 2" in second
    assert "answer == 42" not in refined


def test_a_page_without_generic_hints_or_a_cell_that_cannot_be_placed_is_left_alone():
    nb = nbformat.v4.new_notebook()
    cell = _grade_cell("assert False", "t")
    cell.outputs = [nbformat.v4.new_output("error", ename="AssertionError", evalue="", traceback=["no frames"])]
    nb.cells = [cell]
    page = 'Hint: reread "Intro" and run the visible checks again.'
    assert workshop_hints.refine(page, nbformat.writes(nb)) == (page, 0)
    assert workshop_hints.refine("Score: 1 / 1", nbformat.writes(nb)) == ("Score: 1 / 1", 0)


def test_a_japanese_page_gets_its_hints_placed_in_japanese_and_a_japanese_course_hint_counts():
    from nbclient import NotebookClient

    from grader.grading.nbgrader_ext import HideGradeCellTracebacks

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("answer = 41"),
        # a course check's own Japanese hint: this cell gets no generic pointer on the page
        _grade_cell("raise AssertionError('値が違います\\nヒント: 42 です')", "own_hint"),
        _grade_cell("assert isinstance(answer, int)\n### BEGIN HIDDEN TESTS\nassert answer == 42, 'wrong value'\n"
                    "### END HIDDEN TESTS", "hidden_fails"),
    ]
    NotebookClient(nb, timeout=120, allow_errors=True, kernel_name="python3").execute()
    generic = HideGradeCellTracebacks.GENERIC_HINT["ja"].format(section="2. 再開")
    page = f"<pre>AssertionError: 値が違います\nヒント: 42 です</pre><pre>AssertionError: x\n{generic}</pre>"
    refined, changed = workshop_hints.refine(page, nbformat.writes(nb))
    assert changed == 1
    assert "表示されていないチェックの 1 つが失敗しました" in refined and "「2. 再開」" in refined
    assert generic not in refined and "answer == 42" not in refined
