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
    i18n.translations.cache_clear()
    try:
        translations = i18n.translations("ja")
        assert translations.gettext("current") == "現在"
        assert translations.gettext("changed") == "changed"
    finally:
        i18n.translations.cache_clear()


def test_a_fresh_interpreter_with_raylab_lang_ja_fails_a_check_in_japanese():
    code = ("from raylab.checks.tune import check_spiral_results\n"
            "check_spiral_results([])\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env={"PATH": "/usr/bin:/bin", "RAYLAB_LANG": "ja"})
    assert out.returncode == 1
    assert "CheckFailed: tune_spirals が results として list を返しました。ResultGrid を期待していました" \
        "\nヒント: results = tuner.fit(); return results, best" in out.stderr, out.stderr
