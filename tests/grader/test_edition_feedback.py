"""A Japanese submission is graded like the English one and told so in Japanese: the edition marker
(``grader.grading.edition``) gives the learner's kernel ``RAYLAB_LANG=ja`` and the feedback page
nbgrader's template with Japanese words; an unmarked or unknown one stays English."""
import json

import nbformat
import pytest

from grader.authoring import text as authoring
from grader.grading import autograde, course, edition, isolation
from grader.grading.nbgrader_ext import HideGradeCellTracebacks


def _nb(metadata: dict):
    nb = nbformat.v4.new_notebook()
    nb.metadata.update(metadata)
    return nb


@pytest.mark.parametrize("metadata, lang", [({"raylab": {"edition": "ja"}}, "ja"), ({}, "en"),
                                            ({"raylab": {"edition": "fr"}}, "en"), ({"raylab": "ja"}, "en"),
                                            ({"raylab": {"edition": ["ja"]}}, "en")])
def test_the_edition_is_the_notebooks_marker_else_english(metadata, lang):
    assert edition.language(_nb(metadata)) == lang


def test_a_japanese_submission_s_kernel_gets_raylab_lang_and_nothing_else_changes():
    english = isolation.kernel_env()
    japanese = isolation.kernel_env(edition.kernel_env("ja"))
    assert japanese == dict(english, RAYLAB_LANG="ja")
    assert edition.kernel_env("en") == {} and edition.feedback_args("en", None) == []


def test_every_fixed_word_of_nbgraders_feedback_page_is_translated():
    original = (edition.nbgrader_feedback_template() / "index.html.j2").read_text()
    translated = edition.translated_feedback_template("ja")
    for english, japanese in edition.FEEDBACK_WORDS["ja"]:
        assert english in original, f"nbgrader's feedback template no longer says {english!r}"
        assert english not in translated and japanese in translated
    assert translated.count("{{") == original.count("{{")  # the values are all still there


def _failed_cell(evalue: str):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("## 2. 再開できるトレーニング関数"),
                nbformat.v4.new_code_cell("...", metadata={"nbgrader": {"grade": True, "grade_id": "t",
                                                                        "points": 1, "solution": False}})]
    nb.cells[1].outputs = [nbformat.v4.new_output("error", ename="AssertionError", evalue=evalue, traceback=[])]
    return nb


@pytest.mark.parametrize("lang, evalue, shown", [
    ("en", "wrong", ["AssertionError: wrong", 'Hint: reread "2. 再開できるトレーニング関数" and run the visible checks again.']),
    ("ja", "wrong", ["AssertionError: wrong", "ヒント: 「2. 再開できるトレーニング関数」を読み直し、表示されているチェックをもう一度実行してください。"]),
    ("ja", "x: 4 を期待しましたが、6 でした。\nヒント: x を 2 倍します", ["AssertionError: x: 4 を期待しましたが、6 でした。",
                                                       "ヒント: x を 2 倍します"]),
])
def test_a_failed_test_cell_without_a_hint_of_its_own_gets_the_pointer_in_its_language(lang, evalue, shown):
    nb, _ = HideGradeCellTracebacks(language=lang).preprocess(_failed_cell(evalue), {})
    assert nb.cells[1].outputs[0].traceback == shown


CHECK = ("from raylab.checks.common import check_equal\n"
         "check_equal(double(2), 4, 'double(2)', hint='add x to itself')")


@pytest.mark.slow
def test_a_japanese_submission_gets_the_english_scores_with_japanese_feedback(tmp_path):
    root = tmp_path / "course"
    authoring.write(authoring.new_notebook([
        authoring.make_cell("answer", "double_answer",
                            "def double(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION"),
        authoring.make_cell("tests", "double_tests", CHECK, points=1),
        authoring.make_cell("tests", "plain_tests", "assert double(1) == 2, 'double(1)'", points=1),
    ]), root / "solutions" / "probe" / "probe.ipynb")
    grading = tmp_path / "grading"
    course_args = (f"--CourseDirectory.root={root}",)
    gen = course.nbgrader("generate_assignment", "probe", "--force", *course_args, grading_dir=grading)
    assert gen.returncode == 0, gen.output[-2000:]
    released = nbformat.read(root / "notebooks" / "probe" / "probe.ipynb", as_version=4)
    released.cells[0].source = "def double(x):\n    return x * 3"
    options = autograde.Options(sandbox=False, isolate_network=False, nbgrader_args=course_args)
    results = {}
    for lang in ("en", "ja"):
        nb = edition.marked(nbformat.from_dict(json.loads(nbformat.writes(released))), lang)
        results[lang] = autograde.autograde_submission("probe", f"learner_{lang}", nbformat.writes(nb).encode(),
                                                       (grading / "gradebook.db").read_bytes(), options)
    assert results["ja"]["scores"] == results["en"]["scores"], results
    assert results["en"]["scores"]["double_tests"][:2] == [0.0, 1.0]
    en, ja = results["en"]["feedback"], results["ja"]["feedback"]
    assert "double(2): expected 4, got 6." in en and "Score: 0.0 / 2.0" in en
    assert "double(2): 4 を期待しましたが、6 でした。" in ja and "ヒント: add x to itself" in ja
    assert "得点: 0.0 / 2.0" in ja and "Score:" not in ja and "テストセル" in ja
    assert "ヒント: 「ラボの冒頭」を読み直し" in ja and "Hint:" not in ja
