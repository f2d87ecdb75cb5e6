"""A correct answer never loses points because something wrote to stderr; a wrong one still fails.

Stock nbgrader scores a test cell 0 as soon as any stderr stream appears in it, and Ray prints log
lines from background threads into whichever cell is running. The course's autograde pipeline
(grader/grading/nbgrader_config.py) relabels stderr in grade cells as stdout. This test grades a tiny
assignment through the real nbgrader CLI with the course configuration.
"""
import json

import nbformat
import pytest

from grader.authoring import text as authoring
from grader.grading import autograde, course

pytestmark = pytest.mark.slow

NOISE = """
import logging, os, sys, warnings
print("a line on stderr", file=sys.stderr)
warnings.warn("a library warning")
logging.getLogger("ray.train").error("a Ray-style log line")
sys.stderr.flush()
os.write(2, b"a C++ log line straight to fd 2\\n")
"""


def _assignment(answer_body):
    return authoring.new_notebook([
        authoring.make_cell("answer", "double_answer",
                            "def double(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION"),
        authoring.make_cell("tests", "double_tests", NOISE + "\nassert double(21) == 42, 'double(21) should be 42'",
                            points=1),
        authoring.make_cell("tests", "noise_only_tests", NOISE + "\nassert double(0) == 0", points=1),
    ]), answer_body


def test_stderr_in_a_test_cell_does_not_zero_a_correct_answer(tmp_path):
    root = tmp_path / "course"
    nb, _ = _assignment(None)
    authoring.write(nb, root / "solutions" / "probe" / "probe.ipynb")
    grading = tmp_path / "grading"
    overrides = [f"--CourseDirectory.root={root}"]
    gen = course.nbgrader("generate_assignment", "probe", "--force", *overrides, grading_dir=grading)
    assert gen.returncode == 0, gen.output[-2000:]
    released = nbformat.read(root / "notebooks" / "probe" / "probe.ipynb", as_version=4)
    for student, body in {"right": "def double(x):\n    return x + x", "wrong": "def double(x):\n    return x * x"}.items():
        sub = nbformat.from_dict(json.loads(nbformat.writes(released)))
        sub.cells[0].source = body
        dest = grading / "submitted" / student / "probe" / "probe.ipynb"
        dest.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(sub, dest)
    ag = autograde.stock_autograde("probe", grading, *overrides)
    assert ag.returncode == 0, ag.output[-3000:]
    right = course.cell_scores("probe", "right", grading)
    wrong = course.cell_scores("probe", "wrong", grading)
    assert right == {"double_tests": (1.0, 1.0), "noise_only_tests": (1.0, 1.0)}
    assert wrong["double_tests"] == (0.0, 1.0)
    # the noise is still visible to the instructor and the learner, relabelled as stdout
    graded = nbformat.read(grading / "autograded" / "right" / "probe" / "probe.ipynb", as_version=4)
    text = "".join(o.get("text", "") for o in graded.cells[1].outputs if o.output_type == "stream")
    assert "a line on stderr" in text and "a library warning" in text and "Ray-style" in text
    assert all(o.get("name") != "stderr" for o in graded.cells[1].outputs if o.output_type == "stream")


# attack: (code in the learner's answer cell, the error the graded test cell must show)
ATTACKS = {
    # nbgrader already sees these: the kernel's execute reply still says "error"
    "swallow_with_custom_exc": ("get_ipython().set_custom_exc((BaseException,), lambda *a, **k: None)",
                                "AssertionError"),
    "silence_showtraceback": ("get_ipython().showtraceback = lambda *a, **k: None", "AssertionError"),
    # this one makes every cell "succeed": only the course's sentinel notices the cell stopped early
    "wrap_every_cell_in_try_except": (
        "def _wrap(lines):\n"
        "    return ['try:\\n'] + ['    ' + l for l in lines] + ['\\nexcept BaseException:\\n    pass\\n']\n"
        "get_ipython().input_transformers_post.append(_wrap)", "TestCellTampered"),
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_a_submission_that_swallows_test_failures_scores_zero_and_is_flagged(attack, tmp_path):
    """Learner code shares the kernel with the tests. Making exceptions invisible would turn every
    failing test cell into full marks under stock nbgrader; the course's sentinel catches it."""
    root = tmp_path / "course"
    nb, _ = _assignment(None)
    authoring.write(nb, root / "solutions" / "probe" / "probe.ipynb")
    grading = tmp_path / "grading"
    overrides = [f"--CourseDirectory.root={root}"]
    assert course.nbgrader("generate_assignment", "probe", "--force", *overrides,
                           grading_dir=grading).returncode == 0
    released = nbformat.read(root / "notebooks" / "probe" / "probe.ipynb", as_version=4)
    sub = nbformat.from_dict(json.loads(nbformat.writes(released)))
    code, expected = ATTACKS[attack]
    sub.cells[0].source = code + "\n\ndef double(x):\n    return x * x  # wrong"
    dest = grading / "submitted" / "mallory" / "probe" / "probe.ipynb"
    dest.parent.mkdir(parents=True)
    nbformat.write(sub, dest)
    ag = autograde.stock_autograde("probe", grading, *overrides)
    assert ag.returncode == 0, ag.output[-3000:]
    scores = course.cell_scores("probe", "mallory", grading)
    assert scores["double_tests"] == (0.0, 1.0)
    graded = nbformat.read(grading / "autograded" / "mallory" / "probe" / "probe.ipynb", as_version=4)
    names = [o.get("ename") for o in graded.cells[1].outputs if o.output_type == "error"]
    assert names == [expected], names
    # the cell whose assertions pass (noise_only_tests) still runs to completion: full marks
    assert scores["noise_only_tests"] == (1.0, 1.0)
