"""The Japanese edition (notebooks-ja/): every prose cell translated from the current English, in the
seed's terms, and nothing else different from the English learner copy, so one grader grades both
and the proof of one lab's grading is the proof of the other's."""
import re

import nbformat
import pytest

from grader.authoring import documents, editions, lab_status
from grader.grading import course, edition
from grader.proof import keys

LABS = lab_status.finished_labs()
KANA = re.compile(r"[\u3040-\u30ff]")


def _both(lab):
    english = nbformat.read(course.release_path(lab), as_version=4)
    japanese = nbformat.read(editions.edition_path("ja", lab), as_version=4)
    return english, japanese


@pytest.mark.parametrize("lab", LABS)
def test_every_prose_cell_has_a_current_translation_in_the_seeds_terms(lab):
    catalog = editions.read("ja", lab)
    english = nbformat.read(course.release_path(lab), as_version=4)
    assert [m.context for m in catalog if m.id] == [cell_id for cell_id, _ in editions.prose(english)], \
        "the catalogue does not follow the learner copy: make release"
    assert [m.id for m in catalog if m.id] == [text for _, text in editions.prose(english)]
    assert editions.translation_problems(catalog, "ja") == []


@pytest.mark.parametrize("lab", LABS)
def test_translations_are_japanese(lab):
    """A translation with no kana is English left in place (a heading of code names is allowed)."""
    left = [m.context for m in editions.read("ja", lab) if m.id and len(editions.CODE_SPAN.sub("", m.id).split()) >= 4
            and not KANA.search(m.string)]
    assert left == []


@pytest.mark.parametrize("lab", LABS)
def test_the_edition_differs_from_the_english_in_prose_only(lab):
    english, japanese = _both(lab)
    assert [c.id for c in japanese.cells] == [c.id for c in english.cells]
    assert {k: v for k, v in japanese.metadata.items() if k != "raylab"} == english.metadata
    assert edition.language(japanese) == "ja" and edition.language(english) == "en"
    for en, ja in zip(english.cells, japanese.cells):
        assert ja.cell_type == en.cell_type
        if en.cell_type == "code":
            assert ja == en, f"{lab}: code cell {en.id} differs"
        else:
            assert ja.source != en.source or not en.source.strip(), f"{lab}: prose cell {en.id} is the English"
            strip = lambda m: {k: v for k, v in m.get("nbgrader", {}).items() if k != "checksum"}  # noqa: E731
            assert strip(ja.metadata) == strip(en.metadata)
            assert {k: v for k, v in ja.metadata.items() if k != "nbgrader"} == \
                {k: v for k, v in en.metadata.items() if k != "nbgrader"}


@pytest.mark.parametrize("lab", LABS)
def test_a_japanese_copy_differs_from_the_english_for_the_proof_only_by_its_edition(lab):
    """The proof keys read a notebook's code and nbgrader metadata, not its prose; the edition
    marker enters a key (each lab's proof grades the Japanese copy apart, as ``solution_ja``).
    Without the marker, the two editions' learner copies are one key."""
    english, japanese = _both(lab)
    english_key = keys.notebook_digest(nbformat.writes(english).encode())
    assert keys.notebook_digest(nbformat.writes(japanese).encode()) != english_key
    japanese.metadata.pop(edition.MARKER)
    assert keys.notebook_digest(nbformat.writes(japanese).encode()) == english_key


@pytest.mark.parametrize("document", documents.DOCUMENTS, ids=lambda d: d.name)
def test_every_readme_unit_has_a_current_translation_in_the_seeds_terms(document):
    catalog = editions.read("ja", document.name)
    assert [(m.context, m.id) for m in catalog if m.id] == documents.entries(document), \
        "the catalogue does not follow the English: make release"
    assert editions.translation_problems(catalog, "ja") == []  # none missing or stale; form and glossary held
    left = [m.context for m in catalog if m.id and not KANA.search(m.string)]
    assert left == [], "English left in place"


@pytest.mark.parametrize("document", documents.DOCUMENTS, ids=lambda d: d.name)
def test_the_published_readme_is_its_catalogue_of_today(document):
    """README.ja.md is what make release writes from the current English and catalogue."""
    expected = documents.translated(document, editions.read("ja", document.name), "ja")
    assert document.edition_path("ja").read_text(encoding="utf-8") == expected, "make release"


def test_the_two_readmes_link_to_each_other_at_the_top():
    readme = documents.DOCUMENTS[0]
    english_top = readme.path.read_text(encoding="utf-8").split("<!-- id:")[0]
    assert "(README.ja.md)" in english_top
    japanese_top = readme.edition_path("ja").read_text(encoding="utf-8").split("\n# ")[0]
    assert "(README.md)" in japanese_top and "受講者向け" in japanese_top
