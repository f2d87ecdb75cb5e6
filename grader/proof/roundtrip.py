"""Autograde a lab's solution, its untouched learner copy and its mutants through real nbgrader.

:func:`run` grades (or takes from the proof ledger) and judges one lab's round trip;
:func:`report` prints one line per submission and per graded cell. It is wrong in either
direction when: the solution below full marks,
the untouched learner copy above 0, a mutant at full marks on the exercise it breaks, a mutant
caught only by a crash instead of a check, a right answer that differs from the solution below
full marks, an error in any cell of the solution, a solution flagged for review, the solution's
answers in the Japanese copy scoring otherwise than in English (or no Japanese copy), or processes
left behind. Every submission is graded by
``grader.grading.autograde.autograde_submission``, the function the class grader calls, so this proves the
path that grades a class. ``tests/grader/test_autograde_roundtrip.py`` runs it for every lab
from the ledger; ``make prove`` (``grader/proof/prove.py``) grades every submission and records them.
"""
from __future__ import annotations

import dataclasses
import os
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from grader.grading import autograde, gradebook, trim
from grader.grading.templates import Templates
from grader.proof import keys, ledger, mutants, requirements
from grader.proof.digests import digest
from grader.proof.environment import environment_parts
from grader.proof.machine import machine_class
from grader.proof.roundtrip_rules import (EDITIONS, Graded, edition_copy, error_line, failed_in_visible_part, judge,
                                          visible_catch, visible_problems, visible_record)


@dataclass
class RoundTrip:
    lab: str
    seconds: float
    graded: dict  # student -> Graded
    leftover_ray: list
    problems: list
    skipped: list = field(default_factory=list)  # demo cells left out of the wrong-answer rounds
    visible: dict = field(default_factory=dict)  # answer grade_id -> [caught visibly, mutants]
    not_graded: dict = field(default_factory=dict)  # answer grade_id -> mutants this depth left out
    fresh: dict = field(default_factory=dict)  # submission graded now -> why (the rest came from the ledger)
    audited: list = field(default_factory=list)  # stored gradings graded again and compared
    records: dict = field(default_factory=dict)  # key -> ledger.Entry of every grading judged


def first_errors(nb) -> dict:
    """grade_id -> [name, value, line, visible] of the first error output of every cell that
    raised: the line of the cell the traceback names, and whether Validate runs that line too."""
    found = {}
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id", cell.get("id"))
        error = next((o for o in cell.get("outputs", []) if o.get("output_type") == "error"), None)
        if error is not None:
            traceback = error.get("traceback", [])
            found[grade_id] = [error.get("ename"), error.get("evalue", "")[:300], error_line(traceback),
                               failed_in_visible_part(cell.source, traceback)]
    return found


def _workers() -> int:
    return max(1, int(os.environ.get("RAYLAB_ROUNDTRIP_WORKERS", "2")))


# The options every grading of a proof runs with (part of each key's recipe).
OPTIONS = autograde.Options(feedback=False)


def _submissions(lab: str, mutants_per_exercise: int | None = None, only: frozenset | None = None) -> dict:
    """student -> (answer sources or None, {answer: its mutant or right answer in this round})."""
    submissions = {"solution": (mutants.answer_sources(lab), {}),
                   "solution_trimmed": (mutants.answer_sources(lab), {}),
                   "untouched": (None, {})}
    # The solution's answers in each published edition's copy (roundtrip_rules.edition_problems).
    submissions |= {student: (mutants.answer_sources(lab), {}) for student, (lang, _) in EDITIONS.items()
                    if edition_copy(lang, lab).exists()}
    for k, rnd in enumerate(mutants.rounds(lab, mutants_per_exercise, only)):
        submissions[f"mutants{k}"] = (mutants.round_answers(lab, rnd), rnd)
    return submissions


def not_graded(exercises: dict, mutated: dict) -> frozenset:
    """The answer and test cells of the exercises a mutant round does not touch (a round k past
    an exercise's last variant would grade its solution again): they may be left out of that
    round (``trim.round_skips``; exercises are independent, ``tests/labs/test_course_format.py``).
    Nothing for the solution and untouched rounds, which are judged on every cell."""
    if not mutated:
        return frozenset()
    return frozenset(cell for e in exercises.values() if e.answer not in mutated
                     for cell in (e.answer, *e.tests))


def _blank_answers(nb, skip: list[str]):
    """The submission with the answer cells in ``skip`` replaced by the trimmed-cell comment
    (nbgrader restores locked cells from the template, but runs answer cells as submitted)."""
    skip = set(skip)
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution") and meta.get("grade_id") in skip:
            cell.source = trim.SKIPPED
    return nb


@dataclass
class Grading:
    """One grading of a round trip: a submission as graded, the cells it is graded without, the
    variants it holds and its key (``grader.proof.keys``)."""
    student: str
    notebook: bytes
    left_out: list
    round: dict  # answer grade_id -> Mutant
    parts: keys.Parts

    @property
    def key(self) -> str:
        return self.parts.key

    def variants(self) -> dict:
        return {a: ("right: " if m.right else "mutant: ") + m.name for a, m in self.round.items()}


@dataclass
class Prepared:
    lab: str
    templates: Templates
    gradings: dict  # student -> Grading
    exercises: dict
    skipped: list  # demo cells a submission in the solution's form is graded without
    solved: dict  # student -> answers it holds in the solution's own form


def prepare(lab: str, grading_dir: Path, mutants_per_exercise: int | None = None,
            builder: keys.KeyBuilder | None = None, only: frozenset | None = None) -> Prepared:
    """Every grading of the lab's round trip, built and keyed, nothing graded yet.

    Every submission is built from the released learner copy, as a learner's is. The solution is
    graded with every cell (so every demo is proven to run), and so are its answers in each
    published edition's copy (``solution_ja``: ``notebooks-ja/``). The untouched copy, the mutants and
    the right answers are graded like a class, without the demo cells their answers do not need;
    every exercise must keep full marks graded that way, as a right answer or, for an exercise
    without one, in the solution's form (``solution_trimmed``): nothing a test depends on was left
    out (``roundtrip_rules.trim_problems``). Raises SystemExit when the lab cannot be generated."""
    builder = builder or keys.KeyBuilder(OPTIONS)
    templates = Templates(grading_dir)
    templates.prepare([lab])
    release = grading_dir / "release" / lab / f"{lab}.ipynb"
    submissions = _submissions(lab, mutants_per_exercise, only)
    exercises = mutants.load(lab)
    releases = {student: edition_copy(lang, lab) for student, (lang, _) in EDITIONS.items()}
    built = {student: mutants.submission(lab, answers, release=releases.get(student, release))
             for student, (answers, _) in submissions.items()}
    # The demo cells a submission in the solution's form is graded without. Each exercise must keep
    # its points graded without them (roundtrip_rules.trim_problems); a right answer in a mutant
    # round shows it, so the trimmed solution round grades only the exercises that have none.
    skipped = templates.skips(lab, nbformat.writes(built["solution_trimmed"]).encode())
    witnessless = {a: None for a, e in exercises.items() if not e.right}
    if not skipped or not witnessless:
        del submissions["solution_trimmed"], built["solution_trimmed"]
    rounds = {student: submissions[student][1] for student in submissions}
    if "solution_trimmed" in submissions:
        rounds["solution_trimmed"] = witnessless
    left_out = {student: [] if student == "solution" or student in EDITIONS else
                templates.skips(lab, nbformat.writes(nb).encode(), not_graded(exercises, rounds[student]))
                for student, nb in built.items()}
    gradings = {}
    for student, nb in built.items():
        notebook = nbformat.writes(_blank_answers(nb, left_out[student])).encode()
        gradings[student] = Grading(student, notebook, left_out[student], submissions[student][1],
                                    builder.parts(lab, notebook, left_out[student]))
    solved = {"solution": frozenset(exercises), "solution_trimmed": frozenset(rounds.get("solution_trimmed", ()))}
    return Prepared(lab, templates, gradings, exercises, skipped, solved)


def grade_one(lab: str, student: str, notebook: bytes, template: bytes) -> tuple[dict, dict]:
    """(raw result, the machine and environment parts of the key where it ran) of one grading
    through the class grader's path; a module-level function, so a Ray task on another node can
    run it (``make prove ADDRESS=...``)."""
    res = autograde.autograde_submission(lab, student, notebook, template, OPTIONS)
    autograded = nbformat.reads(res["autograded"], as_version=4) if res["autograded"] else None
    where = {"machine": digest(machine_class()), "environment": digest(environment_parts())}
    return ledger.raw_result(res, first_errors(autograded) if autograded else {}), where


def _grade(prep: Prepared, gradings: list, workers: int, address: str | None = None) -> dict:
    """student -> (raw result, where it ran) of each grading, graded now, ``workers`` at a time
    here or as tasks of the Ray cluster at ``address``."""
    def args(g: Grading):
        template = prep.templates.trimmed(prep.lab, g.left_out) if g.left_out else prep.templates.full(prep.lab)
        return prep.lab, g.student, g.notebook, template

    if not gradings:
        return {}
    # Templates are built here, one at a time: two gradings graded without the same cells share a
    # trimmed template, and building it from two threads at once collides on its folder.
    built = [args(g) for g in gradings]
    if address:
        import ray

        remote = ray.remote(num_cpus=2, max_retries=0)(grade_one)
        return dict(zip([g.student for g in gradings], ray.get([remote.remote(*a) for a in built])))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return dict(zip([g.student for g in gradings], pool.map(lambda a: grade_one(*a), built)))


def _collect(prep: Prepared, raws: dict, grading_dir: Path):
    """(graded, leftover processes, problems of the grading itself) from raw results, stored or
    fresh alike. Scores of test cells a grading left out are dropped: nothing ran there."""
    graded, leftover, problems = {}, [], []
    for student, raw in raws.items():
        g = prep.gradings[student]
        if raw["status"] != "graded":
            problems.append(f"{student}: not graded ({raw.get('reason', '')}):\n{raw.get('log_tail', '')}")
        if raw["leftover_killed"]:
            leftover.append(f"{student}: {raw['leftover_killed']} process(es)")
            problems.append(f"{student}: {raw['leftover_killed']} process(es) left after grading")
        if student.startswith("solution") and [f for f in raw["flags"] if "without the sandbox" not in f]:
            problems.append(f"{student}: flagged for review: {raw['flags']}")
        if not raw["scores"]:
            problems.append(f"{student}: no scores")
            continue
        gradebook.merge(grading_dir / "gradebook.db", prep.lab, student,
                        {gid: [s, m, False] for gid, (s, m) in raw["scores"].items()})
        left_out = set(g.left_out)
        scores = {gid: (s, m) for gid, (s, m) in raw["scores"].items() if gid not in left_out}
        errors = {gid: (e[0], e[1]) for gid, e in raw["errors"].items()}
        visible = {gid: e[3] for gid, e in raw["errors"].items()}
        graded[student] = Graded(student, scores, errors, {a: m.name for a, m in g.round.items() if not m.right},
                                 visible, {a: m.name for a, m in g.round.items() if m.right}, raw["seconds"],
                                 frozenset(left_out), prep.solved.get(student, frozenset()),
                                 {gid: e[2] for gid, e in raw["errors"].items()})
    return graded, leftover, problems


def run(lab: str, grading_dir: Path | None = None, workers: int | None = None,
        mutants_per_exercise: int | None = None, stored: ledger.LabLedger | None = None,
        audit: frozenset = frozenset(), address: str | None = None,
        only: frozenset | None = None) -> RoundTrip:
    """Judge the lab's round trip (:func:`prepare`): each grading whose key ``stored`` (the
    lab's ledger) holds is taken from it, every other one is graded now through
    :func:`grader.grading.autograde.autograde_submission` with the class grader's templates, ``workers``
    at a time; ``stored=None`` grades every one. A stored grading whose key is in ``audit`` is
    graded again and must give the stored result, cell for cell. Every score is also merged into
    ``grading_dir/gradebook.db`` (one gradebook with every submission, for exports).
    ``mutants_per_exercise``: only each exercise's first mutants (None: every one); right answers
    are always graded; ``only``: just the mutants it names. ``address``: grade on that Ray
    cluster (a connected one); a grading recorded from another node is keyed by that node's
    machine and environment."""
    start = time.monotonic()
    workers = workers or _workers()
    grading_dir = Path(grading_dir or tempfile.mkdtemp(prefix=f"roundtrip-{lab}-"))
    try:
        prep = prepare(lab, grading_dir, mutants_per_exercise, only=only)
    except SystemExit as exc:
        return RoundTrip(lab, 0.0, {}, [], [str(exc)])
    entries = {s: stored.get(g.key) for s, g in prep.gradings.items()} if stored else {}
    why = {s: "audit" if entries.get(s) is not None else
           stored.why_missed(dataclasses.asdict(g.parts), s) if stored else "no ledger read"
           for s, g in prep.gradings.items() if entries.get(s) is None or g.key in audit}
    fresh_needed = [prep.gradings[s] for s in why]
    raws = {s: e.result for s, e in entries.items() if e is not None}
    fresh = _grade(prep, fresh_needed, workers, address)
    problems = []
    for student, (raw, where) in fresh.items():
        g = prep.gradings[student]
        g.parts = dataclasses.replace(g.parts, **where)  # the same parts, unless it ran elsewhere
        entry = entries.get(student)
        if entry is not None:
            problems += [f"audit: ledger/{lab}.json entry {entry.key[:16]} ({student}) differs from a fresh "
                         f"grading of the same inputs: {d}" for d in ledger.differences(entry.result, raw)]
        raws[student] = raw
    graded, leftover, grading_problems = _collect(prep, raws, grading_dir)
    unpublished = [lang for student, (lang, _) in EDITIONS.items() if student not in prep.gradings]
    problems = grading_problems + problems + judge(graded, prep.exercises, prep.skipped,
                                                    requirements.test_sources(lab), unpublished)
    records = {g.key: ledger.Entry(g.key, s, g.variants(), g.left_out, dataclasses.asdict(g.parts), raws[s])
               for s, g in prep.gradings.items() if s in raws}
    return RoundTrip(lab, round(time.monotonic() - start, 1), graded, leftover, problems, prep.skipped,
                     visible_catch(graded, prep.exercises), mutants.not_graded(lab, mutants_per_exercise, only),
                     fresh={s: why[s] for s in sorted(fresh)},
                     audited=sorted(s for s in fresh if entries.get(s) is not None),
                     records=records)


def validate_problems(rt: RoundTrip, recorded: dict | None = None) -> list[str]:
    """What Validate misses against the record (grader/visible_catch.json, or ``recorded``:
    ``roundtrip_rules.visible_problems``); nothing for the quiz, which keeps its key hidden
    (Validate checks only an answer's form)."""
    if rt.lab.endswith("_quiz"):
        return []
    ungraded = {answer: len(names) for answer, names in rt.not_graded.items()}
    return visible_problems(rt.visible, visible_record().get(rt.lab, {}) if recorded is None else recorded, ungraded)
