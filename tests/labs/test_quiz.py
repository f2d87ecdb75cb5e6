"""The quiz (lab 10): structure, no answer key in the learner copy, feedback that does not give the
answer away, and the per-question export from a real autograded gradebook."""
import ast
import csv
import json
import io
import os
import re
import sys
from pathlib import Path

import nbformat
import pytest

from grader.classroom import question_scores
from grader.grading import course
from grader.proof import mutants, roundtrip, roundtrip_report
from raylab.checks.common import CheckFailed

LAB = "10_quiz"


def _meta(cell):
    return cell.metadata.get("nbgrader", {})


def _cells(path):
    return {_meta(c)["grade_id"]: c for c in nbformat.read(path, as_version=4).cells}


def _questions():
    """``[(number, answer_id, tests_id, variable, value, points)]`` in notebook order."""
    cells = _cells(course.solution_path(LAB))
    answers = mutants.answer_sources(LAB)
    found = []
    for gid, cell in cells.items():
        if not (gid.endswith("_answer") and _meta(cell).get("solution")):
            continue
        tree = ast.parse(answers[gid])
        [assign] = [n for n in tree.body if isinstance(n, ast.Assign)]
        var = assign.targets[0].id
        tests = gid[: -len("_answer")] + "_tests"
        found.append((int(var[1:]), gid, tests, var, ast.literal_eval(assign.value),
                      _meta(cells[tests])["points"]))
    return found


QUESTIONS = _questions()


def _format_checks():
    namespace = {}
    exec(_cells(course.solution_path(LAB))["quiz_format_checks"].source, namespace)  # noqa: S102
    return namespace


def _failure(test_source, var, value):
    """Run a test cell with ``var = value``; the CheckFailed message, or None when it passes."""
    namespace = _format_checks()
    namespace[var] = value
    try:
        exec(test_source, namespace)  # noqa: S102 - the course's own test cell
    except CheckFailed as exc:
        return str(exc)
    return None


def test_quiz_has_at_least_twenty_numbered_questions_with_points():
    assert len(QUESTIONS) >= 20
    assert [n for n, *_ in QUESTIONS] == list(range(1, len(QUESTIONS) + 1))
    cells = _cells(course.solution_path(LAB))
    for number, answer, tests, var, value, points in QUESTIONS:
        assert f"quiz_{answer[5:-7]}_text" in cells, f"question {number} has no text cell"
        assert f"### Question {number} " in cells[f"quiz_{answer[5:-7]}_text"].source
        assert _meta(cells[tests]).get("grade") and points in (1, 2)
        if isinstance(value, bool) or isinstance(value, str):
            assert points == 1, f"question {number}: choices and true/false are worth 1 point"
        else:
            assert points == 2, f"question {number}: computed answers are worth 2 points"
        if isinstance(value, str):
            assert re.fullmatch(r"[A-D]", value)


def test_quiz_covers_every_lab_before_it():
    sources = " ".join(_cells(course.solution_path(LAB))[t].source for _, _, t, *_ in QUESTIONS)
    for lab in range(9):
        assert f"lab {lab:02d}" in sources, f"no question sends learners back to lab {lab:02d}"
    kinds = {type(v) for *_, v, _ in QUESTIONS}
    assert {bool, str} <= kinds and (int in kinds or float in kinds)


def test_quiz_does_not_start_ray():
    setup = _cells(course.solution_path(LAB))["quiz_setup"].source
    assert 'raylab.setup("10_quiz", start_ray=False)' in setup


@pytest.mark.parametrize("number, answer, tests, var, value, points", QUESTIONS)
def test_solution_passes_and_wrong_answers_fail_without_revealing_the_answer(
        number, answer, tests, var, value, points):
    source = _cells(course.solution_path(LAB))[tests].source
    assert _failure(source, var, value) is None
    if isinstance(value, str):
        wrong = [v for v in "ABCD" if v != value]
    elif isinstance(value, bool):
        wrong = [not value]
    else:
        wrong = [value + 1, value - 1, value * 2 + 3]
    messages = {_failure(source, var, w) for w in wrong}
    assert None not in messages, f"question {number}: a wrong answer passed"
    [message] = messages  # the same words whatever the wrong answer: nothing to probe
    assert message.startswith(f"Question {number} ")
    assert "not right yet; reread lab " in message
    assert "expected" not in message and "got" not in message
    token = {True: "True", False: "False"}.get(value, str(value)) if not isinstance(value, str) \
        else value
    assert not re.search(rf"(?<![\w-]){re.escape(token)}(?![\w.])", message.split("reread", 1)[1]), \
        f"question {number}: the feedback names the answer"
    # the format check alone (visible test) rejects the wrong type
    bad_type = 1 if isinstance(value, str) else ("True" if isinstance(value, bool) else "6")
    assert "wants" in _failure(source, var, bad_type)


def test_learner_copy_has_no_answer_key():
    cells = _cells(course.release_path(LAB))
    for number, answer, tests, var, value, points in QUESTIONS:
        ans, tst = cells[answer].source, cells[tests].source
        assert "raise NotImplementedError()" in ans and f"{var} =" not in ans
        assert "HIDDEN" not in tst and "not_yet(" not in tst and "==" not in tst
        assert re.fullmatch(rf"# requirement: answer_form\ncheck_(choice|bool|number)\({var}, {number}\)", tst.strip()), tst
    text = course.release_path(LAB).read_text()
    assert "BEGIN SOLUTION" not in text and "BEGIN HIDDEN TESTS" not in text


def test_every_question_has_two_plausible_wrong_answers_that_fail():
    exercises = mutants.load(LAB)
    sources = mutants.answer_sources(LAB)
    cells = _cells(course.solution_path(LAB))
    for number, answer, tests, var, value, points in QUESTIONS:
        assert len(exercises[answer].mutants) >= 2
        for m in exercises[answer].mutants:
            namespace = {}
            exec(mutants.apply(sources[answer], m), namespace)  # noqa: S102
            assert namespace[var] != value or type(namespace[var]) is not type(value)
            assert _failure(cells[tests].source, var, namespace[var]), f"{m.name} passes"


def test_question_scores_export_on_a_small_gradebook(tmp_path, monkeypatch):
    from nbgrader.api import Gradebook

    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    url = f"sqlite:///{tmp_path}/gradebook.db"
    with Gradebook(url) as gb:  # nbgrader runs alembic from PATH to create a new gradebook
        gb.add_assignment("demo")
        for nb_name in ("part1", "part2"):
            gb.add_notebook(nb_name, "demo")
            gb.add_grade_cell("q_tests", nb_name, "demo", max_score=2, cell_type="code")
        for student in ("ann", "bob", "cid"):
            gb.add_student(student)
        for student in ("ann", "bob"):
            gb.add_submission("demo", student)
        scores = {("ann", "part1"): (2, None), ("ann", "part2"): (0, 1.5),
                  ("bob", "part1"): (0, None), ("bob", "part2"): (2, None)}
        for (student, nb_name), (auto, manual) in scores.items():
            grade = gb.find_grade("q_tests", nb_name, "demo", student)
            grade.auto_score, grade.manual_score = auto, manual
        gb.db.commit()
    header, rows = question_scores.question_table("demo", url)
    assert header == ["student_id", "part1:q_tests", "part2:q_tests", "total", "max_total"]
    assert rows == [["ann", 2.0, 1.5, 3.5, 4.0], ["bob", 0.0, 2.0, 2.0, 4.0],
                    ["cid", None, None, None, 4.0]]
    assert question_scores.to_csv(header, rows).splitlines()[-1] == "cid,,,,4"
    with pytest.raises(KeyError):
        question_scores.question_table("nope", url)
    with pytest.raises(FileNotFoundError):
        question_scores.question_table("demo", f"sqlite:///{tmp_path}/missing.db")


@pytest.mark.slow
def test_round_trip_and_per_question_export_from_the_real_gradebook(tmp_path, proof_audits, proven_env):
    from grader.proof import ledger

    # one gradebook with every submission (stored or graded now), for the export
    rt = roundtrip.run(LAB, tmp_path, workers=1, stored=ledger.read(LAB), audit=proof_audits)
    assert not rt.problems, roundtrip_report.report(rt)
    out = tmp_path / "questions.csv"
    assert question_scores.main([LAB, "--grading-dir", str(tmp_path), "--out", str(out)]) == 0
    table = list(csv.DictReader(io.StringIO(out.read_text())))
    by_student = {row["student_id"]: row for row in table}
    assert set(by_student) == set(rt.graded)
    tests = [t for _, _, t, *_ in QUESTIONS]
    assert list(table[0]) == ["student_id"] + tests + ["total", "max_total"]
    top = sum(p for *_, p in QUESTIONS)
    for student, graded in rt.graded.items():
        row = by_student[student]
        for test_id in tests:
            assert float(row[test_id]) == graded.scores[test_id][0]
        assert float(row["total"]) == sum(s for s, _ in graded.scores.values())
        assert float(row["max_total"]) == top
    assert float(by_student["solution"]["total"]) == top
    assert float(by_student["untouched"]["total"]) == 0
    for k in range(len(mutants.rounds(LAB))):
        assert float(by_student[f"mutants{k}"]["total"]) == 0  # every question mutated every round


# What a learner who reads no lab can try: every letter, both bools, and for the numbers the usual
# guesses plus every value that the key itself uses (so "the most frequent numeric key" is tried).
BLIND_CONSTANTS = {
    str: ["A", "B", "C", "D"],
    bool: [True, False],
    "number": [0, 1, -1, 2, 3, 4, 5, 8, 10, 100],
}
BLIND_LIMIT = 0.30  # at most this share of the quiz's points for the best blind strategy


def _kind(value):
    return "number" if not isinstance(value, (bool, str)) else type(value)


def _options(number):
    """{letter: text} of a multiple-choice question's options, as the learner reads them."""
    cells = _cells(course.solution_path(LAB))
    [text] = [c.source for gid, c in cells.items()
              if gid.endswith("_text") and f"### Question {number} " in c.source]
    return dict(re.findall(r"^- \*\*([A-D])\*\* (.*)$", text, flags=re.MULTILINE))


def _by_length(number, pick):
    """The option a learner who reads only lengths picks: ``pick`` is max (longest) or min."""
    options = _options(number)
    return pick(options, key=lambda letter: len(options[letter]))


# Strategies for multiple choice that need no knowledge: always one letter, or an option's length.
LENGTH_STRATEGIES = {"longest option": max, "shortest option": min}


def _blind_scores(sources=None):
    """``{kind: (best points, its strategy)}``: the best blind strategy per question type (a
    constant, or for letters also the longest or shortest option), graded by the quiz's real test
    cells (visible and hidden), or by ``sources`` ``{tests id: source}``."""
    cells = _cells(course.solution_path(LAB))
    sources = sources or {t: cells[t].source for _, _, t, *_ in QUESTIONS}
    by_kind = {}
    for number, answer, tests, var, value, points in QUESTIONS:
        by_kind.setdefault(_kind(value), []).append((sources[tests], var, points, number))
    numeric_keys = [v for *_, v, _ in QUESTIONS if _kind(v) == "number"]
    best = {}
    for kind, questions in by_kind.items():
        candidates = list(dict.fromkeys(BLIND_CONSTANTS[kind] + (numeric_keys if kind == "number" else [])))
        scored = [(sum(p for src, var, p, _ in questions if _failure(src, var, guess) is None), guess)
                  for guess in candidates]
        if kind is str:
            scored += [(sum(p for src, var, p, n in questions if _failure(src, var, _by_length(n, pick)) is None), name)
                       for name, pick in LENGTH_STRATEGIES.items()]
        best[kind] = max(scored, key=lambda s: s[0])
    return best


def test_no_option_length_gives_the_answer_away():
    """Picking the longest (or the shortest) option scores at most one question above chance."""
    cells = _cells(course.solution_path(LAB))
    choices = [(n, cells[t].source, var) for n, _, t, var, v, _ in QUESTIONS if isinstance(v, str)]
    chance = len(choices) / 4
    for name, pick in LENGTH_STRATEGIES.items():
        right = [n for n, src, var in choices if _failure(src, var, _by_length(n, pick)) is None]
        assert len(right) <= chance + 1, f"the {name} is the answer to questions {right}"
    assert all(len(_options(n)) == 4 for n, *_ in choices)


def test_the_length_check_would_catch_a_key_that_is_always_the_longest(monkeypatch):
    """The length check can fail: with every keyed option padded to be the longest, as the quiz
    once had it for 8 of 14 questions, the longest option answers them all."""
    keyed = {n: v for n, _, _, _, v, _ in QUESTIONS if isinstance(v, str)}
    real = _options

    def padded(number):
        options = real(number)
        options[keyed[number]] += " " + "x" * 200
        return options

    monkeypatch.setitem(globals(), "_options", padded)
    cells = _cells(course.solution_path(LAB))
    right = [n for n, _, t, var, v, _ in QUESTIONS
             if isinstance(v, str) and _failure(cells[t].source, var, _by_length(n, max)) is None]
    assert len(right) == len(keyed) > len(keyed) / 4 + 1


def test_the_key_is_spread_over_letters_and_booleans():
    letters = [v for *_, v, _ in QUESTIONS if isinstance(v, str)]
    bools = [v for *_, v, _ in QUESTIONS if isinstance(v, bool)]
    for letter in "ABCD":
        assert letters.count(letter) <= 0.35 * len(letters), f"{letter} is keyed too often"
    assert 0.40 <= bools.count(True) / len(bools) <= 0.60, "true/false answers are not balanced"
    numbers = [v for *_, v, _ in QUESTIONS if _kind(v) == "number"]
    assert len(set(numbers)) == len(numbers), "two numeric questions share an answer"


def test_no_blind_strategy_scores_more_than_thirty_percent():
    """Answering one constant per question type (mixed per type) must not pass a learner who read
    nothing: the sum of the best constant for letters, for booleans and for numbers."""
    total = sum(p for *_, p in QUESTIONS)
    best = _blind_scores()
    blind = sum(points for points, _ in best.values())
    assert blind <= BLIND_LIMIT * total, f"blind strategy {best} scores {blind} of {total}"
    # the grader is what is measured: the key itself must score every point through the same path
    cells = _cells(course.solution_path(LAB))
    assert all(_failure(cells[t].source, var, v) is None for _, _, t, var, v, _ in QUESTIONS)


def test_the_blind_check_would_catch_a_biased_key():
    """The blind check can fail: keyed like the old quiz (every letter "B", every bool False, two
    numeric answers 0), the same computation finds a blind strategy above the limit."""
    cells = _cells(course.solution_path(LAB))
    biased = {}
    for number, answer, tests, var, value, points in QUESTIONS[:]:
        src = cells[tests].source
        if isinstance(value, str):
            src = src.replace(f'== "{value}"', '== "B"')
        elif isinstance(value, bool):
            src = src.replace(f"{var} is {value}", f"{var} is False")
        elif number in (8, 20):
            src = src.replace(f"({value})) < 1e-9", "(0)) < 1e-9")
        biased[tests] = src
    best = _blind_scores(biased)
    assert best[str] == (14, "B") and best[bool] == (9, False) and best["number"] == (4, 0)
    assert sum(p for p, _ in best.values()) > BLIND_LIMIT * sum(p for *_, p in QUESTIONS)



# The numeric answers the quiz keys, measured on Ray 2.58.0 (the quiz cites no other source for them).

def test_q10_elastic_total_resources_use_the_maximum_worker_count():
    from ray.train import ScalingConfig

    assert ScalingConfig(num_workers=(2, 5), resources_per_worker={"CPU": 3}).total_resources["CPU"] == 15


@pytest.mark.slow
def test_q05_q15_batches_per_rank_and_attempts_of_a_failing_run(train_cluster, tmp_path):
    """Q5: 600 samples, 3 workers, batch_size=20 -> 10 batches on every rank (the batch size is per
    worker, the samples are split). Q15: max_failures=2 and a bug on every attempt -> the training
    function starts 3 times before fit() raises."""
    import ray.train
    import torch
    from ray.train.torch import TorchTrainer, prepare_data_loader
    from torch.utils.data import DataLoader, TensorDataset

    def count_batches(config):
        import json
        import os

        loader = prepare_data_loader(DataLoader(TensorDataset(torch.arange(600.0)), batch_size=20, shuffle=True),
                                     move_to_device=False)
        counts = {"batches": sum(1 for _ in loader), "seen": sum(len(b[0]) for b in loader)}
        rank = ray.train.get_context().get_world_rank()
        with open(os.path.join(config["out"], f"rank{rank}.json"), "w") as f:
            json.dump(counts, f)

    counts = tmp_path / "counts"
    counts.mkdir()
    TorchTrainer(
        count_batches, train_loop_config={"out": str(counts)},
        scaling_config=ray.train.ScalingConfig(num_workers=3, resources_per_worker={"CPU": 0.5}),
        run_config=ray.train.RunConfig(name="q05", storage_path=str(tmp_path))).fit()
    per_rank = {p.stem: json.loads(p.read_text()) for p in counts.iterdir()}
    assert per_rank == {f"rank{r}": {"batches": 10, "seen": 200} for r in range(3)}

    starts = tmp_path / "starts"
    starts.mkdir()

    def buggy(config):
        import tempfile

        tempfile.NamedTemporaryFile(dir=config["starts"], delete=False).close()
        raise ValueError("a bug at step 5 of every attempt")

    with pytest.raises(ray.train.TrainingFailedError):
        TorchTrainer(buggy, train_loop_config={"starts": str(starts)},
                     scaling_config=ray.train.ScalingConfig(num_workers=1),
                     run_config=ray.train.RunConfig(name="q15", storage_path=str(tmp_path),
                                                    failure_config=ray.train.FailureConfig(max_failures=2))).fit()
    assert len(list(starts.iterdir())) == 3
