"""Is a lab finished, or still being written? The one place that answers it.

``make new-lab`` marks a new lab *in progress* with one line in its mutants file,
``solutions/<lab>/mutants.yaml``::

    status: in progress

and the author deletes that line as the last step, once the lab is proven and benched
(docs/authoring.md, "Adding a lab"). Until then the lab is a draft: the tests still check
everything a draft has (its notebook's shape, a learner copy nbgrader generates from it, its
mutants and requirements), but require none of what only a finished lab has (a committed learner
copy, a proof ledger, a visible-catch record, a ``make bench`` row, published grade ids), and
nothing offers it to learners (``make release``, the workshop hub).

The mark lives in the mutants file because no grading key covers that file
(``grader/proof/keys.py``): removing it leaves the lab's proof valid.
"""
from __future__ import annotations

import yaml

from grader.grading import course
from grader.proof import mutants

IN_PROGRESS = "in progress"
MARK = f"{mutants.STATUS_KEY}: {IN_PROGRESS}"


def in_progress(lab: str) -> bool:
    """True while ``solutions/<lab>/mutants.yaml`` holds the line ``status: in progress``."""
    path = course.mutants_path(lab)
    data = yaml.safe_load(path.read_text()) if path.exists() else None
    status = data.get(mutants.STATUS_KEY) if isinstance(data, dict) else None
    if status is None:
        return False
    if status != IN_PROGRESS:
        raise ValueError(f"{path}: {mutants.STATUS_KEY}: {status!r}; the only status is {IN_PROGRESS!r} "
                         "(delete the line when the lab is finished)")
    return True


def finished_labs() -> list[str]:
    """The labs learners get, in course order: every lab not in progress."""
    return [lab for lab in course.labs() if not in_progress(lab)]


def labs_in_progress() -> list[str]:
    """The labs an author is still writing, in course order."""
    return [lab for lab in course.labs() if in_progress(lab)]


def refuse_in_progress(labs, what: str) -> None:
    """SystemExit when ``labs`` names a lab in progress: ``what`` (a release) is for finished labs."""
    drafts = [lab for lab in labs if lab in course.labs() and in_progress(lab)]
    if drafts:
        raise SystemExit(f"{' '.join(drafts)}: in progress, so not {what}; when the lab is proven and "
                         f"benched, delete the line '{MARK}' from solutions/<lab>/mutants.yaml")
