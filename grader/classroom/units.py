"""The units of a class grading: one (student, lab) submission each, found in nbgrader's
collected layout ``SUBMISSIONS/<student>/<lab>/<lab>.ipynb``; what cannot be graded at all (an
unknown lab, no notebook) carries its reason and is flagged without running."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Unit:
    student: str
    lab: str
    path: Path | None
    problem: str | None = None  # why it cannot be graded at all (flagged without running)

    @property
    def key(self) -> str:
        return f"{self.student}/{self.lab}"


def discover(submissions: Path, labs: list[str]) -> list[Unit]:
    units = []
    for student_dir in sorted(p for p in submissions.iterdir() if p.is_dir()):
        for lab_dir in sorted(p for p in student_dir.iterdir() if p.is_dir()):
            lab = lab_dir.name
            nb = lab_dir / f"{lab}.ipynb"
            if lab not in labs:
                units.append(Unit(student_dir.name, lab, None, f"unknown lab {lab!r}"))
            elif not nb.is_file():
                found = sorted(p.name for p in lab_dir.iterdir())
                units.append(Unit(student_dir.name, lab, None,
                                  f"no {lab}.ipynb in the submission (found: {', '.join(found) or 'nothing'})"))
            else:
                units.append(Unit(student_dir.name, lab, nb))
    return units


def digest(path: Path | None) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path else "-"
