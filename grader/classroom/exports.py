"""What a class grading run writes for the instructor, in ``<out>/exports/``.

- ``nbgrader_grades.csv``: nbgrader's own export of the class gradebook;
- ``lms_grades.csv``: one row per learner, one column per lab and quiz (autograded points), the
  totals, the labs that need a look (failed, or flagged for review) and the flagged grades held
  back until an instructor has reviewed them (grader/classroom/review.py): a held lab's cell is empty
  and counts in neither total, so no flagged grade reaches the LMS as final;
- ``<quiz>_questions.csv``: per-question quiz scores (grader/classroom/question_scores.py).
"""
from __future__ import annotations

import csv
import json
from pathlib import Path

from grader.grading import course

REVIEWS = "reviews.json"  # student/lab -> digest of the notebook an instructor reviewed


def reviews(out: Path) -> dict:
    path = out / REVIEWS
    return json.loads(path.read_text()) if path.exists() else {}


def is_held(key: str, entry: dict, reviewed: dict) -> bool:
    """A flagged grade stays out of the LMS export until the notebook graded is the one reviewed."""
    return bool(entry.get("flags")) and reviewed.get(key) != entry.get("digest")


def write_all(out: Path, state: dict, labs: list[str], course_args: tuple = ()) -> None:
    exports = out / "exports"
    exports.mkdir(exist_ok=True)
    run = course.nbgrader("export", f"--to={exports / 'nbgrader_grades.csv'}", *course_args, grading_dir=out)
    if run.returncode != 0:
        print(f"[grader] nbgrader export failed:\n{run.output[-1000:]}")
    write_lms(exports / "lms_grades.csv", state, labs, reviews(out))
    quiz_questions(exports, out, state, labs)


def write_lms(path: Path, state: dict, labs: list[str], reviewed: dict | None = None) -> None:
    """One row per learner, one column per lab and quiz (autograded points), totals, the labs
    that need a look and the flagged grades held back (``reviewed``: what an instructor cleared)."""
    students = sorted({k.split("/")[0] for k in state})
    labs = [lab for lab in labs if any(k.endswith("/" + lab) for k in state)]
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["student_id", *labs, "total", "max_total", "needs_review", "held_for_review"])
        for student in students:
            row, total, top, review, held = [student], 0.0, 0.0, [], []
            for lab in labs:
                key, entry = f"{student}/{lab}", state.get(f"{student}/{lab}")
                if entry is None:
                    row.append("")
                    continue
                if entry["status"] != "graded" or entry.get("flags"):
                    review.append(lab)
                if is_held(key, entry, reviewed or {}):
                    held.append(lab)
                    row.append("")
                    continue
                scores = (entry.get("scores") or {}).values()
                got = sum((s[0] or 0.0) for s in scores)
                total += got
                top += sum((s[1] or 0.0) for s in scores)
                row.append(f"{got:g}")
            writer.writerow(row + [f"{total:g}", f"{top:g}", " ".join(review), " ".join(held)])


def quiz_questions(exports: Path, out: Path, state: dict, labs: list[str]) -> None:
    from grader.classroom import question_scores

    for lab in (lab for lab in labs if lab.endswith("_quiz")):
        if any(k.endswith("/" + lab) for k in state):
            header, rows = question_scores.question_table(lab, db_url=f"sqlite:///{out / 'gradebook.db'}")
            (exports / f"{lab}_questions.csv").write_text(question_scores.to_csv(header, rows))
