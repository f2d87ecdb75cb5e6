"""Write and edit solution notebooks through a plain-text form.

``solutions/NN_topic/NN_topic.ipynb`` stays the source of truth (it is nbgrader's source
directory, and the formgrader edits it too). Editing notebook JSON by hand is error-prone, so this
module converts a notebook to a readable text form and back, with the nbgrader metadata the course
uses::

    python -m grader.authoring.text to-text solutions/00_lab_setup/00_lab_setup.ipynb > /tmp/lab.txt
    $EDITOR /tmp/lab.txt
    python -m grader.authoring.text from-text /tmp/lab.txt solutions/00_lab_setup/00_lab_setup.ipynb

Each cell starts with a header line ``#%% KIND GRADE_ID [points=N] [tags=a,b] [collapsed=yes]``
(``collapsed=yes``: a heading cell JupyterLab opens collapsed, for optional deep dives) where KIND is
``md`` (read-only prose), ``code`` (read-only code), ``answer`` (learner's code: solution region
inside ``### BEGIN SOLUTION`` / ``### END SOLUTION``), ``answer-md`` (manually graded prose
answer, needs points) or ``tests`` (locked autograded tests, needs points).
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import nbformat

HEADER = re.compile(r"^#%% (md|code|answer|answer-md|tests) ([A-Za-z0-9_\-]+)((?: [a-z]+=\S+)*)\s*$")
KINDS = {
    # kind: (cell_type, grade, solution, locked)
    "md": ("markdown", False, False, True),
    "code": ("code", False, False, True),
    "answer": ("code", False, True, False),
    "answer-md": ("markdown", True, True, False),
    "tests": ("code", True, False, True),
}


def make_cell(kind: str, grade_id: str, source: str, *, points: float | None = None,
              tags: tuple[str, ...] = (), collapsed: bool = False):
    cell_type, grade, solution, locked = KINDS[kind]
    if grade and points is None:
        raise ValueError(f"{grade_id}: a graded cell needs points")
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3,
            "solution": solution, "task": False}
    if grade:
        meta["points"] = points
    maker = nbformat.v4.new_markdown_cell if cell_type == "markdown" else nbformat.v4.new_code_cell
    cell = maker(source=source.strip("\n"))
    cell.id = grade_id.replace("_", "-")
    cell.metadata = {"nbgrader": meta}
    if tags:
        cell.metadata["tags"] = list(tags)
    if collapsed:
        cell.metadata["jp-MarkdownHeadingCollapsed"] = True
    return cell


def cell_kind(cell) -> str:
    meta = cell.metadata.get("nbgrader", {})
    key = ("markdown" if cell.cell_type == "markdown" else "code", bool(meta.get("grade")),
           bool(meta.get("solution")), bool(meta.get("locked")))
    for kind, spec in KINDS.items():
        if spec == key:
            return kind
    raise ValueError(f"cell {meta.get('grade_id')!r} has nbgrader metadata the course does not use: {meta}")


def new_notebook(cells) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook(cells=list(cells))
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    return nb


def to_text(nb) -> str:
    parts = []
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        header = f"#%% {cell_kind(cell)} {meta['grade_id']}"
        if meta.get("grade"):
            header += f" points={meta['points']:g}"
        if cell.metadata.get("tags"):
            header += " tags=" + ",".join(cell.metadata["tags"])
        if cell.metadata.get("jp-MarkdownHeadingCollapsed"):
            header += " collapsed=yes"
        parts.append(header + "\n" + cell.source.strip("\n") + "\n")
    return "\n".join(parts)


def from_text(text: str) -> nbformat.NotebookNode:
    cells, current, body = [], None, []

    def flush():
        if current is not None:
            kind, grade_id, opts = current
            cells.append(make_cell(kind, grade_id, "\n".join(body),
                                   points=float(opts["points"]) if "points" in opts else None,
                                   tags=tuple(t for t in opts.get("tags", "").split(",") if t),
                                   collapsed=opts.get("collapsed") == "yes"))

    for lineno, line in enumerate(text.splitlines(), 1):
        m = HEADER.match(line)
        if m:
            flush()
            opts = dict(o.split("=", 1) for o in m.group(3).split())
            current, body = (m.group(1), m.group(2), opts), []
        elif line.startswith("#%%"):
            raise ValueError(f"line {lineno}: malformed cell header {line!r}")
        elif current is None:
            if line.strip():
                raise ValueError(f"line {lineno}: text before the first cell header")
        else:
            body.append(line)
    flush()
    return new_notebook(cells)


def write(nb, path: Path) -> None:
    nbformat.validate(nb)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(nbformat.writes(nb) + "\n")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("to-text")
    p.add_argument("notebook", type=Path)
    p = sub.add_parser("from-text")
    p.add_argument("text", type=Path)
    p.add_argument("notebook", type=Path)
    args = parser.parse_args(argv)
    if args.cmd == "to-text":
        sys.stdout.write(to_text(nbformat.read(args.notebook, as_version=4)))
    else:
        write(from_text(args.text.read_text()), args.notebook)
    return 0


if __name__ == "__main__":
    sys.exit(main())
