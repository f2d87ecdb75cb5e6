"""The instructor's side of grading on the workshop hub: collect, then release the class grader's
feedback through nbgrader's exchange (issue 17).

    sudo make workshop-collect LAB=00_lab_setup
    sudo make grade SUBMISSIONS=/srv/raylab-workshop/course/submitted
    sudo make workshop-feedback LAB=00_lab_setup

``collect`` is nbgrader's collect on the hub's course folder (the latest submission of every
learner to ``<state>/course/submitted/<learner>/<lab>/``). ``release`` takes each learner's
feedback page from the class grader's output (``<graded>/feedback/<learner>/<lab>/<lab>.html``,
already scanned for hidden-test text), puts it in the course folder's ``feedback/`` with the
submission's ``timestamp.txt`` and ``submission_secret.txt`` (nbgrader names a released page by a
hash of that secret, so only the learner whose submission it is can fetch it), and runs nbgrader's
release_feedback. Learners then press "Fetch Feedback" in the Assignments tab.
"""
from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from grader.workshop import state as workshop_state, up as workshop


def collect(state: workshop_state.State, lab: str) -> list[str]:
    """nbgrader's collect through the course's configuration, whose collect refuses a submission
    not written by the learner it names (grader.workshop.exchange); each refusal is printed here,
    kept in the course folder and reported again by ``make grade``."""
    from grader.workshop.exchange import read_refusals

    result = workshop._nbgrader_api(state).collect(lab)
    workshop._check(result, f"collect {lab}")
    for entry in read_refusals(state.course):
        if entry["lab"] == lab:
            print(f"[workshop] REFUSED {entry['folder']}: {entry['reason']} (kept out of {entry['named_learner']}'s grade)")
    submitted = state.course / "submitted"
    return sorted(p.name for p in submitted.iterdir() if (p / lab).is_dir()) if submitted.is_dir() else []


def release(state: workshop_state.State, lab: str, graded: Path) -> list[str]:
    """Release the class grader's feedback of ``lab``; return the learners it was released to."""
    released = []
    submitted = state.course / "submitted"
    for page in sorted((graded / "feedback").glob(f"*/{lab}/{lab}.html")):
        learner = page.parent.parent.name
        source = submitted / learner / lab
        if not (source / "submission_secret.txt").exists():
            print(f"[workshop] {learner}: no collected submission of {lab}; feedback not released")
            continue
        dest = state.course / "feedback" / learner / lab
        dest.mkdir(parents=True, exist_ok=True)
        (dest / page.name).write_text(for_learner(page.read_text(), graded / "autograded" / learner / lab / f"{lab}.ipynb"))
        for name in ("timestamp.txt", "submission_secret.txt"):
            shutil.copy(source / name, dest / name)
        released.append(learner)
    if released:
        workshop._check(workshop._nbgrader_api(state).release_feedback(lab), f"release_feedback {lab}")
        _share_with_instructors(state, state.course / "feedback")
    return released


def _share_with_instructors(state: workshop_state.State, folder: Path) -> None:
    """Written as root: give it the course folder's group and group permissions, as the rest of
    the course folder has (the formgrader runs as an instructor)."""
    import os

    gid = state.course.stat().st_gid
    for path in [folder, *folder.rglob("*")]:
        os.chown(path, 0, gid, follow_symlinks=False)
        mode = path.stat().st_mode & 0o7777
        os.chmod(path, (mode | 0o2070) & 0o2770 if path.is_dir() else (mode | 0o060) & 0o770)


def for_learner(page: str, graded_notebook: Path) -> str:
    """The feedback page as the learner gets it: without the grading sandbox's noise
    (grader.workshop.noise), and each generic hint saying whether the failing check of its cell
    was a visible or a hidden one (grader.workshop.hints)."""
    from grader.workshop import hints as workshop_hints, noise as workshop_noise

    page, _ = workshop_noise.scrub(page)
    if graded_notebook.exists():
        page, _ = workshop_hints.refine(page, graded_notebook.read_text())
    return page


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("action", choices=["collect", "release"])
    parser.add_argument("lab")
    parser.add_argument("--state", default=str(workshop_state.DEFAULT_STATE))
    parser.add_argument("--graded", type=Path, default=workshop.ROOT / ".grading" / "class",
                        help="the class grader's output folder (make grade's --out)")
    args = parser.parse_args(argv)
    state = workshop_state.State(Path(args.state).resolve())
    if args.action == "collect":
        names = collect(state, args.lab)
        print(f"[workshop] {args.lab}: {len(names)} submission(s) in {state.course / 'submitted'}")
    else:
        names = release(state, args.lab, args.graded)
        print(f"[workshop] {args.lab}: feedback released to {len(names)} learner(s): {' '.join(names)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
