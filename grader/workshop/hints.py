"""Feedback hints that say where a test cell failed, visible or hidden checks, without showing it.

The class grader's feedback gives a failed test cell without a course hint one generic line,
"Hint: reread "<section>" and run the visible checks again." (its Japanese in the Japanese edition). A learner whose visible checks pass
reads that as nonsense: the failing check was a hidden one. The graded notebook still holds the
test cell's full traceback and its hidden block, so the failing line of the test cell (the line
IPython marks ``---->`` in the cell's own frame) tells which part failed. :func:`refine` rewrites
each generic hint of a feedback page accordingly, in the order of the failed test cells; a cell
whose failing line cannot be placed keeps the generic hint. Used when the workshop releases
feedback (grader.workshop.feedback); nothing here runs learner code.
"""
from __future__ import annotations

import re

from grader.grading.nbgrader_ext import HideGradeCellTracebacks

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_ARROW = re.compile(r"^-+> *\d+ (.*)$")
_QUOTE = r"(?:\"|&quot;|&#34;)"
_HIDDEN = re.compile(r"### BEGIN HIDDEN TESTS\n(.*?)### END HIDDEN TESTS", re.S)
HINT_PREFIXES = HideGradeCellTracebacks.HINT_PREFIXES  # a course check's own hint, in either edition

# The generic pointer of each edition (HideGradeCellTracebacks.GENERIC_HINT), and what replaces it.
GENERIC = {"en": re.compile(rf"Hint: reread {_QUOTE}(.*?){_QUOTE} and run the visible checks again\."),
           "ja": re.compile(r"ヒント: 「(.*?)」を読み直し、表示されているチェックをもう一度実行してください。")}
VISIBLE = {"en": 'Hint: a visible check of this cell failed: run the cell again in your notebook and reread "{}".',
           "ja": "ヒント: このセルの表示されているチェックが失敗しました。ノートブックでセルをもう一度実行し、"
                 "「{}」を読み直してください。"}
HIDDEN = {"en": ('Hint: the visible checks of this cell pass; one of the hidden checks failed. Reread "{}" '
                 "for what the exercise asks beyond the visible checks."),
          "ja": ("ヒント: このセルの表示されているチェックは通りますが、表示されていないチェックの 1 つが"
                 "失敗しました。演習が表示されているチェック以上に求めていることを「{}」で読み直してください。")}


def failing_line(traceback: list[str]) -> str | None:
    """The source line IPython marks as failing in the first frame of the cell itself."""
    text = _ANSI.sub("", "\n".join(traceback))
    in_cell = False
    for line in text.splitlines():
        if line.startswith("Cell In["):
            in_cell = True
        elif in_cell and (match := _ARROW.match(line.strip())):
            return match.group(1).strip()
    return None


def where_failed(cell) -> str | None:
    """"hidden", "visible", or None (no error without a course hint, or not placeable)."""
    errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
    if not errors or _has_hint(errors[-1]):
        return None
    line = failing_line(errors[-1].get("traceback", []))
    if not line:
        return None
    hidden = {l.strip() for block in _HIDDEN.findall(cell.source) for l in block.splitlines() if l.strip()}
    visible = {l.strip() for l in _HIDDEN.sub("", cell.source).splitlines() if l.strip()}
    if line in hidden and line not in visible:
        return "hidden"
    return "visible" if line in visible else None


def refine(page: str, graded_notebook: str) -> tuple[str, int]:
    """``page`` with each generic hint placed (visible or hidden); and how many were changed."""
    import nbformat
    from nbgrader import utils

    nb = nbformat.reads(graded_notebook, as_version=4)
    places = []
    for cell in nb.cells:
        if cell.cell_type == "code" and utils.is_grade(cell):
            errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
            if errors and not _has_hint(errors[-1]):
                places.append(where_failed(cell))
    changed = 0
    lang = next((lang for lang, generic in GENERIC.items() if generic.search(page)), "en")

    def place(match):
        nonlocal changed
        index = place.count
        place.count += 1
        where = places[index] if index < len(places) else None
        if where is None:
            return match.group(0)
        changed += 1
        return (HIDDEN if where == "hidden" else VISIBLE)[lang].format(match.group(1))

    place.count = 0
    return GENERIC[lang].sub(place, page), changed


def _has_hint(error: dict) -> bool:
    """Whether a failed cell's error carries a course check's own hint (then no generic one)."""
    return any(prefix in str(error.get("evalue", "")) for prefix in HINT_PREFIXES)
