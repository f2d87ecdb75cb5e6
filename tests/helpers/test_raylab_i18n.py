"""raylab speaks the learner's language: ``RAYLAB_LANG`` picks English or Japanese for what its
checks raise and its hints print (``raylab.i18n``, catalogue ``src/raylab/locale/ja.po``)."""
from __future__ import annotations

import subprocess
import sys

import pytest

from raylab import hint_rules, hints, i18n
from raylab.checks.common import CheckFailed, check, check_equal, check_raises


@pytest.fixture
def lang(monkeypatch):
    def use(value):
        if value is None:
            monkeypatch.delenv("RAYLAB_LANG", raising=False)
        else:
            monkeypatch.setenv("RAYLAB_LANG", value)
    return use


@pytest.mark.parametrize("value, expected", [(None, "en"), ("", "en"), ("en", "en"), ("ja", "ja"),
                                             (" JA ", "ja"), ("fr", "en"), ("ja_JP.UTF-8", "en")])
def test_the_language_is_raylab_lang_when_it_names_one_else_english(lang, value, expected):
    lang(value)
    assert i18n.language() == expected


def _failure(fn) -> str:
    with pytest.raises(CheckFailed) as info:
        fn()
    return str(info.value)


def test_a_failed_check_reads_in_the_chosen_language_with_its_values(lang):
    lang("ja")
    text = _failure(lambda: check_equal(3, 4, "trials that ran", hint="ask for 4"))
    assert text == "trials that ran: 4 を期待しましたが、3 でした。\nヒント: ask for 4"
    lang("en")
    assert _failure(lambda: check_equal(3, 4, "trials that ran")) == "trials that ran: expected 4, got 3."


def test_a_message_the_catalogue_does_not_hold_stays_as_written(lang):
    lang("ja")
    assert _failure(lambda: check(False, "a message of a test cell")) == "a message of a test cell"
    assert i18n._("no such message {n}") == "no such message {n}"
    assert "nothing was raised" not in _failure(lambda: check_raises(ValueError, lambda: None, "f()"))


def test_a_hint_names_mistake_fix_and_lab_in_japanese(lang):
    exc = RuntimeError("`get_context` cannot be used outside of a Ray Train training function.")
    lang("ja")
    (hint,) = hints.hints_for(exc)
    text = hint.render()
    assert text.startswith(hint_rules.PREFIX + " Ray Train の worker の API")
    assert "\n  修正: trainer に渡すトレーニング関数の中で呼んでください。" in text
    assert "\n  読み直す箇所: ラボ 01" in text
    lang(None)
    assert "\n  Fix: call it inside the training function" in hint.render()


def test_a_fuzzy_entry_stays_english(tmp_path, monkeypatch):
    (tmp_path / "ja.po").write_text(
        'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=utf-8\\n"\n\n'
        'msgid "current"\nmsgstr "現在"\n\n#, fuzzy\nmsgid "changed"\nmsgstr "古い訳"\n', encoding="utf-8")
    monkeypatch.setattr(i18n, "CATALOGUES", tmp_path)
    i18n.forget_catalogues()
    try:
        translations = i18n.translations("ja")
        assert translations.gettext("current") == "現在"
        assert translations.gettext("changed") == "changed"
    finally:
        i18n.forget_catalogues()


def test_a_fresh_interpreter_with_raylab_lang_ja_fails_a_check_in_japanese():
    code = ("from raylab.checks.tune import check_spiral_results\n"
            "check_spiral_results([])\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env={"PATH": "/usr/bin:/bin", "RAYLAB_LANG": "ja"})
    assert out.returncode == 1
    assert "CheckFailed: tune_spirals が results として list を返しました。ResultGrid を期待していました" \
        "\nヒント: results = tuner.fit(); return results, best" in out.stderr, out.stderr


# --- the texts test cells build with f-strings -------------------------------------------------

@pytest.fixture
def cells_catalogue(tmp_path, monkeypatch):
    """A ``ja-cells.po`` of its own: entries (English, Japanese, is an f-string pattern)."""
    from babel.messages.catalog import Catalog
    from babel.messages.pofile import write_po

    def use(entries):
        catalog = Catalog(locale="ja")
        for english, japanese, is_pattern in entries:
            catalog.add(english, japanese, flags=[i18n.PATTERN_FLAG] if is_pattern else [])
        with open(tmp_path / "ja-cells.po", "wb") as fh:
            write_po(fh, catalog)
        monkeypatch.setattr(i18n, "CATALOGUES", tmp_path)
        i18n.forget_catalogues()
        monkeypatch.setenv("RAYLAB_LANG", "ja")
    yield use
    i18n.forget_catalogues()


@pytest.mark.parametrize("text, parts", [
    ("plain", ["plain"]),
    ("a {x}, {{b}} {d[{k}]}", ["a ", ("x",), ", {b} ", ("d[{k}]",)]),
    ("got { {k: v for k, v in r.items()} }", ["got ", (" {k: v for k, v in r.items()} ",)]),
    ("{out['path']} under {store}", [("out['path']",), " under ", ("store",)]),
])
def test_a_pattern_splits_into_literal_text_and_expressions(text, parts):
    assert i18n.pattern_parts(text) == parts


@pytest.mark.parametrize("text", ["a {x", "a } b", "{a{b}"])
def test_an_unbalanced_pattern_is_refused(text):
    with pytest.raises(ValueError):
        i18n.pattern_parts(text)


def test_an_f_string_s_text_is_translated_with_its_values_in_the_translation_s_order(cells_catalogue):
    cells_catalogue([("the run folder {out['path']} should be under {store}",
                      "実行フォルダー {out['path']} は {store} の下にあるべきです", True),
                     ("rank {r} reported {n} epochs ({r} again)", "rank {r} は {n} epoch を報告 ({r})", True),
                     ("{name}", "{name} です", False)])
    assert i18n.cell_text("the run folder '/tmp/a b' should be under /tmp") == \
        "実行フォルダー '/tmp/a b' は /tmp の下にあるべきです"
    # A value may hold anything, newlines and the pattern's own words included.
    assert i18n.cell_text("the run folder 'x\nshould be under' should be under /s") == \
        "実行フォルダー 'x\nshould be under' は /s の下にあるべきです"
    assert i18n.cell_text("rank 1 reported 3 epochs (1 again)") == "rank 1 は 3 epoch を報告 (1)"
    # The same expression twice must be the same text; a text no pattern matches stays as given.
    assert i18n.cell_text("rank 1 reported 3 epochs (2 again)") == "rank 1 reported 3 epochs (2 again)"
    assert i18n.cell_text("the run folder is missing") == "the run folder is missing"
    # A plain entry with braces is no pattern: only its exact text is translated.
    assert i18n.cell_text("{name}") == "{name} です"
    assert i18n.cell_text("Bob") == "Bob"


def test_the_pattern_that_says_more_wins_and_a_broken_or_stale_one_is_skipped(cells_catalogue):
    cells_catalogue([("got {x}", "{x} を得た", True),
                     ("loss went up: got {x}", "損失が増えた: {x}", True),
                     ("keeps {a} and {b}", "{a} だけ", True)])  # a translation that drops a value
    assert i18n.cell_text("loss went up: got 3") == "損失が増えた: 3"
    assert i18n.cell_text("got 3") == "3 を得た"
    assert i18n.cell_text("keeps 1 and 2") == "keeps 1 and 2"


def test_checked_prints_the_summary_line_in_the_learner_s_language(lang, capsys):
    from raylab.checks.common import checked

    lang(None)
    checked("the five findings on correct and broken runs.")
    assert capsys.readouterr().out == "Checked: the five findings on correct and broken runs.\n"
    lang("ja")
    checked("a summary no lab has")
    assert capsys.readouterr().out == "確認済み: a summary no lab has\n"


def test_english_never_opens_a_catalogue(monkeypatch, lang):
    """The proof's keys rely on it (grader.proof.keys.raylab_digest): an English kernel reads no
    catalogue, so a translation changes no English grading."""
    def refuse(*args):
        raise AssertionError(f"a catalogue was opened: {args}")
    monkeypatch.setattr(i18n, "catalogue_path", refuse)
    i18n.forget_catalogues()
    lang("en")
    from raylab.checks.common import checked

    checked("a summary")
    assert _failure(lambda: check_equal(1, 2, "number of trials", hint="a hint")).startswith("number of trials")
    assert i18n._("Hint: {hint}") == "Hint: {hint}"
    lang("ja")
    with pytest.raises(AssertionError, match="a catalogue was opened"):
        i18n._("Hint: {hint}")  # the control: Japanese does open it
    i18n.forget_catalogues()


def test_a_mapping_of_texts_reads_in_the_language_of_the_moment(lang):
    from raylab.plan_review import FINDING_CODES

    lang(None)
    english = dict(FINDING_CODES)
    assert english["NO_DEADLINE"] == "the RayJob sets no activeDeadlineSeconds"
    lang("ja")
    japanese = dict(FINDING_CODES)
    assert list(japanese) == list(english)  # the codes never change
    assert "activeDeadlineSeconds" in japanese["NO_DEADLINE"] and japanese["NO_DEADLINE"] != english["NO_DEADLINE"]
    assert "NO_DEADLINE" in FINDING_CODES and len(FINDING_CODES) == len(english)


def test_a_device_plan_s_reason_reads_in_japanese(lang):
    from raylab import devices

    lang(None)
    assert devices.plan_from_cluster({"CPU": 4.0}).reason == \
        "the cluster offers no GPU: 2 CPU worker(s), 1 CPU each, gloo"
    lang("ja")
    assert devices.plan_from_cluster({"CPU": 4.0}).reason == "クラスターに GPU がない: 2 個の CPU worker、各 1 CPU、gloo"
