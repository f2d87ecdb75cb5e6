"""grader.authoring.editions on in-memory notebooks and catalogues (fast): how a catalogue follows
the English, what it refuses to publish, and what the edition copies byte for byte."""
import nbformat
from nbgrader.utils import compute_checksum

from grader.authoring import editions


def _learner_copy(*prose: str):
    cells = []
    for k, text in enumerate(prose):
        md = nbformat.v4.new_markdown_cell(text, id=f"md-{k}")
        md.metadata["nbgrader"] = {"grade": False, "solution": False, "locked": True, "grade_id": f"md_{k}",
                                   "schema_version": 3, "cell_type": "markdown"}
        md.metadata["nbgrader"]["checksum"] = compute_checksum(md)
        code = nbformat.v4.new_code_cell(f"x{k} = {k}  # `code` stays\n", id=f"code-{k}")
        code.metadata["nbgrader"] = {"grade": False, "solution": False, "locked": True, "grade_id": f"code_{k}",
                                     "schema_version": 3, "cell_type": "code"}
        cells += [md, code]
    return nbformat.v4.new_notebook(cells=cells)


def _catalogue(nb, strings=None):
    catalog = editions.updated(editions.new_catalog("ja", "99_x"), editions.prose(nb), "ja", "99_x")
    for message in catalog:
        if message.id and strings:
            message.string = strings[message.context]
    return catalog


def test_a_new_catalogue_has_one_empty_entry_per_prose_cell_keyed_by_cell_id():
    catalog = _catalogue(_learner_copy("# Title", "Some *prose*."))
    assert [(m.context, m.id, m.string) for m in catalog if m.id] == [("md-0", "# Title", ""),
                                                                     ("md-1", "Some *prose*.", "")]
    assert editions.problems(catalog) == ["missing: md-0", "missing: md-1"]


def test_changed_english_keeps_the_translation_marked_stale_with_what_it_was_made_from():
    old = _catalogue(_learner_copy("# Title", "Old text."), {"md-0": "# 題名", "md-1": "古い文。"})
    assert editions.problems(old) == []
    new = editions.updated(old, editions.prose(_learner_copy("# Title", "New text.", "A new cell.")), "ja", "99_x")
    entries = {m.context: m for m in new if m.id}
    assert entries["md-0"].string == "# 題名" and not entries["md-0"].fuzzy
    assert entries["md-1"].string == "古い文。" and entries["md-1"].fuzzy
    assert entries["md-1"].previous_id == ["Old text."]
    assert editions.problems(new) == ["stale: md-1 (the English changed since it was translated)", "missing: md-2"]
    # the next release still knows what the stale translation was made from
    again = editions.updated(new, editions.prose(_learner_copy("# Title", "Newer text.", "A new cell.")), "ja", "99_x")
    assert {m.context: m.previous_id for m in again if m.id}["md-1"] == ["Old text."]


def test_a_deleted_cell_leaves_the_catalogue():
    old = _catalogue(_learner_copy("# Title", "Gone."), {"md-0": "# 題名", "md-1": "消えた。"})
    new = editions.updated(old, editions.prose(_learner_copy("# Title")), "ja", "99_x")
    assert [m.context for m in new if m.id] == ["md-0"]


def test_the_po_file_keeps_every_character_and_the_stale_mark(tmp_path, monkeypatch):
    monkeypatch.setattr(editions, "TRANSLATIONS", tmp_path)
    nb = _learner_copy('Quotes "x", a backslash \\ and\nlines.', 'Old "text"\non two lines.')
    catalog = _catalogue(nb, {"md-0": '引用 "x"、バックスラッシュ \\ と\n行。', "md-1": "古い。"})
    catalog = editions.updated(catalog, editions.prose(_learner_copy('Quotes "x", a backslash \\ and\nlines.', "New.")),
                               "ja", "99_x")
    editions.write("ja", "99_x", catalog)
    back = {m.context: m for m in editions.read("ja", "99_x") if m.id}
    assert back["md-0"].string == '引用 "x"、バックスラッシュ \\ と\n行。'
    assert back["md-1"].fuzzy and back["md-1"].previous_id == ['Old "text"\non two lines.']


def test_the_edition_changes_prose_only_and_gives_it_nbgraders_checksum():
    nb = _learner_copy("# Title", "Text.")
    ja = editions.translated(nb, _catalogue(nb, {"md-0": "# 題名", "md-1": "本文。"}))
    for en_cell, ja_cell in zip(nb.cells, ja.cells):
        assert en_cell.id == ja_cell.id and en_cell.cell_type == ja_cell.cell_type
        if en_cell.cell_type == "code":
            assert ja_cell == en_cell
        else:
            assert ja_cell.source != en_cell.source
            assert ja_cell.metadata.nbgrader.checksum == compute_checksum(ja_cell) != en_cell.metadata.nbgrader.checksum
            assert {k: v for k, v in ja_cell.metadata.nbgrader.items() if k != "checksum"} == \
                {k: v for k, v in en_cell.metadata.nbgrader.items() if k != "checksum"}


def test_form_problems_see_changed_code_links_headings_and_tables():
    english = "## 1. Run `ray.init()`\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n[docs](https://docs.ray.io)"
    good = "## 1. `ray.init()` を実行します\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n[ドキュメント](https://docs.ray.io)"
    assert editions.form_problems(english, good) == []
    bad = "# 1. `ray.init` を実行\n\n| a | b |\n|---|---|\n\n[ドキュメント](https://example.com)"
    found = " ".join(editions.form_problems(english, bad))
    for what in ("code differs", "link targets differ", "heading levels differ", "table rows differ"):
        assert what in found


def test_term_problems_hold_the_seeds_terms():
    terms = {"keep": [{"term": "worker", "avoid": ["ワーカー"]}],
             "use": [{"en": "cluster", "ja": "クラスター", "avoid": ["クラスタ"]}]}
    assert editions.term_problems("Each worker joins the cluster.", "各 worker がクラスターに参加します。", terms) == []
    found = editions.term_problems("Each worker joins the cluster.", "各ワーカーがクラスタに参加します。", terms)
    assert len(found) == 3  # worker dropped, ワーカー, クラスタ (クラスター itself is fine)


def test_publish_refuses_a_stale_lab_names_its_entries_and_removes_the_old_copy(tmp_path, monkeypatch):
    from grader.grading import course

    monkeypatch.setattr(course, "ROOT", tmp_path)
    monkeypatch.setattr(course, "NOTEBOOKS", tmp_path / "notebooks")
    monkeypatch.setattr(editions, "TRANSLATIONS", tmp_path / "translations")
    release = course.release_path("99_x")
    release.parent.mkdir(parents=True)
    nbformat.write(_learner_copy("# Title", "Text."), release)
    assert editions.publish(["99_x"], "ja") == {"99_x": ["missing: md-0", "missing: md-1"]}
    assert not editions.edition_path("ja", "99_x").exists()
    catalog = editions.read("ja", "99_x")
    for message, japanese in zip([m for m in catalog if m.id], ["# 題名", "本文。"]):
        message.string = japanese
    editions.write("ja", "99_x", catalog)
    assert editions.publish(["99_x"], "ja") == {}
    assert nbformat.read(editions.edition_path("ja", "99_x"), as_version=4).cells[2].source == "本文。"
    nbformat.write(_learner_copy("# Title", "Changed text."), release)  # the English changes
    left_out = editions.publish(["99_x"], "ja")
    assert left_out == {"99_x": ["stale: md-1 (the English changed since it was translated)"]}
    assert not editions.edition_path("ja", "99_x").exists()
    assert "stale: md-1" in editions.report(left_out, "ja")
