"""``make release``: regenerate ``notebooks/`` from ``solutions/`` with ``nbgrader generate_assignment``,
then the other editions (``notebooks-ja/``, ``grader.authoring.editions``) from the learner copies and
those of the learner READMEs (``README.ja.md``, ``grader.authoring.documents``).

Only finished labs are released: a lab in progress (``grader.authoring.lab_status``) is left out, and naming
one is refused, so a draft never reaches learners. The gradebook written on the way (it records
every cell's source and checksum, which autograde uses to restore locked and hidden-test cells)
goes to the grading work folder.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from grader.authoring import documents, editions, lab_status
from grader.grading import course


def release(labs: list[str], release_dir: Path | None = None, grading_dir: Path | None = None) -> None:
    grading_dir = Path(grading_dir or tempfile.mkdtemp(prefix="raylab-release-"))
    for lab in labs:
        run = course.generate(lab, grading_dir, release_dir)
        if run.returncode != 0:
            raise SystemExit(f"generate_assignment {lab} failed:\n{run.output}")
        print(f"released {lab}")


PUBLISHED = course.ROOT / "grader" / "published_grade_ids.json"


def record_published_grade_ids(labs: list[str]) -> None:
    """Add the released labs' grade_ids to the record that tests/labs/test_course_format.py guards.

    Ids are only ever added: a gradebook and the Japanese edition refer to every released id.
    """
    import nbformat

    published = json.loads(PUBLISHED.read_text()) if PUBLISHED.exists() else {}
    for lab in labs:
        nb = nbformat.read(course.solution_path(lab), as_version=4)
        ids = [c.metadata["nbgrader"]["grade_id"] for c in nb.cells]
        known = published.get(lab, [])
        published[lab] = known + [i for i in ids if i not in known]
    PUBLISHED.write_text(json.dumps(dict(sorted(published.items())), indent=1) + "\n")


def labs_to_release(named: list[str]) -> list[str]:
    """The labs named (default: every finished lab); SystemExit when one is in progress."""
    lab_status.refuse_in_progress(named, "released")
    left_out = lab_status.labs_in_progress() if not named else []
    if left_out:
        print(f"left out (in progress): {' '.join(left_out)}")
    return named or lab_status.finished_labs()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("labs", nargs="*", help="assignment ids (default: every finished lab)")
    args = parser.parse_args(argv)
    labs = labs_to_release(args.labs)
    release(labs, grading_dir=course.ROOT / ".grading")
    record_published_grade_ids(labs)
    for lang in editions.LANGUAGES:
        left_out = editions.publish(labs, lang)
        print(editions.report(left_out, lang) or f"{lang} edition released: {' '.join(labs)}")
        left_out = documents.publish(lang)
        print(editions.report(left_out, lang) or f"{lang} edition of the READMEs released")
    return 0


if __name__ == "__main__":
    sys.exit(main())
