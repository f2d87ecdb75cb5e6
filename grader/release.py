"""``make release``: regenerate ``notebooks/`` from ``solutions/`` with ``nbgrader generate_assignment``.

The gradebook written on the way (it records every cell's source and checksum, which autograde
uses to restore locked and hidden-test cells) goes to the grading work folder.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from grader import course


def release(labs: list[str], release_dir: Path | None = None, grading_dir: Path | None = None) -> None:
    grading_dir = Path(grading_dir or tempfile.mkdtemp(prefix="raylab-release-"))
    for lab in labs:
        run = course.generate(lab, grading_dir, release_dir)
        if run.returncode != 0:
            raise SystemExit(f"generate_assignment {lab} failed:\n{run.output}")
        print(f"released {lab}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("labs", nargs="*", help="assignment ids (default: all)")
    args = parser.parse_args(argv)
    release(args.labs or course.labs(), grading_dir=course.ROOT / ".grading")
    return 0


if __name__ == "__main__":
    sys.exit(main())
