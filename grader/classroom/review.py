"""An instructor's review of flagged submissions, recorded so the LMS export can release them.

A submission flagged for review (a tampering mechanism, grader/grading/tamper_scan.py, or a test cell's
in-kernel report) keeps its autograded score in the gradebook, but ``lms_grades.csv`` holds it
back (an empty cell, named under ``held_for_review``) until an instructor has looked and recorded
it here. A review is bound to the exact notebook that was looked at (its digest in the class
state): a learner who submits again after the review is held again.

    make review WHO="alice/05_failures_and_retries bob/00_lab_setup"

``reviews.json`` in the class folder maps ``student/lab`` to the digest reviewed.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from grader.classroom import exports
from grader.grading import course

STATE = "state.json"


def record(out: Path, keys: list[str]) -> list[str]:
    """Record ``keys`` (``student/lab``) as reviewed; returns the problems (unknown keys, nothing
    flagged) and records the rest."""
    state = json.loads((out / STATE).read_text())
    done, problems = exports.reviews(out), []
    for key in keys:
        entry = state.get(key)
        if entry is None:
            problems.append(f"{key}: no such graded submission in {out}")
        elif not entry.get("flags"):
            problems.append(f"{key}: not flagged, nothing to review")
        else:
            done[key] = entry["digest"]
    (out / exports.REVIEWS).write_text(json.dumps(done, indent=1, sort_keys=True))
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="make review", description=__doc__.split("\n\n")[0])
    parser.add_argument("keys", nargs="+", help="student/lab of each submission you have looked at")
    parser.add_argument("--out", type=Path, default=course.ROOT / ".grading" / "class",
                        help="the class folder make grade wrote (default: .grading/class)")
    args = parser.parse_args(argv)
    if not (args.out / STATE).exists():
        parser.error(f"{args.out} holds no class grading (run make grade first)")
    problems = record(args.out, args.keys)
    for problem in problems:
        print(f"[review] {problem}")
    state = json.loads((args.out / STATE).read_text())
    labs = sorted({key.split("/", 1)[1] for key in state})
    exports.write_lms(args.out / "exports" / "lms_grades.csv", state, labs, exports.reviews(args.out))
    print(f"[review] {args.out / 'exports' / 'lms_grades.csv'} written again")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
