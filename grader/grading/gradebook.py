"""Merge one submission's scores into a gradebook (the coordinator's job; serial, no SQLite races)."""
from __future__ import annotations

import warnings
from pathlib import Path


def merge(db: Path, lab: str, student: str, scores: dict) -> None:
    """Record ``scores`` (``{grade_id: [score, max, needs_manual]}``) as ``student``'s submission
    of ``lab``, replacing an earlier one. A grade missing from ``scores`` (a failed submission)
    becomes 0 and is marked for the instructor's review."""
    from nbgrader.api import Gradebook
    from sqlalchemy.exc import SAWarning

    warnings.filterwarnings("ignore", category=SAWarning)  # nbgrader 0.9.6 + SQLAlchemy 2.1 noise
    with Gradebook(f"sqlite:///{db}") as gb:
        gb.update_or_create_student(student)
        try:
            gb.remove_submission(lab, student)
        except Exception:  # noqa: BLE001 - nothing to replace on a first grading
            pass
        sub = gb.add_submission(lab, student)
        for nb in sub.notebooks:
            for grade in nb.grades:
                score = scores.get(grade.name)
                if score is not None:
                    grade.auto_score, grade.needs_manual_grade = score[0], score[2]
                else:
                    grade.auto_score = 0.0 if grade.max_score else None
                    grade.needs_manual_grade = True
        gb.db.commit()
