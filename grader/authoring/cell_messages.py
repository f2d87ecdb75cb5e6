"""The catalogue of the texts that the labs' visible test cells pass to raylab's check helpers:
``check(cond, "message")``, ``check_equal(a, b, "what")``, ``hint="..."`` and the like.

Test cells are byte-identical in both editions, so these texts are translated at run time: the
helpers look each one up in ``src/raylab/locale/<lang>-cells.po`` (:func:`raylab.i18n.cell_text`).
A plain string is its own entry; an f-string is a pattern (flag ``raylab-f-string``): its text
with each value as ``{expression}`` (conversions and format specs left out: the helper receives
the formatted text), which the translation must keep. A text built any other way (``+``, a name)
stays English.

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
from pathlib import Path

import nbformat
from babel.messages.catalog import Catalog

from grader.authoring import editions, lab_status, raylab_messages
from grader.grading import course
from raylab import i18n

DOMAIN = "cells"
# The helper -> the position of its text argument (and its keyword); every one also takes hint=.
HELPERS = {"check": (1, "message"), "check_equal": (2, "what"), "check_close": (2, "what"),
           "check_type": (2, "what"), "check_keys": (2, "what"), "check_raises": (2, "what"),
           "checked": (0, "what")}
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


def pattern(node: ast.JoinedStr) -> str | None:
    """An f-string's catalogue text: its literal parts (braces doubled) and ``{expression}`` for
    each value; None when it has no literal text to recognise it by."""
    pieces = []
    for value in node.values:
        if isinstance(value, ast.Constant):
            pieces.append(value.value.replace("{", "{{").replace("}", "}}"))
        else:
            expression = ast.unparse(value.value)
            # A dict or set display would start with "{{", a literal brace: pad it.
            pieces.append("{" + (f" {expression} " if expression[:1] == "{" or expression[-1:] == "}" else expression) + "}")
    text = "".join(pieces)
    literal = "".join(p for p in i18n.pattern_parts(text) if isinstance(p, str))
    return text if literal.strip() else None


def _texts(call: ast.Call):
    """(text, is_pattern) of each translatable argument of a helper's call."""
    position, keyword = HELPERS[call.func.id]
    args = call.args[position:position + 1] + [k.value for k in call.keywords if k.arg in (keyword, "hint")]
    for arg in args:
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value:
            yield arg.value, False
        elif isinstance(arg, ast.JoinedStr) and (text := pattern(arg)):
            yield text, True


def messages_of(source: str, where: str, patterns: set | None = None) -> dict[str, list[str]]:
    """{text: [where, ...]} of the helpers' calls in the visible part of ``source``; the f-string
    patterns among them are also added to ``patterns`` when it is given."""
    found: dict[str, list[str]] = {}
    for node in ast.walk(ast.parse(visible(source), filename=where)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in HELPERS:
            for text, is_pattern in _texts(node):
                found.setdefault(text, []).append(where)
                if is_pattern and patterns is not None:
                    patterns.add(text)
    return found


def extract(labs: list[str] | None = None) -> tuple[dict[str, list[str]], set[str], list[str]]:
    """({text: [lab/cell id, ...]}, the f-string patterns among them, problems): the texts of the
    visible test code of the solution notebooks of finished labs (a lab in progress is released
    in no edition yet); a cell whose visible code does not parse is a problem."""
    found: dict[str, list[str]] = {}
    patterns: set[str] = set()
    problems = []
    for lab in labs or lab_status.finished_labs():
        nb = nbformat.read(course.solution_path(lab), as_version=4)
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            where = f"{lab}/{cell.get('id', '?')}"
            try:
                for text, places in messages_of(cell.source, where, patterns).items():
                    found.setdefault(text, []).extend(places)
            except SyntaxError as exc:
                problems.append(f"{where}: its visible code does not parse ({exc.msg})")
    return found, patterns, problems


def template(messages: dict[str, list[str]], patterns: set[str], lang: str) -> Catalog:
    catalog = editions.new_catalog(lang, "raylab-cells")
    catalog.project = "Ray Train & Tune Lab Kit, raylab test-cell messages"
    catalog.header_comment = (f"# {lang} translation of the texts the labs' visible test cells pass to\n"
                              "# raylab's check helpers. The English text is the msgid; an entry flagged\n"
                              "# raylab-f-string is an f-string: keep each {expression} as it is.")
    for text, places in messages.items():
        catalog.add(text, "", locations=sorted({(p.split("/", 1)[0], 0) for p in places}),
                    flags=[i18n.PATTERN_FLAG] if text in patterns else [])
    return catalog


def update(lang: str) -> Catalog:
    messages, patterns, _problems = extract()
    path = catalogue_path(lang)
    catalog = raylab_messages.merged(raylab_messages.read(lang, path), messages, lang,
                                     template(messages, patterns, lang))
    raylab_messages.write(lang, catalog, path)
    return catalog


def problems(lang: str) -> list[str]:
    messages, patterns, found = extract()
    catalog = raylab_messages.read(lang, catalogue_path(lang))
    for kind, texts in raylab_messages.counts(catalog, messages).items():
        found += [f"{kind}: {text[:70]!r}" for text in texts]
    for m in catalog:
        if m.id in patterns and i18n.PATTERN_FLAG not in m.flags:
            found.append(f"{m.id[:50]!r}: an f-string's entry without the {i18n.PATTERN_FLAG} flag")
    return found + raylab_messages.form_problems(catalog, lang)


def main(argv=None) -> int:
    return raylab_messages.command_line(argv, update, problems, catalogue_path, "{lang}-" + DOMAIN)


if __name__ == "__main__":
    raise SystemExit(main())
