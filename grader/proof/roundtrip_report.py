"""A round trip's result as text: what was graded, from where, and what it scored."""
from __future__ import annotations

from grader.proof.roundtrip import RoundTrip


def report(rt: RoundTrip) -> str:
    """What a round trip graded and found, one line per submission and per graded cell."""
    stored = len(rt.graded) - len(set(rt.fresh) & set(rt.graded))
    lines = [f"{rt.lab}: {rt.seconds:.0f} s, {len(rt.graded)} submissions: {len(rt.fresh)} graded now"
             + (f" ({len(rt.audited)} of them audits of stored gradings)" if rt.audited else "")
             + f", {stored} from the ledger"]
    if rt.skipped:
        lines.append(f"  demo cells left out of the wrong-answer rounds: {', '.join(rt.skipped)}")
    for student, g in rt.graded.items():
        total = sum(s or 0 for s, _ in g.scores.values())
        top = sum(m or 0 for _, m in g.scores.values())
        lines.append(f"  {student:<16} {total:g}/{top:g}  ({g.seconds:.0f} s, "
                     + (f"graded now: {rt.fresh[student]}" if student in rt.fresh else "from the ledger") + ")")
        for answer, name in g.mutated.items():
            lines.append(f"      mutant {answer}: {name}")
        for answer, name in g.right.items():
            lines.append(f"      right answer {answer}: {name}")
        for grade_id, (score, max_score) in g.scores.items():
            err = g.errors.get(grade_id)
            lines.append(f"      {grade_id:<34} {score}/{max_score}" + (f"  {err[0]}: {err[1][:90]!r}" if err else ""))
    if rt.visible:
        caught, total = (sum(v[i] for v in rt.visible.values()) for i in (0, 1))
        lines.append(f"  visible catch rate: {caught}/{total} mutants ({100 * caught / max(total, 1):.0f} %) "
                     "fail a check Validate runs"
                     + (" (a quiz keeps its key hidden: Validate checks only an answer's form)"
                        if rt.lab.endswith("_quiz") else ""))
        lines += [f"      {answer:<34} {c}/{t}" for answer, (c, t) in rt.visible.items()]
    if rt.not_graded:
        left = sum(len(names) for names in rt.not_graded.values())
        lines.append(f"  mutants not graded at this depth: {left} (make prove grades every one)")
    lines += [f"  PROBLEM: {p}" for p in rt.problems] or ["  OK: autograder right in both directions"]
    return "\n".join(lines)
