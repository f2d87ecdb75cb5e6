"""Per-question scores of one assignment, read from the nbgrader gradebook, as CSV.

``python -m grader.classroom.question_scores 10_quiz`` writes one row per student in the gradebook and one
column per grade cell of the assignment (in the order of the solution notebook), then the total
and the maximum. ``nbgrader export`` only gives totals per assignment; this is the table an
instructor needs to see which quiz questions a class got wrong.

The gradebook is the course's (``$RAYLAB_GRADING_DIR/gradebook.db``, else ``.grading/gradebook.db``)
unless ``--grading-dir`` or ``--db`` names another. Scores follow nbgrader's rule: a manual score
overrides the autograder's, extra credit is added. A student without a submission gets empty
cells and an empty total.
"""
from __future__ import annotations

import argparse
import csv
import io
import os
import sys
from pathlib import Path

from grader.grading import course


def default_db_url() -> str:
    work = os.environ.get("RAYLAB_GRADING_DIR") or str(course.ROOT / ".grading")
    return "sqlite:///" + str(Path(work).resolve() / "gradebook.db")


def _notebook_order(assignment: str) -> dict[tuple[str, str], int]:
    """``{(notebook, grade_id): position}`` from the solution notebooks, when they exist."""
    import nbformat

    order = {}
    folder = course.SOLUTIONS / assignment
    for nb_path in sorted(folder.glob("*.ipynb")) if folder.is_dir() else []:
        nb = nbformat.read(nb_path, as_version=4)
        for cell in nb.cells:
            gid = cell.metadata.get("nbgrader", {}).get("grade_id")
            if gid:
                order[(nb_path.stem, gid)] = len(order)
    return order


def question_table(assignment: str, db_url: str | None = None) -> tuple[list[str], list[list]]:
    """``(header, rows)``: ``student_id``, one column per grade cell, ``total``, ``max_total``.

    A column is named by the cell's ``grade_id`` (``notebook:grade_id`` when the assignment has
    several notebooks). Scores are floats; a student without a submission has ``None`` in every
    score column and in ``total``.
    """
    from nbgrader.api import Gradebook, MissingEntry

    db_url = db_url or default_db_url()
    if db_url.startswith("sqlite:///") and not Path(db_url[len("sqlite:///"):]).exists():
        raise FileNotFoundError(f"no gradebook at {db_url[len('sqlite:///'):]} (autograde first)")
    with Gradebook(db_url) as gb:
        try:
            assign = gb.find_assignment(assignment)
        except MissingEntry:
            raise KeyError(f"the gradebook has no assignment {assignment!r}") from None
        order = _notebook_order(assignment)
        cells = [(nb.name, gc.name, gc.max_score) for nb in assign.notebooks for gc in nb.grade_cells]
        cells.sort(key=lambda c: (order.get((c[0], c[1]), len(order)), c[0], c[1]))
        several = len({nb for nb, _, _ in cells}) > 1
        header = (["student_id"] + [f"{nb}:{name}" if several else name for nb, name, _ in cells]
                  + ["total", "max_total"])
        max_total = sum(m for _, _, m in cells)
        rows = []
        for student in sorted(gb.students, key=lambda s: s.id):
            scores = {}
            submitted = False
            for nb_name in {nb for nb, _, _ in cells}:
                try:
                    sub = gb.find_submission_notebook(nb_name, assignment, student.id)
                except MissingEntry:
                    continue
                submitted = True
                scores.update({(nb_name, g.name): float(g.score) for g in sub.grades})
            values = [scores.get((nb, name)) if submitted else None for nb, name, _ in cells]
            total = sum(v or 0.0 for v in values) if submitted else None
            rows.append([student.id] + values + [total, max_total])
    return header, rows


def to_csv(header: list[str], rows: list[list]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow(["" if v is None else (f"{v:g}" if isinstance(v, float) else v) for v in row])
    return buf.getvalue()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("assignment", help="assignment id, e.g. 10_quiz")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--grading-dir", help="folder holding gradebook.db")
    where.add_argument("--db", help="an nbgrader database URL (sqlite:///...)")
    parser.add_argument("--out", help="write the CSV here instead of stdout")
    args = parser.parse_args(argv)
    db = args.db or ("sqlite:///" + str(Path(args.grading_dir).resolve() / "gradebook.db")
                     if args.grading_dir else None)
    text = to_csv(*question_table(args.assignment, db))
    if args.out:
        Path(args.out).write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
