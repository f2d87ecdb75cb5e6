"""The catalogue of raylab's own messages: what checks, hints and helpers print or raise for the
learner, marked ``_("...")`` or ``N_("...")`` in ``src/raylab`` (:mod:`raylab.i18n`).

``python -m grader.authoring.raylab_messages update`` brings ``src/raylab/locale/<lang>.po`` up to
date with the code, as ``msgmerge`` would: a new message gets an empty entry, a changed one keeps
the translation of the closest old English marked ``fuzzy``, a message no longer in the code is
kept as an obsolete (``#~``) entry to reuse or delete. ``... check`` lists what is not ready:
missing, stale (fuzzy) and obsolete entries, a translation whose placeholders or code spans differ
from its English, and departures from the glossary (``translations/<lang>/glossary.yaml``, the
same terms as the notebooks' edition). ``tests/grader/test_raylab_catalogue.py`` requires none.
:mod:`grader.authoring.cell_messages` keeps the second catalogue, of the test cells' texts.
"""
from __future__ import annotations

import ast
import io
import string
import sys
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.pofile import read_po, write_po

from grader.authoring import editions
from grader.grading import course
from raylab import i18n

SOURCE = course.ROOT / "src" / "raylab"
MARKS = ("_", "N_")


def catalogue_path(lang: str) -> Path:
    return SOURCE / "locale" / f"{lang}.po"


def _marked_calls(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in MARKS:
            yield node


def extract(source: Path = SOURCE) -> tuple[dict[str, list[str]], list[str]]:
    """({English text: ["file:line", ...]}, problems): every marked message of the package, and
    each mark whose argument is built there (an f-string, a ``+`` or ``%``, a call such as
    ``.format``), which no catalogue can hold. ``_(name)`` looks up a text marked ``N_`` elsewhere."""
    found: dict[str, list[str]] = {}
    problems = []
    for path in sorted(source.rglob("*.py")):
        where = path.relative_to(source.parent).as_posix()
        for call in _marked_calls(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            arg = call.args[0] if len(call.args) == 1 and not call.keywords else None
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value:
                found.setdefault(arg.value, []).append(f"{where}:{call.lineno}")
            elif arg is None or isinstance(arg, (ast.Constant, ast.JoinedStr, ast.BinOp, ast.Call)) \
                    or call.func.id == "N_":
                problems.append(f"{where}:{call.lineno}: {call.func.id}() takes one plain string "
                                "(values go in through .format(name=...) after it)")
    return found, problems


def template(messages: dict[str, list[str]], lang: str) -> Catalog:
    catalog = editions.new_catalog(lang, "raylab")
    catalog.project = "Ray Train & Tune Lab Kit, raylab"
    catalog.header_comment = (f"# {lang} translation of the messages raylab prints and raises for the\n"
                              "# learner (src/raylab, marked _() / N_()). The English text is the msgid.")
    for text, places in messages.items():
        catalog.add(text, "", locations=sorted({(p.rsplit(":", 1)[0], 0) for p in places}))
    return catalog


def read(lang: str, path: Path | None = None) -> Catalog:
    path = path or catalogue_path(lang)
    if not path.exists():
        return template({}, lang)
    with open(path, "rb") as fh:
        return read_po(fh, locale=lang)


def write(lang: str, catalog: Catalog, path: Path | None = None) -> Path:
    path = path or catalogue_path(lang)
    path.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    # Files, not lines, in the location comments: an edit elsewhere in a module leaves the file alone.
    write_po(buffer, catalog, width=0, include_previous=True, omit_header=False, sort_output=False,
             ignore_obsolete=False, include_lineno=False)
    path.write_bytes(buffer.getvalue())
    return path


def merged(catalog: Catalog, messages: dict[str, list[str]], lang: str, fresh: Catalog | None = None) -> Catalog:
    """``catalog`` brought up to date with ``messages`` (Babel's ``Catalog.update``, msgmerge's rules)."""
    fresh = fresh or template(messages, lang)
    catalog.update(fresh, update_header_comment=True, update_creation_date=False)
    catalog.header_comment = fresh.header_comment
    catalog.revision_date = editions.HEADER_DATE
    return catalog


def update(lang: str) -> Catalog:
    """The catalogue brought up to date with the code, and written."""
    messages, _problems = extract()
    catalog = merged(read(lang), messages, lang)
    write(lang, catalog)
    return catalog


def _fields(text: str) -> list[str]:
    return sorted(name for _lit, name, _spec, _conv in string.Formatter().parse(text) if name is not None)


def counts(catalog: Catalog, messages: dict) -> dict[str, list[str]]:
    """The entries not ready: missing (a message of the code with no translation), stale (fuzzy:
    its English changed since it was translated) and obsolete (no longer in the code)."""
    entries = {m.id: m for m in catalog if m.id}
    return {
        "missing": [t for t in messages if t not in entries or not entries[t].string],
        "stale": [t for t in messages if t in entries and entries[t].string and entries[t].fuzzy],
        "obsolete": [m.id for m in catalog.obsolete.values()] + [t for t in entries if t not in messages],
    }


def problems(lang: str) -> list[str]:
    """Everything :func:`counts` finds, the marks no catalogue can hold, and each translation whose
    placeholders or code spans differ from its English or that departs from the glossary."""
    messages, found = extract()
    catalog = read(lang)
    for kind, texts in counts(catalog, messages).items():
        found += [f"{kind}: {text[:70]!r}" for text in texts]
    return found + form_problems(catalog, lang)


def form_problems(catalog: Catalog, lang: str) -> list[str]:
    """Each translation whose placeholders or code spans differ from its English, or that departs
    from the glossary."""
    found = []
    terms = editions.glossary(lang)
    for m in catalog:
        if not (m.id and m.string):
            continue
        issues = editions.term_problems(m.id, m.string, terms)
        # An f-string's pattern holds expressions, not format fields (raylab.i18n.pattern_parts).
        fields = i18n.placeholders if i18n.PATTERN_FLAG in m.flags else _fields
        try:
            if fields(m.id) != fields(m.string):
                issues.append(f"placeholders differ: {fields(m.id)} vs {fields(m.string)}")
        except ValueError as exc:
            issues.append(f"placeholders do not parse: {exc}")
        if sorted(editions.CODE_SPAN.findall(m.id)) != sorted(editions.CODE_SPAN.findall(m.string)):
            issues.append("code spans differ")
        found += [f"{m.id[:50]!r}: {issue}" for issue in issues]
    return found


def command_line(argv, update, problems, path, label: str) -> int:
    """``update [LANG]``: bring a catalogue up to date; ``check [LANG]``: list what it still needs
    (exit 1 if anything). ``update``/``problems`` take the language, ``path`` gives its file."""
    argv = list(sys.argv[1:] if argv is None else argv)
    command, lang = (argv + ["check"])[0], (argv[1:] + ["ja"])[0]
    if command == "update":
        catalog = update(lang)
        print(f"{path(lang).relative_to(course.ROOT)}: {sum(1 for m in catalog if m.id)} messages")
    found = problems(lang)
    print(f"{label.format(lang=lang)}: {len(found)} problem(s)", *found, sep="\n  ")
    return 1 if found else 0


def main(argv=None) -> int:
    return command_line(argv, update, problems, catalogue_path, "{lang}")


if __name__ == "__main__":
    raise SystemExit(main())
