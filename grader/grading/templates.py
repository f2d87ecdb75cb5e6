"""The gradebook templates a class is graded against.

``nbgrader autograde`` restores every locked cell of a submission from the gradebook it is given,
so the gradebook decides which code runs besides the learner's answers. Each lab gets:

* the **class gradebook** (``out/gradebook.db``), where every score is merged, and a student-free
  copy of it (``out/template``), the template of a submission graded with every cell;
* one **trimmed template** per set of demo cells a submission can be graded without
  (``grader.grading.trim.grading_skips``: heavy demo cells that no test, answer or later needed cell
  reads, computed with that learner's own answers in place). Its locked demo cells hold a comment
  instead of a Train run, so grading a Train lab skips minutes of demos whose output no check
  reads; the scores cannot change (the round trips require every exercise to keep full marks graded
  this way, as a right answer or the solution). ``--full`` in ``make grade`` turns this off.
"""
from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import nbformat

from grader.grading import course, trim


class Templates:
    def __init__(self, out: Path, course_args: tuple = (), course_root: Path | None = None,
                 trim_demos: bool = True):
        self.out, self.course_args, self.trim_demos = out, course_args, trim_demos
        self.solutions = (Path(course_root) / "solutions") if course_root else course.SOLUTIONS
        self._full: dict[str, bytes] = {}
        self._trimmed: dict[tuple, bytes] = {}
        self._solution_nbs: dict[str, object] = {}

    def _generate(self, lab: str, grading_dir: Path, *extra: str) -> None:
        run = course.nbgrader("generate_assignment", lab, "--force", *self.course_args, *extra,
                              f"--CourseDirectory.release_directory={grading_dir / 'release'}",
                              grading_dir=grading_dir)
        if run.returncode != 0:
            raise SystemExit(f"generate_assignment {lab} failed:\n{run.output[-2000:]}")

    def prepare(self, labs) -> None:
        """Generate each lab into the class gradebook and into the student-free full template."""
        self.out.mkdir(parents=True, exist_ok=True)
        os.chmod(self.out, 0o700)
        template_dir = self.out / "template"
        shutil.rmtree(template_dir, ignore_errors=True)
        shutil.rmtree(self.out / "trimmed", ignore_errors=True)
        for lab in sorted(labs):
            for grading_dir in (self.out, template_dir):
                self._generate(lab, grading_dir)
        db = (template_dir / "gradebook.db").read_bytes() if labs else b""
        self._full = {lab: db for lab in labs}

    def full(self, lab: str) -> bytes:
        """The template that runs every cell."""
        return self._full[lab]

    def skips(self, lab: str, notebook: bytes, not_graded: frozenset = frozenset()) -> list[str]:
        """The demo cells this submission is graded without (none when it cannot be read).
        ``not_graded`` (the round trips' mutant rounds only): the answer and test cells of
        exercises whose scores nobody reads, which may be left out too (``trim.round_skips``)."""
        if not self.trim_demos:
            return []
        try:
            if lab not in self._solution_nbs:
                self._solution_nbs[lab] = nbformat.read(self.solutions / lab / f"{lab}.ipynb", as_version=4)
            submission = nbformat.reads(notebook.decode("utf-8", errors="replace"), as_version=4)
            if not_graded:
                return trim.round_skips(self._solution_nbs[lab], submission, set(not_graded))
            return trim.grading_skips(self._solution_nbs[lab], submission)
        except Exception:  # a broken submission is graded (and flagged) with every cell
            return []

    def for_submission(self, lab: str, notebook: bytes,
                       not_graded: frozenset = frozenset()) -> tuple[bytes, list[str]]:
        """(gradebook template, cells left out) for one submission."""
        skips = self.skips(lab, notebook, not_graded)
        return (self.trimmed(lab, skips) if skips else self.full(lab)), skips

    def trimmed(self, lab: str, skips: list[str]) -> bytes:
        """The template whose locked cells in ``skips`` hold a comment instead of their code."""
        if lab not in self._solution_nbs:
            self._solution_nbs[lab] = nbformat.read(self.solutions / lab / f"{lab}.ipynb", as_version=4)
        key = (lab, tuple(skips))
        if key not in self._trimmed:
            name = hashlib.sha256("\n".join([lab, *skips]).encode()).hexdigest()[:12]
            source, grading_dir = self.out / "trimmed" / name / "source", self.out / "trimmed" / name
            shutil.copytree(self.solutions / lab, source / lab,
                            ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
            nbformat.write(trim.trimmed(self._solution_nbs[lab], skips), source / lab / f"{lab}.ipynb")
            self._generate(lab, grading_dir, f"--CourseDirectory.source_directory={source}")
            self._trimmed[key] = (grading_dir / "gradebook.db").read_bytes()
        return self._trimmed[key]
