"""Grade your own notebook with the course's grader: ``make grade-mine NB=notebooks/01_.../01_....ipynb``.

For a learner working alone with the repository. The notebook goes through exactly what an
instructor's ``make grade`` runs (``grader.grading.autograde.autograde_submission``: the hidden tests, the
sandbox where the machine allows it, the time limits), and you get what an instructor would send
you: a score per exercise, and the feedback page (``feedback/<lab>.html``) to open in a browser.

Your notebook is only read, never changed. Validate (the button in JupyterLab) runs the visible
tests only; this runs the hidden ones too, so expect it to take about as long as the lab itself.
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from grader.grading import autograde, course


def lab_of(notebook: Path) -> str:
    """The lab a notebook belongs to: its file name (``01_x.ipynb``) must name a lab of the course."""
    lab = notebook.stem
    if lab not in course.labs():
        raise SystemExit(f"{notebook} is not a lab notebook of this course: its name must be one of "
                         f"{', '.join(course.labs())} (with .ipynb), as in notebooks/<lab>/<lab>.ipynb")
    return lab


def template_gradebook(lab: str) -> bytes:
    """A gradebook that knows the lab's cells, made from the instructor source (``solutions/``)."""
    work = Path(tempfile.mkdtemp(prefix="self-grade-"))
    try:
        gen = course.generate(lab, work, release_dir=work / "release")
        if gen.returncode != 0:
            raise SystemExit(f"could not prepare the grader for {lab}:\n{gen.output[-2000:]}")
        return (work / "gradebook.db").read_bytes()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def report(result: dict) -> str:
    lines = []
    if result["status"] != "graded":
        lines.append(f"Not graded: {result['reason'] or 'see the log below'}")
        if result.get("log_tail"):
            lines.append(result["log_tail"][-2000:])
        return "\n".join(lines)
    scores = {g: s for g, s in result["scores"].items() if s[1]}
    total, top = sum(s[0] or 0 for s in scores.values()), sum(s[1] for s in scores.values())
    lines.append(f"{result['lab']}: {total:g} / {top:g} points ({result['seconds']:.0f} s)")
    for grade_id, (score, max_score, *_) in scores.items():
        mark = "ok " if score == max_score else "   "
        lines.append(f"  {mark}{grade_id:<40} {score or 0:g} / {max_score:g}")
    for flag in result["flags"]:
        lines.append(f"  note: {flag}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebook", type=Path, help="your notebook, e.g. notebooks/01_x/01_x.ipynb")
    parser.add_argument("--feedback-dir", type=Path, default=course.ROOT / "feedback")
    args = parser.parse_args(argv)
    if not args.notebook.is_file():
        raise SystemExit(f"no such notebook: {args.notebook}")
    lab = lab_of(args.notebook)
    print(f"Grading {args.notebook} as {lab} (hidden tests included; about as long as the lab runs)...",
          flush=True)
    result = autograde.autograde_submission(lab, "me", args.notebook.read_bytes(), template_gradebook(lab))
    print(report(result))
    if result.get("feedback"):
        args.feedback_dir.mkdir(parents=True, exist_ok=True)
        page = args.feedback_dir / f"{lab}.html"
        page.write_text(result["feedback"])
        print(f"Feedback page: {page}")
    return 0 if result["status"] == "graded" else 1


if __name__ == "__main__":
    sys.exit(main())
