"""The record of what Validate catches (grader/visible_catch.json), checked against the mutant
files: every exercise of every lab (the quiz keeps its key hidden), its mutant count, at least one
mutant each that Validate shows, and 80 % of all mutants. The round trips check that each lab's
graded mutants still fail visibly at least as often as recorded
(tests/grader/test_autograde_roundtrip.py)."""
from grader import course, mutants, roundtrip_rules as rules

RECORD = rules.visible_record()
LABS = [lab for lab in course.labs() if not lab.endswith("_quiz")]


def test_the_record_covers_every_exercise_with_its_mutant_count():
    assert sorted(RECORD) == LABS
    for lab in LABS:
        counts = {answer: len(e.mutants) for answer, e in mutants.load(lab).items()}
        assert {answer: total for answer, (_, total) in RECORD[lab].items()} == counts, lab


def test_validate_shows_a_mutant_of_every_exercise_and_80_percent_of_all():
    seen = [(lab, answer, caught, total) for lab in LABS for answer, (caught, total) in RECORD[lab].items()]
    assert [(lab, answer) for lab, answer, caught, total in seen if not 0 < caught <= total] == []
    caught, total = sum(s[2] for s in seen), sum(s[3] for s in seen)
    assert caught / total >= rules.VISIBLE_GOAL, f"Validate shows {caught} of {total} mutants"
