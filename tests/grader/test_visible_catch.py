"""The record of what Validate catches (grader/visible_catch.json), checked against the mutant
files and the proof ledger: every exercise of every lab (the quiz keeps its key hidden), its
mutant count, at least one mutant each that Validate shows, 80 % of all mutants, and the counts
the ledger's stored gradings give (make prove writes both; nobody writes the record by hand), and
that every core mutant (the mistake its exercise exists to teach) fails a check Validate runs. The
round trips check that each lab's mutants still fail visibly at least as often as recorded
(tests/grader/test_autograde_roundtrip.py). A lab in progress (grader.authoring.lab_status) is in the record
once it has been proven, and then checked like the others, but counts towards no goal yet."""
import pytest

from grader.authoring import lab_status
from grader.proof import ledger, mutants, roundtrip_rules as rules

RECORD = rules.visible_record()
LABS = [lab for lab in lab_status.finished_labs() if not lab.endswith("_quiz")]
DRAFTS = [lab for lab in lab_status.labs_in_progress() if not lab.endswith("_quiz")]


def test_the_record_covers_every_exercise_with_its_mutant_count():
    assert sorted(set(RECORD) - set(DRAFTS)) == LABS
    for lab in sorted(RECORD):
        counts = {answer: len(e.mutants) for answer, e in mutants.load(lab).items()}
        assert {answer: total for answer, (_, total) in RECORD[lab].items()} == counts, lab


def test_validate_shows_a_mutant_of_every_exercise_and_80_percent_of_all():
    seen = [(lab, answer, caught, total) for lab in LABS for answer, (caught, total) in RECORD[lab].items()]
    assert [(lab, answer) for lab, answer, caught, total in seen if not 0 < caught <= total] == []
    caught, total = sum(s[2] for s in seen), sum(s[3] for s in seen)
    assert caught / total >= rules.VISIBLE_GOAL, f"Validate shows {caught} of {total} mutants"


@pytest.mark.parametrize("lab", LABS + DRAFTS)
def test_the_record_is_what_the_ledger_s_gradings_give(lab):
    stored = ledger.read(lab)
    if lab in DRAFTS and not stored.entries and lab not in RECORD:
        pytest.skip(f"{lab} is in progress and not proven yet")
    assert stored.entries, f"ledger/{lab}.json holds no gradings: make prove LAB={lab}"
    assert rules.visible_catch_of_entries(stored.entries.values(), mutants.load(lab)) == RECORD.get(lab)


def test_the_record_is_written_one_lab_a_line_and_reads_back(tmp_path):
    path = tmp_path / "visible.json"
    rules.write_visible_record("01_b", {"x_answer": [1, 2]}, path)
    rules.write_visible_record("00_a", {"y_answer": (2, 3)}, path)
    rules.write_visible_record("01_b", {"x_answer": [2, 2]}, path)
    assert path.read_text() == '{\n  "00_a": {"y_answer": [2, 3]},\n  "01_b": {"x_answer": [2, 2]}\n}\n'



def core_misses(entries, exercises) -> list:
    """(answer, mutant) of every core mutant no visible check of its exercise failed on."""
    core = {(answer, m.name) for answer, e in exercises.items() for m in e.mutants if m.core}
    return [miss for miss in rules.visible_misses(entries, exercises) if miss in core]


@pytest.mark.parametrize("lab", LABS + DRAFTS)
def test_every_core_mutant_is_caught_by_a_visible_check(lab):
    """A learner who makes the mistake an exercise exists to teach must see it before submitting."""
    misses = core_misses(ledger.read(lab).entries.values(), mutants.load(lab))
    assert misses == [], (f"core mutants of {lab} that only hidden tests catch (Validate passes them): "
                          + ", ".join(f"{answer}/{name}" for answer, name in misses))


def test_a_core_mutant_caught_only_by_a_hidden_check_is_reported():
    def mutant(name, core):
        return mutants.Mutant("a_answer", name, "", [], core=core)

    exercises = {"a_answer": mutants.Exercise("a_answer", ["a_tests", "a_more_tests"],
                                              [mutant("hidden_core", True), mutant("visible_core", True),
                                               mutant("hidden_side", False)])}

    def entry(name, errors):
        return ledger.Entry("key-" + name, "mutants-" + name, {"a_answer": "mutant: " + name, "b_answer": "right: r"},
                            [], {}, {"errors": errors})

    hidden = {"a_tests": ["CheckFailed", "x", 12, False], "a_more_tests": ["AssertionError", "y", None, None],
              "b_tests": ["CheckFailed", "another exercise's cell", 1, True]}
    visible = {"a_tests": ["CheckFailed", "x", 12, False], "a_more_tests": ["CheckFailed", "y", 2, True]}
    entries = [entry("hidden_core", hidden), entry("visible_core", visible), entry("hidden_side", hidden)]
    assert rules.visible_misses(entries, exercises) == [("a_answer", "hidden_core"), ("a_answer", "hidden_side")]
    assert core_misses(entries, exercises) == [("a_answer", "hidden_core")]
