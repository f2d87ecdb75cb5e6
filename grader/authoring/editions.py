"""Editions of the learner notebooks in another language, built from the same sources.

English is the source. Every prose cell of a lab's learner copy has an entry in the lab's gettext
catalogue, ``translations/<lang>/<lab>.po``, keyed by the cell's nbformat id (``msgctxt``), with the
English text as ``msgid`` and the translation as ``msgstr``. :func:`publish` (run by
``make release`` after the English release) first brings every catalogue up to date with the
English learner copy, as ``msgmerge`` would (:func:`updated`): an entry whose English changed
keeps its old translation, marked ``fuzzy`` with the English it was made from (``#| msgid``), and a
new cell gets an empty entry. Then it writes ``notebooks-<lang>/<lab>/<lab>.ipynb`` for each lab
whose entries are all translated and current, and for the others removes the old copy and names
the entries to translate (:func:`problems`).

The edition's code cells, cell ids and metadata are the English learner copy's, byte for byte, so
one grader grades both and a proof of one is a proof of the other (the proof keys read code and
nbgrader metadata, not prose). A locked prose cell carries nbgrader's checksum of its own text,
as ``nbgrader generate_assignment`` would give it. The notebook's own metadata adds one marker,
``{"raylab": {"edition": "<lang>"}}``: the grader reads it to run the learner's kernel with
``RAYLAB_LANG=<lang>`` and to write the feedback page in that language (``grader.grading.edition``).
"""
from __future__ import annotations

import copy
import datetime
import io
import re
import shutil
import sys
from pathlib import Path

import nbformat
from babel.messages.catalog import Catalog
from babel.messages.pofile import read_po, unescape, write_po

from grader.grading import course, edition

LANGUAGES = ("ja",)
TRANSLATIONS = course.ROOT / "translations"
# The header every catalogue carries: fixed, so that a release that changes no text changes no file.
HEADER_DATE = datetime.datetime(2026, 12, 6, tzinfo=datetime.timezone.utc)


def new_catalog(lang: str, lab: str, about: str | None = None) -> Catalog:
    """An empty catalogue; ``about`` says what its entries are (default: a lab's prose cells)."""
    catalog = Catalog(locale=lang, project=f"Ray Train & Tune Lab Kit, {lab}", version="2.58.0",
                      copyright_holder="the lab kit's authors", creation_date=HEADER_DATE,
                      revision_date=HEADER_DATE, fuzzy=False)
    about = about or f"the prose of {lab}: one entry per prose cell of the\n# learner copy, keyed by its cell id (msgctxt)"
    catalog.header_comment = f"# {lang} translation of {about}. English is the source."
    return catalog


def catalogue_path(lang: str, lab: str) -> Path:
    return TRANSLATIONS / lang / f"{lab}.po"


def edition_path(lang: str, lab: str) -> Path:
    return course.ROOT / f"notebooks-{lang}" / lab / f"{lab}.ipynb"


def prose(nb) -> list[tuple[str, str]]:
    """(cell id, English text) of every prose cell of a learner copy, in notebook order."""
    return [(cell.id, cell.source) for cell in nb.cells if cell.cell_type == "markdown"]


def read(lang: str, lab: str) -> Catalog:
    path = catalogue_path(lang, lab)
    if not path.exists():
        return new_catalog(lang, lab)
    with open(path, "rb") as fh:
        catalog = read_po(fh, locale=lang)
    previous = _previous_ids(path.read_text(encoding="utf-8"))
    for message in catalog:
        if message.context in previous:
            message.previous_id = [previous[message.context]]
    return catalog


def _previous_ids(text: str) -> dict[str, str]:
    """context -> the ``#| msgid`` of each entry that has one (Babel writes it, as quoted pieces on
    one or more ``#|`` lines, but does not read it back; the English a stale translation was made
    from must survive the next release)."""
    found = {}
    for block in text.split("\n\n"):
        lines = block.splitlines()
        previous = " ".join(line[3:] for line in lines if line.startswith("#| "))
        context = [line[len("msgctxt "):] for line in lines if line.startswith("msgctxt ")]
        if previous.startswith("msgid ") and context:
            found[_quoted(context[0])] = _quoted(previous[len("msgid "):])
    return found


def _quoted(pieces: str) -> str:
    return "".join(unescape(piece) for piece in QUOTED.findall(pieces))


def write(lang: str, lab: str, catalog: Catalog) -> Path:
    path = catalogue_path(lang, lab)
    path.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    write_po(buffer, catalog, width=0, include_previous=True, omit_header=False, sort_output=False)
    path.write_bytes(buffer.getvalue())
    return path


def updated(catalog: Catalog, entries: list[tuple[str, str]], lang: str, lab: str,
            about: str | None = None) -> Catalog:
    """A catalogue with exactly ``entries`` (in their order): translations kept where the English
    is unchanged, kept and marked fuzzy (with the previous English) where it changed, empty for new
    cells. Entries of cells that no longer exist are dropped."""
    by_context = {m.context: m for m in catalog if m.id and m.context}
    fresh = new_catalog(lang, lab, about)
    for context, english in entries:
        old = by_context.get(context)
        if old is None:
            fresh.add(english, "", context=context)
        elif old.id == english:
            fresh.add(english, old.string, context=context, flags=old.flags,
                      previous_id=old.previous_id if "fuzzy" in old.flags else ())
        else:
            previous = old.previous_id if "fuzzy" in old.flags and old.previous_id else old.id
            fresh.add(english, old.string, context=context, flags={"fuzzy"} if old.string else set(),
                      previous_id=previous if old.string else ())
    return fresh


def problems(catalog: Catalog) -> list[str]:
    """Each entry not ready to publish: untranslated, or translated from English that changed."""
    found = []
    for message in catalog:
        if not message.id:
            continue
        if not message.string:
            found.append(f"missing: {message.context}")
        elif message.fuzzy:
            found.append(f"stale: {message.context} (the English changed since it was translated)")
    return found


QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"')
# A code span may cross a line break (not a blank line), as Markdown allows.
CODE_SPAN = re.compile(r"(```.*?```|`(?:[^`\n]|\n(?!\n))+`)", re.S)
LINK_TARGET = re.compile(r"\]\(([^)\s]+)\)")
HEADING = re.compile(r"^(#+) ", re.M)


def form_problems(english: str, text: str) -> list[str]:
    """What a translation changed that is not prose: code spans and blocks, link targets, the
    heading levels (in order), and a table's row count."""
    found = []
    if sorted(CODE_SPAN.findall(english)) != sorted(CODE_SPAN.findall(text)):
        missing = sorted(set(CODE_SPAN.findall(english)) - set(CODE_SPAN.findall(text)))
        extra = sorted(set(CODE_SPAN.findall(text)) - set(CODE_SPAN.findall(english)))
        found.append(f"code differs: missing {missing[:3]}, added {extra[:3]}")
    if sorted(LINK_TARGET.findall(english)) != sorted(LINK_TARGET.findall(text)):
        found.append("link targets differ")
    if HEADING.findall(english) != HEADING.findall(text):
        found.append(f"heading levels differ: {HEADING.findall(english)} vs {HEADING.findall(text)}")
    rows = lambda s: sum(1 for line in s.splitlines() if line.lstrip().startswith("|"))  # noqa: E731
    if rows(english) != rows(text):
        found.append(f"table rows differ: {rows(english)} vs {rows(text)}")
    return found


def glossary(lang: str) -> dict:
    import yaml

    path = TRANSLATIONS / lang / "glossary.yaml"
    return yaml.safe_load(path.read_text()) if path.exists() else {"keep": [], "use": []}


def term_problems(english: str, text: str, terms: dict) -> list[str]:
    """Where a translation departs from the glossary: a term kept in English that the English
    holds and the translation drops, or a rendering the glossary rules out."""
    found = []
    plain = CODE_SPAN.sub(" ", text)
    for kept in terms.get("keep", []):
        if re.search(rf"\b{re.escape(kept['term'])}(s|es)?\b", CODE_SPAN.sub(" ", english), re.I) and \
                not re.search(re.escape(kept["term"]), plain, re.I):
            found.append(f"keeps '{kept['term']}' in English in the seed's way, but the translation drops it")
    for entry in terms.get("use", []):
        plain = plain.replace(entry["ja"], " ")
    for entry in terms.get("keep", []) + terms.get("use", []):
        for avoided in entry.get("avoid", []):
            if avoided in plain:
                found.append(f"'{avoided}': the glossary writes {entry.get('term') or entry['ja']!r}")
    return found


def translation_problems(catalog: Catalog, lang: str) -> list[str]:
    """:func:`problems`, then the form and the terms of every translated entry."""
    found, terms = problems(catalog), glossary(lang)
    for message in catalog:
        if message.id and message.string:
            found += [f"{message.context}: {p}" for p in form_problems(message.id, message.string)
                      + term_problems(message.id, message.string, terms)]
    return found


def translated(nb, catalog: Catalog, lang: str = "ja"):
    """The learner copy ``nb`` with each prose cell's text from ``catalog`` (a complete, current one)
    and the edition's marker."""
    from nbgrader.utils import compute_checksum

    strings = {m.context: m.string for m in catalog if m.id}
    out = edition.marked(copy.deepcopy(nb), lang)
    for cell in out.cells:
        if cell.cell_type != "markdown":
            continue
        cell.source = strings[cell.id]
        meta = cell.metadata.get("nbgrader", {})
        if "checksum" in meta:
            meta["checksum"] = compute_checksum(cell)
    return out


def follow(lang: str, name: str, entries: list[tuple[str, str]], about: str | None = None) -> tuple[Catalog, list[str]]:
    """Bring catalogue ``name`` up to date with the English ``entries``, write it, and return it
    with what keeps it from being published (:func:`problems`)."""
    catalog = updated(read(lang, name), entries, lang, name, about)
    write(lang, name, catalog)
    return catalog, problems(catalog)


def publish(labs: list[str], lang: str) -> dict[str, list[str]]:
    """Update each lab's catalogue and write its edition; {lab: problems} for the labs left out."""
    left_out = {}
    for lab in labs:
        english = nbformat.read(course.release_path(lab), as_version=4)
        catalog, found = follow(lang, lab, prose(english))
        target = edition_path(lang, lab)
        if found:
            left_out[lab] = found
            shutil.rmtree(target.parent, ignore_errors=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(translated(english, catalog, lang), target)
    return left_out


def report(left_out: dict[str, list[str]], lang: str) -> str:
    lines = []
    for lab, found in left_out.items():
        lines.append(f"{lang} edition of {lab} not published: {len(found)} entr{'y' if len(found) == 1 else 'ies'} of "
                     f"{catalogue_path(lang, lab).relative_to(course.ROOT)} to translate:")
        lines += [f"  {entry}" for entry in found[:20]] + ([f"  ... and {len(found) - 20} more"] if len(found) > 20 else [])
    return "\n".join(lines)


def main(argv=None) -> int:
    """``python -m grader.authoring.editions check ja LAB``: what a catalogue still needs (entries to
    translate, form and glossary departures); without ``check``: publish the editions of LABS."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["check"]:
        lang, labs = argv[1], argv[2:]
        found = {lab: translation_problems(read(lang, lab), lang) for lab in labs}
        for lab, entries in found.items():
            print(f"{lab}: {len(entries)} problem(s)", *entries, sep="\n  ")
        return 1 if any(found.values()) else 0
    labs = argv or [lab for lab in course.labs() if course.release_path(lab).exists()]
    for lang in LANGUAGES:
        left_out = publish(labs, lang)
        print(report(left_out, lang) or f"{lang} edition published: {', '.join(labs)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
