"""grader.authoring.documents on temporary copies (fast): how a README's units are cut, what a
changed English paragraph does to its translation, and what is published or refused."""
import shutil
from pathlib import Path

import pytest

from grader.authoring import documents, editions
from grader.grading import course

ENGLISH = """**English** · [日本語](README.ja.md)

<!-- id: title -->
# Title

Intro with `make lab`.

<!-- id: check -->
**Check.** Press Validate.

```bash
make grade-mine NB=x.ipynb
```

<!-- end of the translated part -->
## For instructors

Not translated.
"""
JAPANESE = {"notice": "英語版 [README.md](README.md) の翻訳です。",
            "title": "# 題名\n\n`make lab` を使う導入。",
            "check": "**確認。** Validate を押します。\n\n```bash\nmake grade-mine NB=x.ipynb\n```"}
REAL_ROOT = Path(__file__).resolve().parents[2]  # course.ROOT, before a test moves it
DOC = documents.Document("readme", "README.md", notice="A translation of [README.md](README.md).", linked=True)


@pytest.fixture
def clone(tmp_path, monkeypatch):
    """A course root of its own: the documents and catalogues read and written there."""
    monkeypatch.setattr(course, "ROOT", tmp_path)
    monkeypatch.setattr(editions, "TRANSLATIONS", tmp_path / "translations")
    return tmp_path


def _translate(name, strings):
    catalog = editions.read("ja", name)
    for message in catalog:
        if message.id:
            message.string = strings[message.context]
            message.flags.discard("fuzzy")
    editions.write("ja", name, catalog)


def test_units_run_from_each_marker_to_the_next_and_stop_at_the_end_marker():
    found = documents.units(ENGLISH)
    assert [unit_id for unit_id, _ in found] == ["title", "check"]
    assert found[0][1] == "# Title\n\nIntro with `make lab`."
    assert found[1][1].endswith("```") and "For instructors" not in found[1][1]
    # every line between the first marker and the end belongs to a unit
    learner_part = ENGLISH.split(documents.END)[0].split("<!-- id: title -->\n")[1]
    lines = [line for line in learner_part.splitlines() if line.strip() and not line.startswith("<!-- id:")]
    assert all(any(line in body for _, body in found) for line in lines)


@pytest.mark.parametrize("text, says", [
    ("# No markers\n", "no '<!-- id: NAME -->'"),
    ("<!-- id: a -->\nOne.\n<!-- id: a -->\nTwo.\n", "id 'a' starts two units"),
    ("<!-- id: a -->\n\n<!-- id: b -->\nTwo.\n", "unit 'a' is empty"),
    (f"<!-- id: a -->\nOne.\n{documents.END}\n<!-- id: b -->\nTwo.\n", "below the end"),
])
def test_a_learner_part_that_cannot_be_keyed_is_refused(text, says):
    with pytest.raises(ValueError, match=says):
        documents.units(text)


def test_publish_refuses_until_translated_then_refuses_stale_units_by_name(clone):
    (clone / "README.md").write_text(ENGLISH)
    left_out = documents.publish("ja", [DOC])
    assert left_out == {"readme": ["missing: edition-notice", "missing: title", "missing: check"]}
    assert not DOC.edition_path("ja").exists()
    _translate("readme", {documents.NOTICE: JAPANESE["notice"], "title": JAPANESE["title"], "check": JAPANESE["check"]})
    assert documents.publish("ja", [DOC]) == {}
    edition = (clone / "README.ja.md").read_text()
    assert edition.index("[English](README.md)") < edition.index(JAPANESE["notice"]) < edition.index("# 題名")
    assert edition.index("# 題名") < edition.index("**確認。**")
    assert "Not translated" not in edition and "make release" in edition.splitlines()[0]
    # An English paragraph added to a unit, with no marker of its own, makes that unit stale:
    (clone / "README.md").write_text(ENGLISH.replace("Press Validate.\n", "Press Validate.\n\nA new paragraph.\n"))
    left_out = documents.publish("ja", [DOC])
    assert left_out == {"readme": ["stale: check (the English changed since it was translated)"]}
    assert not DOC.edition_path("ja").exists()
    assert "stale: check" in editions.report(left_out, "ja")
    stale = {m.context: m for m in editions.read("ja", "readme") if m.id}["check"]
    assert stale.previous_id == [documents.units(ENGLISH)[1][1]] and stale.string == JAPANESE["check"]


def test_changing_one_paragraph_of_the_real_readme_stales_exactly_its_unit(clone):
    """On a copy of the course's README and catalogue: the other units keep their translations."""
    shutil.copy(REAL_ROOT / "README.md", clone / "README.md")
    (clone / "translations" / "ja").mkdir(parents=True)
    shutil.copy(REAL_ROOT / "translations" / "ja" / "readme.po", clone / "translations" / "ja" / "readme.po")
    shutil.copy(REAL_ROOT / "translations" / "ja" / "glossary.yaml", clone / "translations" / "ja")
    readme = documents.DOCUMENTS[0]
    assert documents.problems_now(readme, "ja") == []
    english = (clone / "README.md").read_text()
    (clone / "README.md").write_text(english.replace("Open `00_lab_setup` first", "Open `00_lab_setup` before anything else"))
    assert documents.problems_now(readme, "ja") == ["stale: open-lab-00 (the English changed since it was translated)"]
    # a unit inserted in the middle is missing, and no other unit moves
    (clone / "README.md").write_text(english.replace("<!-- id: safety -->", "<!-- id: new-note -->\nA note.\n\n<!-- id: safety -->"))
    assert documents.problems_now(readme, "ja") == ["missing: new-note"]
    assert documents.publish("ja", [readme]) == {"readme": ["missing: new-note"]}
    assert not (clone / "README.ja.md").exists()

