"""Every message raylab prints or raises for the learner has a current Japanese translation
(``src/raylab/locale/ja.po``, kept by ``grader.authoring.raylab_messages``), and the counts that say
so can fail."""
from __future__ import annotations

import copy

from grader.authoring import editions, raylab_messages as rm


def test_every_raylab_message_is_translated_and_current_and_none_is_obsolete():
    messages, marks = rm.extract()
    catalog = rm.read("ja")
    found = rm.counts(catalog, messages)
    assert {kind: len(texts) for kind, texts in found.items()} == {"missing": 0, "stale": 0, "obsolete": 0}, found
    assert marks == []
    assert len(messages) > 150  # checks, hints and helpers: the extraction found the package's messages


def test_translations_keep_placeholders_code_and_the_glossary():
    assert rm.problems("ja") == []


def test_the_counts_catch_a_missing_a_stale_and_an_obsolete_entry():
    messages, _ = rm.extract()
    catalog = copy.deepcopy(rm.read("ja"))
    first, second = list(messages)[:2]
    catalog[first].string = ""
    catalog[second].flags.add("fuzzy")
    catalog.add("a message no module has any more", "もう使われていない")
    found = rm.counts(catalog, messages)
    assert found == {"missing": [first], "stale": [second], "obsolete": ["a message no module has any more"]}


def test_an_english_change_leaves_the_old_translation_stale_and_a_new_message_missing():
    messages, _ = rm.extract()
    catalog = copy.deepcopy(rm.read("ja"))
    changed = dict(messages)
    old = "Ray is stopped; no Ray process left."
    changed["Ray is stopped; no Ray processes are left."] = changed.pop(old)
    changed["a brand-new message for the learner"] = ["raylab/cluster.py:1"]
    translation = catalog[old].string
    merged = rm.merged(catalog, changed, "ja")
    found = rm.counts(merged, changed)
    assert found["missing"] == ["a brand-new message for the learner"]
    assert found["stale"] == ["Ray is stopped; no Ray processes are left."]
    assert merged["Ray is stopped; no Ray processes are left."].string == translation
    assert found["obsolete"] == []


def test_a_mark_that_builds_its_text_is_reported(tmp_path):
    package = tmp_path / "raylab"
    package.mkdir()
    (package / "m.py").write_text('from raylab.i18n import N_, _\n'
                                  'A = N_("kept for later")\n'
                                  'def f(n, text):\n'
                                  '    print(_(f"{n} workers"), _("{n} workers").format(n=n), _(text))\n'
                                  '    print(_("a " + "b"), _("x {n}".format(n=n)))\n')
    messages, marks = rm.extract(package)
    assert set(messages) == {"kept for later", "{n} workers"}
    assert [m.split(": ", 1)[0] for m in marks] == ["raylab/m.py:4", "raylab/m.py:5", "raylab/m.py:5"]


def test_the_glossary_check_sees_a_term_the_translation_drops():
    terms = editions.glossary("ja")
    assert editions.term_problems("the trials that ran", "実行されたトライアル", terms)
    assert not editions.term_problems("the trials that ran", "実行された trial", terms)
