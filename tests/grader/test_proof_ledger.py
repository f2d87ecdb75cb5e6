"""The proof ledger (grader/proof/ledger.py), its audits (grader/proof/audit.py) and the plan
(grader/proof/plan.py): stored results read back as written, an audit names every cell-level
difference, the rotation reaches every entry within its bound, and on a real grading a forged
entry is caught by its audit while a stale one is graded again."""
import copy
import dataclasses
import random

import pytest

from grader.proof import audit, keys, ledger, mutants, plan, roundtrip, roundtrip_report

RAW = {"status": "graded", "scores": {"a_tests": [0.0, 2.0], "b_tests": [2.0, 2.0]},
       "errors": {"a_tests": ["CheckFailed", "expected 3, got 2 (took 1.2 s)", 4, True]},
       "leftover_killed": 0, "flags": [], "seconds": 31.5}


def test_a_ledger_reads_back_as_written_and_drops_keys_no_longer_made(tmp_path):
    entry = ledger.Entry("k1", "mutants0", {"a_answer": "mutant: m"}, ["demo"], {"recipe": "r"}, RAW)
    ledger.write(ledger.LabLedger("00_x", {"k1": entry}, "abc"), tmp_path)
    back = ledger.read("00_x", tmp_path)
    assert back.entries == {"k1": entry} and back.commit == "abc"
    assert back.seconds_of("mutants0") == 31.5 and back.seconds_of("mutants1") is None
    ledger.write(ledger.LabLedger("00_x", {}, "def"), tmp_path)
    assert ledger.read("00_x", tmp_path).entries == {}
    assert ledger.read("01_missing", tmp_path).entries == {}


def test_an_entry_of_another_schema_is_not_read(tmp_path):
    path = ledger.write(ledger.LabLedger("00_x", {"k1": ledger.Entry("k1", "solution", {}, [], {}, RAW)}), tmp_path)
    text = path.read_text()
    assert f'"schema": {keys.SCHEMA}' in text
    path.write_text(text.replace(f'"schema": {keys.SCHEMA}', f'"schema": {keys.SCHEMA - 1}'))
    assert ledger.read("00_x", tmp_path).entries == {}


def test_an_audit_names_every_cell_level_difference_and_ignores_time_and_wording():
    same = copy.deepcopy(RAW)
    same["seconds"], same["errors"]["a_tests"][1] = 64.0, "expected 3, got 2 (took 2.9 s)"
    assert ledger.differences(RAW, same) == []
    forged = copy.deepcopy(RAW)
    forged["scores"]["a_tests"] = [2.0, 2.0]
    del forged["errors"]["a_tests"]
    assert ledger.differences(forged, RAW) == [
        "a_tests score: stored [2.0, 2.0], fresh [0.0, 2.0]",
        "a_tests error: stored None, fresh ['CheckFailed', 4, True]"]
    moved = copy.deepcopy(RAW)
    moved["errors"]["a_tests"][2:] = [9, False]  # the same check failing elsewhere: a hidden line
    assert ledger.differences(RAW, moved) == ["a_tests error: stored ['CheckFailed', 4, True], fresh ['CheckFailed', 9, False]"]
    left = dict(RAW, leftover_killed=2, flags=["2 leftover process(es) killed"])
    assert len(ledger.differences(RAW, left)) == 2


@pytest.mark.parametrize("entries", [1, 2, 7, 118, 301])
def test_the_rotation_reaches_every_entry_once_within_its_bound(entries):
    keys = [f"{k:064x}" for k in random.Random(entries).sample(range(10**9), entries)]
    bound = audit.rotation_bound(entries)
    assert bound == -(-entries // audit.ROTATION_PER_RUN)
    for first_run in (0, 5, 1234):  # any window of `bound` consecutive runs
        seen = [k for run in range(first_run, first_run + bound) for k in audit.rotation(keys, run)]
        assert sorted(seen) == sorted(keys)  # each entry exactly once
    assert all(len(audit.rotation(keys, run)) <= audit.ROTATION_PER_RUN for run in range(bound))


def test_a_run_audits_its_rotation_and_some_at_random():
    keys = [f"{k:03d}" for k in range(40)]
    picked = audit.chosen(keys, run=3, rng=random.Random(0))
    rotated = [k for k, why in picked.items() if why == "rotation"]
    at_random = [k for k, why in picked.items() if why == "random"]
    assert rotated == audit.rotation(keys, 3) and len(at_random) == audit.RANDOM_PER_RUN
    assert not set(rotated) & set(at_random)
    assert audit.chosen(["only"], run=0) == {"only": "rotation"}
    assert audit.chosen([], run=0) == {}


def test_a_plan_costs_its_misses_and_audits_by_the_ledger_s_seconds():
    p = plan.LabPlan("03_x", gradings={"solution": "k1", "mutants0": "k2", "mutants1": "k3"},
                     misses={"mutants0": "changed: submission"}, seconds={"solution": 50.0, "mutants0": 40.0},
                     audits={"k3": "random"})
    assert p.cost() == 40.0 + plan.UNKNOWN_GRADING_S
    assert plan.expected_wall_s({"03_x": p}) == p.cost() / plan.PARALLEL
    text = plan.describe({"03_x": p})
    assert "to grade: mutants0" in text and "changed: submission" in text and "make prove LAB=03_x" in text


def test_a_plan_past_its_budget_is_refused_with_the_commands_that_prove_it():
    stale = plan.LabPlan("05_x", gradings={"solution": "k1", "mutants0": "k2"},
                         misses={"solution": "never graded", "mutants0": "never graded"},
                         seconds={"solution": 300.0, "mutants0": 500.0})
    fresh = plan.LabPlan("06_y", gradings={"solution": "k3"}, seconds={"solution": 100.0})
    plans = {"05_x": stale, "06_y": fresh}
    assert plan.over_budget(plans, budget_s=400.0) == ""  # 800 s of grading, two at a time
    refused = plan.over_budget(plans, budget_s=399.0)
    assert "about 400 s" in refused and refused.endswith("make prove LAB=05_x")


LAB = "00_lab_setup"


@pytest.mark.slow
def test_the_plan_of_a_tree_finds_what_the_ledger_lacks(tmp_path, proven_env):
    """Every key computed from the tree: against an empty ledger every grading of a lab is a
    miss (never graded); against a ledger holding all but one of them, that one, naming the
    changed part when a grading of that name was stored under another key."""
    empty = plan.make_plan([LAB], run=0, ledger_dir=tmp_path / "none")[LAB]
    assert set(empty.misses) == set(empty.gradings) and set(empty.misses.values()) == {"never graded"}
    assert empty.audits == {}
    first = roundtrip.run(LAB, tmp_path / "rt", stored=ledger.read(LAB))
    records = dict(first.records)
    entry = next(e for e in records.values() if e.student == "untouched")
    del records[entry.key]
    records["f" * 64] = dataclasses.replace(entry, key="f" * 64, parts={**entry.parts, "submission": "other"})
    ledger.write(ledger.LabLedger(LAB, records), tmp_path / "ledger")
    partial = plan.make_plan([LAB], run=0, ledger_dir=tmp_path / "ledger")[LAB]
    assert partial.misses == {"untouched": "changed: submission"}
    assert len(partial.audits) == min(3, len(partial.gradings) - 1)


@pytest.mark.slow
def test_a_forged_entry_is_caught_by_its_audit_and_a_stale_one_is_graded_again(tmp_path, proven_env):
    """On lab 00's real round trip: one stored grading that holds a right answer is forged (the
    right answer's test recorded as failing) and audited; another is stored under a key the tree
    no longer makes. The audit names the forged entry and its cell, the stale one is graded now,
    every other grading comes from the ledger."""
    committed = ledger.read(LAB)
    first = roundtrip.run(LAB, tmp_path / "first", stored=committed)
    assert not first.problems, roundtrip_report.report(first)
    exercises = mutants.load(LAB)
    forged = next(e for e in first.records.values() if any(v.startswith("right:") for v in e.variants.values()))
    stale = next(e for e in first.records.values() if e.student.startswith("mutants") and e is not forged)
    answer = next(a for a, v in forged.variants.items() if v.startswith("right:"))
    cell = exercises[answer].tests[0]
    top = forged.result["scores"][cell][1]
    forged_result = copy.deepcopy(forged.result)
    forged_result["scores"][cell] = [0.0, top]
    records = dict(first.records)
    records[forged.key] = dataclasses.replace(forged, result=forged_result)
    del records[stale.key]
    records["0" * 64] = dataclasses.replace(stale, key="0" * 64)
    ledger.write(ledger.LabLedger(LAB, records), tmp_path / "ledger")

    rt = roundtrip.run(LAB, tmp_path / "second", stored=ledger.read(LAB, tmp_path / "ledger"),
                       audit=frozenset({forged.key}))
    assert sorted(rt.fresh) == sorted([forged.student, stale.student]) and rt.audited == [forged.student]
    audits = [p for p in rt.problems if p.startswith("audit:")]
    assert audits == [f"audit: ledger/{LAB}.json entry {forged.key[:16]} ({forged.student}) differs from a fresh "
                      f"grading of the same inputs: {cell} score: stored [0.0, {top}], fresh [{top}, {top}]"], rt.problems
    assert rt.records[stale.key].result["scores"] == stale.result["scores"]  # graded again, under its real key


def test_round_trips_in_the_test_process_grade_without_the_train_variables_a_cluster_leaves(monkeypatch):
    import os

    import conftest

    monkeypatch.setenv("RAY_TRAIN_METRICS_ENABLED", "0")  # as raylab.start_cluster leaves it
    with conftest.proven_environment():
        assert not [k for k in os.environ if k.startswith("RAY_TRAIN_")]
    assert os.environ["RAY_TRAIN_METRICS_ENABLED"] == "0"
