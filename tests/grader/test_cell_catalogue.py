"""The texts the labs' visible test cells pass to raylab's check helpers have a current Japanese
translation (``src/raylab/locale/ja-cells.po``, kept by ``grader.authoring.cell_messages``), the
helpers show it when ``RAYLAB_LANG=ja`` and print exactly what they did before otherwise, and no
text of a hidden test or a solution ever reaches that catalogue, which ships to learners."""
from __future__ import annotations

import nbformat
import pytest

from grader.authoring import cell_messages as cm, raylab_messages as rm
from grader.grading import course
from raylab.checks.common import CheckFailed, check, check_equal, check_keys, check_raises

KNOWN = ("number of trials", "trial の数")  # a check_equal label of lab 06's visible tests


def test_every_visible_test_text_is_translated_and_current_and_none_is_obsolete():
    messages, patterns, unparsed = cm.extract()
    found = rm.counts(rm.read("ja", cm.catalogue_path("ja")), messages)
    assert {kind: len(texts) for kind, texts in found.items()} == {"missing": 0, "stale": 0, "obsolete": 0}, found
    assert unparsed == []
    assert len(messages) > 400  # the extraction found the labs' texts, not a handful
    assert len(patterns) > 140  # and the f-strings among them
    assert KNOWN[0] in messages


def test_translations_keep_code_and_the_glossary():
    assert cm.problems("ja") == []


def test_a_new_visible_text_is_missing_until_translated():
    cell = 'check(ok, "a message no test cell had before")\ncheck_equal(a, b, what="number of trials")\n'
    messages = cm.messages_of(cell, "lab/cell")
    found = rm.counts(rm.read("ja", cm.catalogue_path("ja")), messages)
    assert found["missing"] == ["a message no test cell had before"]


def test_an_f_string_is_a_pattern_of_its_expressions_and_a_summary_line_a_text():
    cell = ('check(ok, f"the folder {out[\'path\']!r} is not under {store:>10} {{braces}}", hint=f"{n} workers")\n'
            'check(ok, f"{only_a_value}")\n'
            'check_equal(a, b, f"types {{k: type(v).__name__ for k, v in r.items()}}")\n'
            'check_equal(a, b, f"types { {k: type(v).__name__ for k, v in r.items()} }")\n'
            'checked("the run folder and its checkpoints.")\n')
    patterns = set()
    found = cm.messages_of(cell, "lab/cell", patterns)
    assert set(found) == patterns | {"the run folder and its checkpoints."}
    assert patterns == {"the folder {out['path']} is not under {store} {{braces}}", "{n} workers",
                        "types {{k: type(v).__name__ for k, v in r.items()}}",
                        "types { {k: type(v).__name__ for k, v in r.items()} }"}  # a value alone is no pattern


def test_a_lab_s_f_string_check_reads_in_japanese_with_its_values(monkeypatch):
    import os
    monkeypatch.setenv("RAYLAB_LANG", "ja")
    out, store = {"path": "/tmp/elsewhere/first-run"}, "/tmp/store"
    with pytest.raises(CheckFailed) as failed:  # lab 01's first visible check of the run folder
        check(False, f"the run folder {out['path']!r} should be a folder under the storage_path given ({store})")
    text = str(failed.value)
    assert "'/tmp/elsewhere/first-run'" in text and "/tmp/store" in text
    assert "storage_path" in text and "should be" not in text


def test_hidden_tests_and_solutions_are_never_extracted():
    cell = ("check(ok, 'visible text', hint='visible hint')\n"
            "def f():\n    ### BEGIN SOLUTION\n    check(ok, 'solution text')\n    ### END SOLUTION\n"
            "### BEGIN HIDDEN TESTS\ncheck_equal(a, b, 'hidden text', hint='hidden hint')\n### END HIDDEN TESTS\n"
            "%time check(ok, 'magic')\n")
    assert set(cm.messages_of(cell, "lab/cell")) == {"visible text", "visible hint"}


def _shown(source: str) -> str:
    """``source`` with its region markers made plain comments, so the regions count as visible."""
    for begin, end in cm.REGIONS:
        source = source.replace(begin, "# (" + begin[4:]).replace(end, "# (" + end[4:])
    return source


def test_no_text_only_in_a_hidden_test_or_a_solution_of_a_lab_is_in_the_catalogue():
    shipped = {m.id for m in rm.read("ja", cm.catalogue_path("ja")) if m.id}
    everything, visible = set(), set()
    for lab in course.labs():
        for cell in nbformat.read(course.solution_path(lab), as_version=4).cells:
            if cell.cell_type == "code":
                everything |= set(cm.messages_of(_shown(cell.source), "x"))
                visible |= set(cm.messages_of(cell.source, "x"))
    secret = everything - visible  # a text a visible test also uses is no secret
    assert len(secret) > 20  # the hidden tests do pass texts to the helpers
    assert secret & shipped == set()


@pytest.mark.parametrize("lang", [None, "en"])
def test_without_japanese_the_helpers_print_what_they_always_printed(monkeypatch, lang):
    if lang is None:
        monkeypatch.delenv("RAYLAB_LANG", raising=False)
    else:
        monkeypatch.setenv("RAYLAB_LANG", lang)
    with pytest.raises(CheckFailed) as failed:
        check_equal(3, 4, KNOWN[0], hint="how many trials did you ask for?")
    assert str(failed.value) == "number of trials: expected 4, got 3.\nHint: how many trials did you ask for?"
    with pytest.raises(CheckFailed) as failed:
        check(False, "the run has no checkpoint")
    assert str(failed.value) == "the run has no checkpoint"


def test_japanese_shows_the_lab_texts_in_japanese_and_others_as_given(monkeypatch):
    monkeypatch.setenv("RAYLAB_LANG", "ja")
    with pytest.raises(CheckFailed) as failed:
        check_equal(3, 4, KNOWN[0])
    assert str(failed.value).startswith(KNOWN[1] + ": ")
    with pytest.raises(CheckFailed) as failed:
        check(False, "the run has no checkpoint", hint="a hint no lab has")
    assert str(failed.value).splitlines()[0] == "実行に checkpoint がありません"
    assert str(failed.value).endswith("a hint no lab has")
    with pytest.raises(CheckFailed) as failed:
        check_keys({}, ["kind"], "metadata name and namespace")
    assert "metadata の name と namespace" in str(failed.value)
    with pytest.raises(CheckFailed) as failed:
        check_raises(ValueError, lambda: None, "choose_config(...)")
    assert str(failed.value).startswith("choose_config(...)")
