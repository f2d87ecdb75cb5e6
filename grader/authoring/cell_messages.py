"""The catalogue of the texts that the labs' visible test cells pass to raylab's check helpers:
``check(cond, "message")``, ``check_equal(a, b, "what")``, ``hint="..."`` and the like.

Test cells are byte-identical in both editions, so these texts are translated at run time: the
helpers look each one up in ``src/raylab/locale/<lang>-cells.po`` (:func:`raylab.i18n.cell_text`).
Only plain string literals can be looked up; an f-string stays English.

That catalogue ships to learners inside raylab, so it is read only from VISIBLE test code: the
lines between ``### BEGIN HIDDEN TESTS`` and ``### END HIDDEN TESTS``, and between
``### BEGIN SOLUTION`` and ``### END SOLUTION``, are dropped before the code is parsed.

``python -m grader.authoring.cell_messages update [LANG]`` brings the catalogue up to date with
the solution notebooks (msgmerge's rules, as :mod:`grader.authoring.raylab_messages`);
``... check [LANG]`` lists missing, stale and obsolete entries and translations that break the
glossary or the code spans. ``tests/grader/test_raylab_catalogue.py`` requires none.
"""
from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import nbformat
from babel.messages.catalog import Catalog

from grader.authoring import editions, lab_status, raylab_messages
from grader.grading import course

DOMAIN = "cells"
# The helper -> the position of its text argument (and its keyword); every one also takes hint=.
HELPERS = {"check": (1, "message"), "check_equal": (2, "what"), "check_close": (2, "what"),
           "check_type": (2, "what"), "check_keys": (2, "what"), "check_raises": (2, "what")}
REGIONS = (("### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"), ("### BEGIN SOLUTION", "### END SOLUTION"))
MAGIC = re.compile(r"^\s*[%!]")


def catalogue_path(lang: str) -> Path:
    return raylab_messages.SOURCE / "locale" / f"{lang}-{DOMAIN}.po"


def visible(source: str) -> str:
    """``source`` without its hidden tests and solutions (each region becomes a ``pass`` at its
    indentation, so what is left still parses) and without IPython magics."""
    kept, inside = [], None
    for line in source.splitlines():
        stripped = line.strip()
        if inside is None:
            inside = next((end for begin, end in REGIONS if stripped.startswith(begin)), None)
            if inside is not None:
                kept.append(line[:len(line) - len(line.lstrip())] + "pass")
            else:
                kept.append("" if MAGIC.match(line) else line)
        elif stripped.startswith(inside):
            inside = None
    return "\n".join(kept)


def _texts(call: ast.Call):
    position, keyword = HELPERS[call.func.id]
    args = call.args[position:position + 1] + [k.value for k in call.keywords if k.arg in (keyword, "hint")]
    for arg in args:
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value:
            yield arg.value


def messages_of(source: str, where: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for node in ast.walk(ast.parse(visible(source), filename=where)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in HELPERS:
            for text in _texts(node):
                found.setdefault(text, []).append(where)
    return found


def extract(labs: list[str] | None = None) -> tuple[dict[str, list[str]], list[str]]:
    """({text: [lab/cell id, ...]}, problems): the literal texts of the visible test code of the
    solution notebooks of finished labs (a lab in progress is released in no edition yet); a cell
    whose visible code does not parse is a problem."""
    found: dict[str, list[str]] = {}
    problems = []
    for lab in labs or lab_status.finished_labs():
        nb = nbformat.read(course.solution_path(lab), as_version=4)
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            where = f"{lab}/{cell.get('id', '?')}"
            try:
                for text, places in messages_of(cell.source, where).items():
                    found.setdefault(text, []).extend(places)
            except SyntaxError as exc:
                problems.append(f"{where}: its visible code does not parse ({exc.msg})")
    return found, problems


def template(messages: dict[str, list[str]], lang: str) -> Catalog:
    catalog = editions.new_catalog(lang, "raylab-cells")
    catalog.project = "Ray Train & Tune Lab Kit, raylab test-cell messages"
    catalog.header_comment = (f"# {lang} translation of the texts the labs' visible test cells pass to\n"
                              "# raylab's check helpers. The English text is the msgid.")
    for text, places in messages.items():
        catalog.add(text, "", locations=sorted({(p.split("/", 1)[0], 0) for p in places}))
    return catalog


def update(lang: str) -> Catalog:
    messages, _problems = extract()
    path = catalogue_path(lang)
    catalog = raylab_messages.merged(raylab_messages.read(lang, path), messages, lang,
                                     template(messages, lang))
    raylab_messages.write(lang, catalog, path)
    return catalog


def problems(lang: str) -> list[str]:
    messages, found = extract()
    catalog = raylab_messages.read(lang, catalogue_path(lang))
    for kind, texts in raylab_messages.counts(catalog, messages).items():
        found += [f"{kind}: {text[:70]!r}" for text in texts]
    return found + raylab_messages.form_problems(catalog, lang)


def main(argv=None) -> int:
    """``update [LANG]`` / ``check [LANG]``, as :func:`grader.authoring.raylab_messages.main`."""
    argv = list(sys.argv[1:] if argv is None else argv)
    command, lang = (argv + ["check"])[0], (argv[1:] + ["ja"])[0]
    if command == "update":
        catalog = update(lang)
        print(f"{catalogue_path(lang).relative_to(course.ROOT)}: {sum(1 for m in catalog if m.id)} messages")
    found = problems(lang)
    print(f"{lang}-{DOMAIN}: {len(found)} problem(s)", *found, sep="\n  ")
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
