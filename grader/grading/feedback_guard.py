"""Feedback never carries hidden-test text: scan the feedback page, redact, and say so.

The hidden tests are removed from the test cells' sources by nbgrader (``ClearHiddenTests``), but
the *outputs* are whatever the kernel produced, and learner code shares the kernel with the tests:
it can print the source of the cell that is running (an IPython event hook, ``In``, a frame's
source) or put it in an exception message. Before a feedback page is kept, every line of every
hidden test of every lab (from ``solutions/``) and of the graded notebook itself is looked up in
it, as plain and as HTML-escaped text, and replaced. What a scan of text cannot see: test source
the learner's code *encodes* (base64, reversed...) before printing it; README's guarantees say so.
"""
from __future__ import annotations

import functools
import html
import re
from pathlib import Path

from grader.grading import course

MARKER = "[hidden test text removed]"
MIN_LINE = 12  # shorter lines ("assert ok") are too common to be evidence of a leak
_BLOCK = re.compile(r"### BEGIN HIDDEN TESTS\n(.*?)### END HIDDEN TESTS", re.S)


def hidden_lines_of(sources) -> set[str]:
    """The lines of the hidden-test blocks in ``sources`` that are evidence of a leak: long enough,
    and not also in a learner copy (:func:`public_text`)."""
    found = set()
    for source in sources:
        for block in _BLOCK.findall(source):
            found |= {line.strip() for line in block.splitlines() if len(line.strip()) >= MIN_LINE}
    public = public_text()
    return {line for line in found if line not in public}


@functools.lru_cache(maxsize=4)
def public_text(released: Path = course.ROOT / "notebooks") -> str:
    """All text of the learner copies: a line a learner already has is no leak (a hidden test
    may repeat a common line such as ``import torch as _torch``), and redacting it would flag
    honest submissions."""
    import nbformat

    return "\n".join(cell.source for path in sorted(Path(released).glob("*/*.ipynb"))
                     for cell in nbformat.read(path, as_version=4).cells)


@functools.lru_cache(maxsize=4)
def course_hidden_lines(solutions: Path = course.SOLUTIONS) -> frozenset:
    import nbformat

    sources = []
    for path in sorted(Path(solutions).glob("*/*.ipynb")):
        sources += [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
    return frozenset(hidden_lines_of(sources))


def notebook_hidden_lines(autograded_text: str | None) -> set[str]:
    """Hidden-test lines of the graded notebook itself (restored into it by nbgrader)."""
    if not autograded_text:
        return set()
    import nbformat

    nb = nbformat.reads(autograded_text, as_version=4)
    return hidden_lines_of(c.source for c in nb.cells if c.cell_type == "code")


def redact(text: str, lines=None) -> tuple[str, int]:
    """``text`` with every hidden-test line replaced; and how many places were replaced."""
    lines = set(course_hidden_lines()) if lines is None else set(lines)
    count = 0
    forms = set()
    for line in lines:
        forms |= {line, html.escape(line, quote=False), html.escape(line, quote=True),
                  html.escape(line, quote=False).replace('"', "&#34;").replace("'", "&#39;")}
    for form in sorted(forms, key=len, reverse=True):
        if form in text:
            count += text.count(form)
            text = text.replace(form, MARKER)
    return text, count
