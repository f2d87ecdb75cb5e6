"""What the proof must grade for this tree: every key computed from the tree, looked up in the
ledger; the misses, the audits, and about how long they take.

``python -m grader.proof status`` prints it for a developer (what is stale and why, what CI will
regrade, about how long). ``python -m grader.proof check`` is the first step of ``make test``:
it writes the plan the round-trip tests follow (``.grading/proof-plan.json``: the audits chosen
for this run, the expected seconds of each lab) and fails at once, with the list and the command
that proves them, when the misses cannot fit the time CI has for them.
"""
from __future__ import annotations

import dataclasses
import json
import random
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from grader.grading import course
from grader.proof import audit, keys, ledger, suites
from grader.proof.roundtrip_rules import EDITIONS

# A grading the ledger has never timed (a new lab or round): about what a Train lab's takes.
UNKNOWN_GRADING_S = 120.0
# Gradings run two at a time in make test (two test processes, one grading each).
PARALLEL = 2
# Seconds of grading (two at a time) CI may spend on misses and audits: the rest of the suite
# takes about 40 of CI's 90 minutes on a slow day; this leaves room for the host running slower
# than when the ledger's seconds were measured.
CI_BUDGET_S = 1500.0
PLAN_FILE = course.ROOT / ".grading" / "proof-plan.json"


@dataclass
class LabPlan:
    lab: str
    gradings: dict = field(default_factory=dict)  # student -> key
    misses: dict = field(default_factory=dict)  # student -> why (which parts changed)
    seconds: dict = field(default_factory=dict)  # student -> expected seconds of a grading
    audits: dict = field(default_factory=dict)  # key -> "rotation" / "random"
    problem: str = ""  # the lab could not be prepared (its round trip will say why)

    def cost(self) -> float:
        todo = set(self.misses) | {s for s, k in self.gradings.items() if k in self.audits}
        return sum(self.seconds.get(s, UNKNOWN_GRADING_S) for s in todo)


def lab_plan(lab: str, work: Path, builder: keys.KeyBuilder, ledger_dir: Path | None = None) -> LabPlan:
    from grader.proof import roundtrip

    plan = LabPlan(lab)
    stored = ledger.read(lab, ledger_dir)
    try:
        prep = roundtrip.prepare(lab, work / lab, builder=builder)
    except SystemExit as exc:
        plan.problem = str(exc)
        return plan
    for student, g in prep.gradings.items():
        plan.gradings[student] = g.key
        # A submission of another edition runs what its English one does: about as long.
        english = EDITIONS.get(student, (None, student))[1]
        plan.seconds[student] = stored.seconds_of(student) or stored.seconds_of(english) or UNKNOWN_GRADING_S
        if stored.get(g.key) is None:
            plan.misses[student] = stored.why_missed(dataclasses.asdict(g.parts), student)
    return plan


# The plan of the heavy test modules (grader/proof/suites.py) sits beside the labs' under this name:
# its "gradings" are module -> key. They run in the suite anyway when missed, so they count in no budget.
MODULES = "tests"


def modules_plan(ledger_file: Path = suites.LEDGER_FILE) -> LabPlan:
    plan = LabPlan(MODULES)
    stored = suites.read(ledger_file)
    for module, parts in suites.module_parts().items():
        plan.gradings[module] = parts.key
        before = [e for e in stored.values() if e["module"] == module]
        plan.seconds[module] = max((e["seconds"] for e in before), default=UNKNOWN_GRADING_S)
        if parts.key not in stored:
            changed = [n for n, v in dataclasses.asdict(parts).items() if before and before[0]["parts"].get(n) != v]
            plan.misses[module] = ("changed: " + ", ".join(changed)) if before else "never run by make prove"
    return plan


def make_plan(labs=None, run: int | None = None, rng: random.Random | None = None,
              ledger_dir: Path | None = None, modules: bool = True) -> dict[str, LabPlan]:
    """lab -> its plan (and :data:`MODULES` -> the heavy test modules' plan), the audits of this
    run chosen among every stored key that still holds."""
    from grader.proof import roundtrip

    builder = keys.KeyBuilder(roundtrip.OPTIONS)
    with tempfile.TemporaryDirectory(prefix="proof-plan-") as work:
        plans = {lab: lab_plan(lab, Path(work), builder, ledger_dir) for lab in labs or course.labs()}
    if modules:
        plans[MODULES] = modules_plan((ledger_dir / "tests.json") if ledger_dir else suites.LEDGER_FILE)
    hits = {key: lab for lab, p in plans.items() for s, key in p.gradings.items() if s not in p.misses}
    run = audit.run_number() if run is None else run
    for key, why in audit.chosen(hits, run, rng).items():
        plans[hits[key]].audits[key] = why
    return plans


def expected_wall_s(plans: dict[str, LabPlan]) -> float:
    """Seconds of grading the round trips will spend, two at a time."""
    return sum(p.cost() for lab, p in plans.items() if lab != MODULES) / PARALLEL


def cached_modules(plans: dict[str, LabPlan]) -> set[str]:
    """The test modules this run leaves out: the ledger holds their key and no audit picked them."""
    p = plans.get(MODULES)
    return {m for m, key in p.gradings.items() if m not in p.misses and key not in p.audits} if p else set()


def describe(plans: dict[str, LabPlan]) -> str:
    lines = []
    for lab, p in plans.items():
        if lab == MODULES:
            lines.append(f"heavy test modules: {len(p.gradings)}, {len(p.gradings) - len(p.misses)} in the ledger, "
                         f"{len(p.misses) + len(p.audits)} to run ({len(p.audits)} audits)")
            lines += [f"    to run:   {m} ({why})" for m, why in p.misses.items()]
            lines += [f"    audit:    {m} ({p.audits[k]})" for m, k in p.gradings.items() if k in p.audits]
            continue
        if p.problem:
            lines.append(f"{lab}: cannot be prepared: {p.problem[:300]}")
            continue
        stored = len(p.gradings) - len(p.misses)
        lines.append(f"{lab}: {len(p.gradings)} gradings ({sum(p.seconds.values()):.0f} s of grading as recorded), "
                     f"{stored} in the ledger, {len(p.misses)} to grade"
                     + (f", {len(p.audits)} audited" if p.audits else "") + f" (about {p.cost():.0f} s)")
        for student, why in p.misses.items():
            lines.append(f"    to grade: {student:<18} {why}")
        for student, key in p.gradings.items():
            if key in p.audits:
                lines.append(f"    audit:    {student:<18} {key[:16]} ({p.audits[key]})")
    entries = sum(len(p.gradings) - len(p.misses) for p in plans.values())
    lines.append(f"about {expected_wall_s(plans):.0f} s of grading, {PARALLEL} at a time; the rotation "
                 f"reaches each of the {entries} stored results within {audit.rotation_bound(entries)} runs")
    stale = [lab for lab, p in plans.items() if p.misses and lab != MODULES]
    commands = [f"make prove LAB={lab}" for lab in stale]
    if plans.get(MODULES) and plans[MODULES].misses:
        commands.append("make prove TESTS=1")
    if commands:
        lines.append("prove them (and commit the ledger): " + " && ".join(commands))
    return "\n".join(lines)


def over_budget(plans: dict[str, LabPlan], budget_s: float) -> str:
    """Why the misses cannot be graded within ``budget_s`` (empty when they can)."""
    expected = expected_wall_s(plans)
    if expected <= budget_s:
        return ""
    stale = [lab for lab, p in plans.items() if p.misses and lab != MODULES]
    return (f"The proof cannot fit: about {expected:.0f} s of grading against a budget of {budget_s:.0f} s. "
            "Prove the stale labs and commit their ledger files: "
            + " && ".join(f"make prove LAB={lab}" for lab in stale))


def write(plans: dict[str, LabPlan], path: Path = PLAN_FILE) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({lab: dataclasses.asdict(p) for lab, p in plans.items()}, indent=1))
    return path


def read(path: Path = PLAN_FILE) -> dict[str, LabPlan]:
    """The plan ``check`` wrote for this run (empty when there is none)."""
    if not Path(path).exists():
        return {}
    return {lab: LabPlan(**p) for lab, p in json.loads(Path(path).read_text()).items()}
