"""nbgrader's collect, refusing any submission whose files are not owned by the learner it names.

nbgrader's exchange names a submission by a folder in ``inbound/``, ``<student>+<lab>+<time>+<random>``,
and its collect believes the name: a learner who writes a folder named as another learner's
submission has it collected as that learner's (nbgrader 0.9.6 only logs a warning), which replaces
the other learner's own work. The hub gives every learner their own Unix account, so the owner of
the folder and of every file in it on disk says who wrote it. :class:`CheckedCollect` drops every
submission with a file (or the folder itself) owned by anyone else, or holding a link, before
nbgrader picks each learner's latest submission: the learner's own latest one is collected, and
each refusal is appended to ``refused-submissions.jsonl`` in the course folder, which ``make grade``
reports (:func:`read_refusals`).

Used through nbgrader's configuration (``c.ExchangeFactory.collect``), so the formgrader's
Collect button and ``grader.workshop.feedback collect`` both go through it. It imports only nbgrader
and the standard library: the instructor's server loads it from the state folder, not from this
clone (closed to other users).
"""
from __future__ import annotations

import datetime
import json
import os
import pwd
import stat

from nbgrader.exchange.default.collect import ExchangeCollect

REPORT = "refused-submissions.jsonl"


def owner_problem(path: str, student: str) -> str | None:
    """Why the submission folder ``path`` is not ``student``'s own, or None when it is: every
    entry (the folder included) must be a plain file or folder owned by ``student``'s account."""
    try:
        uid = pwd.getpwnam(student).pw_uid
    except KeyError:
        return f"no account named {student!r} on this machine"
    entries = [path]
    for folder, dirs, files in os.walk(path):
        entries += [os.path.join(folder, name) for name in dirs + files]
    for entry in entries:
        info = os.lstat(entry)
        if stat.S_ISLNK(info.st_mode):
            return f"{os.path.relpath(entry, path)} is a link"
        if info.st_uid != uid:
            try:
                owner = pwd.getpwuid(info.st_uid).pw_name
            except KeyError:
                owner = f"uid {info.st_uid}"
            where = "the folder" if entry == path else os.path.relpath(entry, path)
            return f"{where} is owned by {owner}, not by {student}"
    return None


def record_refusal(course_root: str, entry: dict) -> None:
    """Append one refusal to the course folder's report (group-writable, like the course folder)."""
    path = os.path.join(course_root, REPORT)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o660)
    with os.fdopen(fd, "a") as handle:
        handle.write(json.dumps(entry, sort_keys=True) + "\n")


def read_refusals(course_root: str | os.PathLike) -> list[dict]:
    """The refusals recorded in ``course_root``, one per submission folder (collect may run often)."""
    path = os.path.join(course_root, REPORT)
    if not os.path.exists(path):
        return []
    seen: dict[str, dict] = {}
    with open(path) as handle:
        for line in handle:
            if line.strip():
                entry = json.loads(line)
                seen.setdefault(entry["folder"], entry)
    return list(seen.values())


class CheckedCollect(ExchangeCollect):
    """nbgrader's collect, without the submissions whose owner on disk is not the named learner."""

    def init_src(self):
        super().init_src()
        kept = []
        for rec in self.src_records_all():
            problem = owner_problem(os.path.join(self.inbound_path, rec["filename"]), rec["username"])
            if problem is None:
                kept.append(rec)
                continue
            self.log.error("Refused submission %s: %s", rec["filename"], problem)
            record_refusal(self.coursedir.root, {
                "folder": rec["filename"], "named_learner": rec["username"],
                "lab": self.coursedir.assignment_id, "reason": problem,
                "seen": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")})
        # nbgrader keeps each learner's latest record; pick again among the genuine ones only.
        latest: dict[str, dict] = {}
        for rec in self._sort_by_timestamp(kept):
            latest.setdefault(rec["username"], rec)
        self.src_records = list(latest.values())

    def src_records_all(self) -> list[dict]:
        """Every submission of the lab in inbound, not only each learner's latest (nbgrader's
        ``init_src`` keeps the latest, which may be the forged one)."""
        import glob

        student = self.coursedir.student_id or "*"
        pattern = os.path.join(self.inbound_path, f"{student}+{self.coursedir.assignment_id}+*")
        return [self._path_to_record(path) for path in glob.glob(pattern)]


class RefuseAutograde:
    """The formgrader's Autograde button (and ``nbgrader autograde`` with the course folder's
    configuration) would run the learners' code as the instructor, outside the grading sandbox.
    In the room it stops with a pointer to the course's grader instead (nbgrader shows the message
    in the formgrader's error window)."""

    MESSAGE = ("Autograde is switched off on the workshop hub: it would run learners' code as you, "
               "outside the course's sandbox. Grade with the course's grader as root instead: "
               "`make grade SUBMISSIONS=<state>/course/submitted` (docs/workshop.md, section 6); "
               "its scores then show here.")

    def __init__(self, **_):
        pass

    def __call__(self, nb, resources):
        raise RuntimeError(self.MESSAGE)


class RefuseGenerateFeedback(RefuseAutograde):
    """The formgrader's Generate Feedback renders the graded notebook as it is: with the hidden
    tests nbgrader restored into it. The room's feedback comes from the class grader instead,
    scanned for hidden-test text (``make workshop-feedback``)."""

    MESSAGE = ("Generate Feedback is switched off on the workshop hub: it would show learners the "
               "hidden tests. Release the course's feedback as root: `make workshop-feedback LAB=<lab>` "
               "(after `make grade`); the formgrader's Release Feedback then sends those pages.")
