"""What the grader checks in a submitted file before nbgrader sees it (outside the learner's code).

- the bytes are a notebook nbformat accepts (otherwise: a reason, no grading);
- **copied nbgrader cells**: copying a cell in JupyterLab copies its nbgrader metadata, so two cells
  carry one grade id. nbgrader grades one cell per id (its gradebook has one row per id) and its
  autograde stops with ``KeyError: 'grade_id'`` on metadata without an id. The grader keeps the
  first cell of each id as the graded cell and turns every later copy (and every cell whose nbgrader
  metadata has no id) into an ordinary cell: its code still runs where the learner put it, so an
  answer written into a copy still counts. Each case is flagged with a reason a learner understands.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field


@dataclass
class Checked:
    problem: str | None = None  # why the file cannot be graded at all
    flags: list = field(default_factory=list)
    data: bytes = b""  # the notebook nbgrader grades (copies resolved)
    notebook: object = None  # the same, as an nbformat node


def check(data: bytes) -> Checked:
    import nbformat

    try:
        raw = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return Checked(f"not valid JSON ({exc.__class__.__name__}: {str(exc)[:80]})")
    if not isinstance(raw, dict) or "cells" not in raw:
        return Checked("JSON but not a notebook (no 'cells')")
    try:
        nb = nbformat.reads(data.decode("utf-8"), as_version=4)
        nbformat.validate(nb)
    except Exception as exc:  # noqa: BLE001 - any validation failure is the learner's file
        return Checked(f"not a valid notebook ({str(exc).splitlines()[0][:100]})")
    flags = resolve_copies(nb)
    if flags:
        data = nbformat.writes(nb).encode("utf-8")
    return Checked(None, flags, data, nb)


def resolve_copies(nb) -> list[str]:
    """Make later copies of a graded cell ordinary cells (in place); one flag per copy."""
    seen, flags = set(), []
    for index, cell in enumerate(nb.cells, start=1):
        meta = cell.get("metadata", {}).get("nbgrader")
        if not isinstance(meta, dict):
            continue
        grade_id = meta.get("grade_id")
        if grade_id is None or grade_id in seen:
            del cell.metadata["nbgrader"]
            what = f"a copy of the graded cell '{grade_id}'" if grade_id else "a cell with incomplete grading data"
            flags.append(f"cell {index} is {what}: it ran as an ordinary cell and was not graded itself "
                         "(nbgrader grades one cell per id: the first one)")
        else:
            seen.add(grade_id)
    return flags
