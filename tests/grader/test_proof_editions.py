"""The Japanese edition in the proof: each lab's round trip grades the solution's answers in the
Japanese copy (``solution_ja``) and judges its scores against the English solution's; its key
differs from the English one, and no English key changed to make room for it."""
import dataclasses

import nbformat
import pytest

from grader.grading import course, edition
from grader.proof import keys, mutants, roundtrip, roundtrip_rules as rules

LAB = "00_lab_setup"


def _fixed_notebook():
    meta = {"schema_version": 3, "points": 1}
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# Lab", id="intro"),
                nbformat.v4.new_code_cell("x = 1\n", id="answer", metadata={"nbgrader": {
                    **meta, "grade_id": "answer", "solution": True, "grade": False, "locked": False}}),
                nbformat.v4.new_code_cell("assert x == 1\n", id="tests", metadata={"nbgrader": {
                    **meta, "grade_id": "tests", "solution": False, "grade": True, "locked": True}})]
    nb.cells[1].metadata.nbgrader.pop("points")
    return nb


def test_an_english_notebook_keeps_the_digest_it_had_before_editions_were_keyed():
    nb = _fixed_notebook()
    # computed by keys.notebook_digest before the edition entered the key: the ledger's English
    # gradings must keep their keys
    before = "c5f9799ba09d77ad04e63c0e0b227dfbe271ffcd71c84c3811541fee19589c41"
    assert keys.notebook_digest(nbformat.writes(nb).encode()) == before
    # an unknown edition is English, so it grades and is keyed as English
    assert keys.notebook_digest(nbformat.writes(edition.marked(nb, "en")).encode()) == before
    assert keys.notebook_digest(nbformat.writes(edition.marked(nb, "xx")).encode()) == before
    assert keys.notebook_digest(nbformat.writes(edition.marked(nb, "ja")).encode()) != before


def test_the_japanese_copy_differs_from_the_english_one_only_by_its_edition():
    english = nbformat.read(course.release_path(LAB), as_version=4)
    japanese = nbformat.read(rules.edition_copy("ja", LAB), as_version=4)
    assert edition.language(japanese) == "ja"
    ja_digest = keys.notebook_digest(nbformat.writes(japanese).encode())
    en_digest = keys.notebook_digest(nbformat.writes(english).encode())
    assert ja_digest != en_digest
    del japanese.metadata[edition.MARKER]
    assert keys.notebook_digest(nbformat.writes(japanese).encode()) == en_digest


@pytest.mark.parametrize("lab", course.labs())
def test_every_lab_with_a_japanese_copy_grades_the_solution_in_it(lab):
    subs = roundtrip._submissions(lab)
    assert ("solution_ja" in subs) == rules.edition_copy("ja", lab).exists()
    if "solution_ja" in subs:
        assert subs["solution_ja"] == subs["solution"]


def test_the_japanese_solution_is_graded_whole_under_its_own_key(tmp_path):
    prep = roundtrip.prepare(LAB, tmp_path, builder=keys.KeyBuilder(dataclasses.replace(roundtrip.OPTIONS, sandbox=False)))
    ja, en = prep.gradings["solution_ja"], prep.gradings["solution"]
    assert ja.left_out == [] and ja.round == {}
    nb = nbformat.reads(ja.notebook.decode(), as_version=4)
    assert edition.language(nb) == "ja"
    answers = mutants.answer_sources(LAB)
    assert {c.metadata.nbgrader.grade_id: c.source for c in nb.cells
            if c.metadata.get("nbgrader", {}).get("grade_id") in answers} == answers
    assert ja.key != en.key
    # its cells as marked Japanese, and raylab with the Japanese catalogues its kernel reads
    assert [n for n, v in dataclasses.asdict(ja.parts).items() if getattr(en.parts, n) != v] == ["submission", "raylab"]


def _graded(student, scores, errors=None):
    return rules.Graded(student, scores, errors or {})


def test_the_japanese_solution_must_score_what_the_english_one_does_cell_for_cell():
    english = {"a_tests": (2, 2), "b_tests": (1, 1), "quiz": (None, 0)}
    same = {"solution": _graded("solution", english), "solution_ja": _graded("solution_ja", dict(english))}
    assert rules.edition_problems(same) == []
    lower = {**same, "solution_ja": _graded("solution_ja", {**english, "b_tests": (0, 1)})}
    assert rules.edition_problems(lower) == [
        "solution_ja: b_tests scored 0/1 in the ja edition, 1/1 in English "
        "(the autograder grades the editions differently)"]
    missing = {**same, "solution_ja": _graded("solution_ja", {"a_tests": (2, 2), "quiz": (None, 0)})}
    assert [p.split(":")[1].split()[0] for p in rules.edition_problems(missing)] == ["b_tests"]
    raised = {**same, "solution_ja": _graded("solution_ja", english, {"demo": ("KeyError", "'x'")})}
    assert rules.edition_problems(raised) == ["solution_ja: error in cell demo in the ja edition only: KeyError: 'x'"]


def test_a_lab_without_a_japanese_copy_is_a_problem_not_a_pass():
    graded = {"solution": _graded("solution", {"a_tests": (1, 1)})}
    assert rules.edition_problems(graded) == []
    assert ["no ja copy" in p for p in rules.edition_problems(graded, ["ja"])] == [True]
    assert any("no ja copy" in p for p in rules.judge(graded, {}, [], unpublished=["ja"]))
