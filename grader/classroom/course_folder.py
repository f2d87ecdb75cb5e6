"""When ``make grade`` grades an nbgrader course folder's ``submitted/`` (the workshop hub's
collect), it also writes into that course: the scores go into the course's own gradebook, with
each graded notebook in ``autograded/``, so that the formgrader shows what the class grader gave
(one gradebook, not two); and the submissions collect refused (another learner's name on them:
:mod:`grader.workshop.exchange`) are printed in the report and written to the exports.

A folder of submissions that is not a course's ``submitted/`` (no ``gradebook.db`` and
``nbgrader_config.py`` beside it) is left alone: nothing here runs.
"""
from __future__ import annotations

import csv
import grp
import os
import shutil
from pathlib import Path

from grader.grading import gradebook


def course_of(submissions: Path) -> Path | None:
    """The nbgrader course folder whose ``submitted/`` this is, or None."""
    course = submissions.resolve().parent
    if submissions.name == "submitted" and (course / "gradebook.db").is_file() \
            and (course / "nbgrader_config.py").is_file():
        return course
    return None


def report_refusals(course: Path, exports: Path) -> list[dict]:
    """Print the submissions collect refused and write them to ``exports/refused_submissions.csv``."""
    from grader.workshop.exchange import read_refusals

    refused = read_refusals(course)
    if not refused:
        return []
    print(f"\n[grader] REFUSED at collect: {len(refused)} submission(s) not written by the learner "
          "they name (that learner's own latest submission was collected and graded instead):")
    for entry in refused:
        print(f"  REFUSED {entry['named_learner']}/{entry['lab']:<30} {entry['reason']} ({entry['folder']})")
    exports.mkdir(parents=True, exist_ok=True)
    with (exports / "refused_submissions.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, ["named_learner", "lab", "reason", "folder", "seen"])
        writer.writeheader()
        writer.writerows({k: e.get(k) for k in writer.fieldnames} for e in refused)
    return refused


def publish(course: Path, out: Path, state: dict, labs: list[str]) -> list[str]:
    """Copy each graded submission's scores and graded notebook into the course; return the keys
    (student/lab) written. A lab the course's gradebook does not know is said, not guessed."""
    from nbgrader.api import Gradebook, MissingEntry

    written, unknown = [], set()
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        known = {a.name for a in gb.assignments}
    for key, entry in sorted(state.items()):
        student, lab = key.split("/", 1)
        if lab not in labs or entry.get("status") != "graded":
            continue
        if lab not in known:
            unknown.add(lab)
            continue
        gradebook.merge(course / "gradebook.db", lab, student, entry.get("scores") or {})
        stamp = course / "submitted" / student / lab / "timestamp.txt"
        dest = course / "autograded" / student / lab
        dest.mkdir(parents=True, exist_ok=True)
        graded = out / "autograded" / student / lab / f"{lab}.ipynb"
        if graded.exists():
            shutil.copy(graded, dest / graded.name)
        if stamp.exists():
            shutil.copy(stamp, dest / "timestamp.txt")
            _set_timestamp(Gradebook, MissingEntry, course, lab, student, stamp.read_text().strip())
        written.append(key)
    _share_with_instructors(course)
    print(f"[grader] course gradebook {course / 'gradebook.db'} (the formgrader's): "
          f"{len(written)} submission(s) written")
    for lab in sorted(unknown):
        print(f"[grader] {lab} is not in the course gradebook (released by hand?): release it with "
              f"`make workshop-release LABS={lab}` and grade again to see it in the formgrader")
    return written


def _set_timestamp(Gradebook, MissingEntry, course: Path, lab: str, student: str, text: str) -> None:
    """The formgrader counts a submission as autograded only when the gradebook's timestamp is the
    collected submission's."""
    from nbgrader.utils import parse_utc

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        try:
            gb.find_submission(lab, student).timestamp = parse_utc(text)
        except MissingEntry:
            return
        gb.db.commit()


def _share_with_instructors(course: Path) -> None:
    """What root wrote keeps the course folder's group and group permissions (the formgrader runs
    as an instructor)."""
    gid = course.stat().st_gid
    try:
        grp.getgrgid(gid)
    except KeyError:
        return
    for path in [course / "gradebook.db", *(course / "autograded").rglob("*")]:
        if path.exists() and not path.is_symlink():
            os.chown(path, path.stat().st_uid, gid)
            mode = path.stat().st_mode & 0o7777
            os.chmod(path, (mode | 0o2070) & 0o2770 if path.is_dir() else (mode | 0o060) & 0o770)
