"""What a class grading run writes for the instructor, in ``<out>/exports/``.

- ``nbgrader_grades.csv``: nbgrader's own export of the class gradebook;
- ``lms_grades.csv``: one row per learner, one column per lab and quiz (autograded points), the
  totals, and the labs that need a look (failed, or flagged for review);
- ``<quiz>_questions.csv``: per-question quiz scores (grader/question_scores.py).
"""
from __future__ import annotations

import csv
from pathlib import Path

from grader import course


def write_all(out: Path, state: dict, labs: list[str], course_args: tuple = ()) -> None:
    exports = out / "exports"
    exports.mkdir(exist_ok=True)
    run = course.nbgrader("export", f"--to={exports / 'nbgrader_grades.csv'}", *course_args, grading_dir=out)
    if run.returncode != 0:
        print(f"[grader] nbgrader export failed:\n{run.output[-1000:]}")
    write_lms(exports / "lms_grades.csv", state, labs)
    quiz_questions(exports, out, state, labs)


def write_lms(path: Path, state: dict, labs: list[str]) -> None:
    """One row per learner, one column per lab and quiz (autograded points), and totals."""
    students = sorted({k.split("/")[0] for k in state})
    labs = [lab for lab in labs if any(k.endswith("/" + lab) for k in state)]
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["student_id", *labs, "total", "max_total", "needs_review"])
        for student in students:
            row, total, top, review = [student], 0.0, 0.0, []
            for lab in labs:
                entry = state.get(f"{student}/{lab}")
                if entry is None:
                    row.append("")
                    continue
                scores = (entry.get("scores") or {}).values()
                got = sum((s[0] or 0.0) for s in scores)
                total += got
                top += sum((s[1] or 0.0) for s in scores)
                row.append(f"{got:g}")
                if entry["status"] != "graded" or entry.get("flags"):
                    review.append(lab)
            writer.writerow(row + [f"{total:g}", f"{top:g}", " ".join(review)])


def quiz_questions(exports: Path, out: Path, state: dict, labs: list[str]) -> None:
    from grader import question_scores

    for lab in (lab for lab in labs if lab.endswith("_quiz")):
        if any(k.endswith("/" + lab) for k in state):
            header, rows = question_scores.question_table(lab, db_url=f"sqlite:///{out / 'gradebook.db'}")
            (exports / f"{lab}_questions.csv").write_text(question_scores.to_csv(header, rows))
