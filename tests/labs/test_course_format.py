"""Static checks of the course sources: nbgrader metadata, claim tags, mutants, learner copies.

A lab in progress (grader.authoring.lab_status) is checked as a draft: its learner copy is the one nbgrader
generates from it now, into a scratch folder, since it is not released; only what a finished lab
has (a committed learner copy, a `make bench` row) is not required of it.
"""
import ast
import json
import re
from pathlib import Path

import nbformat
import pytest

from grader.authoring import lab_status, lab_time, text as authoring
from grader.grading import course
from grader.proof import mutants

LABS = course.labs()
CLAIM_TAG = re.compile(r"^claim:C(\d\d)$")
PUBLISHED = Path(course.ROOT / "grader" / "published_grade_ids.json")


def _nb(path):
    return nbformat.read(path, as_version=4)


def _meta(cell):
    return cell.metadata.get("nbgrader", {})


@pytest.fixture(scope="module")
def learner_copy(tmp_path_factory):
    """lab -> its learner notebook: notebooks/<lab> for a finished lab; for a lab in progress, the
    copy nbgrader generates from its source now (once per lab), so a draft is checked all the same."""
    drafts = {}

    def path(lab):
        if not lab_status.in_progress(lab):
            return course.release_path(lab)
        if lab not in drafts:
            base = tmp_path_factory.mktemp(f"draft-{lab}")
            run = course.generate(lab, base / "grading", release_dir=base / "release")
            assert run.returncode == 0, run.output[-2000:]
            drafts[lab] = base / "release" / lab / f"{lab}.ipynb"
        return drafts[lab]

    return path


def test_course_has_labs_in_order():
    assert LABS and LABS[0] == "00_lab_setup"
    assert all(re.fullmatch(r"\d\d_[a-z0-9_]+", lab) for lab in LABS)


@pytest.mark.parametrize("lab", LABS)
def test_solution_notebook_metadata(lab):
    nb = _nb(course.solution_path(lab))
    nbformat.validate(nb)
    ids = []
    for cell in nb.cells:
        meta = _meta(cell)
        assert meta, f"every cell carries nbgrader metadata (cell {cell.get('id')})"
        authoring.cell_kind(cell)  # one of the kinds the course uses
        assert meta["schema_version"] == 3
        ids.append(meta["grade_id"])
        if cell.cell_type == "code":
            assert not cell.outputs and cell.execution_count is None, f"{meta['grade_id']}: outputs committed"
        if meta.get("grade"):
            assert meta["points"] > 0
        src = cell.source
        if meta.get("solution") and cell.cell_type == "code":
            assert "### BEGIN SOLUTION" in src and "### END SOLUTION" in src, meta["grade_id"]
        if "### BEGIN HIDDEN TESTS" in src:
            assert meta.get("grade") and "### END HIDDEN TESTS" in src
        for tag in cell.metadata.get("tags", []):
            assert CLAIM_TAG.match(tag), f"{meta['grade_id']}: unknown tag {tag!r}"
    assert len(ids) == len(set(ids)), "grade_ids must be unique"
    assert any(_meta(c).get("grade") and c.cell_type == "code" for c in nb.cells), "no autograded cell"
    first, last = nb.cells[0], nb.cells[-1]
    assert first.cell_type == "markdown" and first.source.startswith(f"# {lab[:2]}")
    assert any("raylab.setup(" in c.source for c in nb.cells if c.cell_type == "code")
    assert "raylab.teardown()" in last.source, "the last cell stops Ray"


def test_grade_ids_are_unique_across_the_course():
    seen = {}
    for lab in LABS:
        for cell in _nb(course.solution_path(lab)).cells:
            gid = _meta(cell)["grade_id"]
            assert gid not in seen, f"{gid} used in {seen.get(gid)} and {lab}"
            seen[gid] = lab


def test_published_grade_ids_still_exist():
    """A released grade_id never disappears: gradebooks and the Japanese edition refer to it."""
    published = json.loads(PUBLISHED.read_text())
    for lab, ids in published.items():
        assert lab in LABS, f"published lab {lab} is gone"
        current = {_meta(c)["grade_id"] for c in _nb(course.solution_path(lab)).cells}
        missing = sorted(set(ids) - current)
        assert not missing, f"{lab}: published grade_ids removed or renamed: {missing}"


@pytest.mark.parametrize("lab", LABS)
def test_text_form_round_trips(lab):
    nb = _nb(course.solution_path(lab))
    again = authoring.from_text(authoring.to_text(nb))
    strip = lambda n: [(c.cell_type, c.source, c.metadata) for c in n.cells]  # noqa: E731
    assert strip(again) == strip(nb)


def test_labs_in_progress_are_not_released_or_published():
    """A draft never reaches learners: no learner folder, no published grade ids."""
    published = json.loads(PUBLISHED.read_text())
    for lab in lab_status.labs_in_progress():
        assert not course.release_path(lab).parent.exists(), f"{lab} is in progress but in notebooks/"
        assert lab not in published, f"{lab} is in progress but its grade ids are published"


@pytest.mark.parametrize("lab", LABS)
def test_learner_notebook_has_no_solutions_hidden_tests_or_outputs(lab, learner_copy):
    path = learner_copy(lab)
    assert path.exists(), f"run `make release`: {path} is missing"
    nb = _nb(path)
    for cell in nb.cells:
        assert "BEGIN SOLUTION" not in cell.source and "HIDDEN TESTS" not in cell.source
        if cell.cell_type == "code":
            assert not cell.outputs and cell.execution_count is None


@pytest.mark.parametrize("lab", LABS)
def test_every_exercise_has_at_least_two_named_mutants_that_apply(lab):
    nb = _nb(course.solution_path(lab))
    answers = {_meta(c)["grade_id"] for c in nb.cells if _meta(c).get("solution") and c.cell_type == "code"}
    tests = {_meta(c)["grade_id"] for c in nb.cells if _meta(c).get("grade") and c.cell_type == "code"}
    exercises = mutants.load(lab)
    assert set(exercises) == answers, "every answer cell needs an entry in solutions/<lab>/mutants.yaml"
    covered = set()
    sources = mutants.answer_sources(lab)
    for answer, ex in exercises.items():
        assert ex.tests and set(ex.tests) <= tests
        covered |= set(ex.tests)
        assert len(ex.mutants) >= 2, f"{answer}: at least two mutants"
        names = [m.name for m in ex.variants]  # wrong answers, then right ones that differ
        assert len(names) == len(set(names))
        for m in ex.variants:
            assert re.fullmatch(r"[a-z][a-z0-9_]+", m.name) and len(m.name) > 8, m.name
            assert mutants.apply(sources[answer], m) != sources[answer]
            compile(_without_magics(mutants.apply(sources[answer], m)), m.name, "exec")  # still Python
    assert covered == tests, f"test cells not linked to an exercise: {tests - covered}"


def _without_magics(source: str) -> str:
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())


def _defined_names(source):
    tree = ast.parse(source)
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                names |= {n.id for n in ast.walk(t) if isinstance(n, ast.Name)}
    return names


def _used_names(source):
    return {n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name)}


@pytest.mark.parametrize("lab", LABS)
def test_exercises_are_independent(lab):
    """One autograde run checks one mutant of every exercise at once (grader/proof/mutants.py). That is
    only sound if no exercise's cells use names that another exercise's answer cell defines."""
    exercises = mutants.load(lab)
    nb = _nb(course.solution_path(lab))
    by_id = {_meta(c)["grade_id"]: c for c in nb.cells}
    defined = {a: _defined_names(mutants.strip_solution_markers(by_id[a].source)) for a in exercises}
    for answer, ex in exercises.items():
        own = [mutants.strip_solution_markers(by_id[answer].source)] + [by_id[t].source for t in ex.tests]
        used = set().union(*(_used_names(s) for s in own))
        for other, names in defined.items():
            if other == answer:
                continue
            shared = (used & names) - defined[answer] - {"ray", "os", "torch", "np", "raylab", "time",
                                                          "tempfile", "json", "Path", "math", "platform"}
            assert not shared, f"{answer} uses {sorted(shared)} defined by {other}"


# The header line every lab states (issue 16): the learner's time and the machine's, both numbers.
TIME_LINE = re.compile(
    r"^\*\*Your time:\*\* about (\d+(?:\.\d+)?) (?:minutes|hours?) \(reading and exercises\)\. "
    r"\*\*Machine time:\*\* about (\d+(?:\.\d+)?) (?:s|minutes?) on 2 CPU cores\.$", re.MULTILINE)
CLAIM_ID = re.compile(r"\bC\d{2}\b")
AUTHORS_WORDS = re.compile(r"claims you will check|\bchapters?\b", re.IGNORECASE)


def _learner_markdown(path):
    return [c for c in _nb(path).cells if c.cell_type == "markdown"]


@pytest.mark.parametrize("lab", LABS)
def test_learner_header_states_learner_time_and_machine_time(lab, learner_copy):
    first = _learner_markdown(learner_copy(lab))[0]
    found = TIME_LINE.search(first.source)
    assert found, (f"{lab}: the first markdown cell needs one line like '**Your time:** about 40 "
                   "minutes (reading and exercises). **Machine time:** about 15 s on 2 CPU cores.'")
    assert float(found.group(1)) > 0 and float(found.group(2)) > 0


def header_matches_measurement(stated_s: float, measured_s: float) -> bool:
    """A header's "about N s" is honest when it is within 20 % (at least 3 s) of the measurement."""
    return abs(stated_s - measured_s) <= max(3.0, 0.2 * measured_s)


@pytest.mark.parametrize("lab", LABS)
def test_header_machine_time_agrees_with_the_measured_learner_run(lab):
    """The machine time a learner is promised is the one `make bench` measured (docs/workshop.md);
    refill the table and the headers together."""
    if lab_status.in_progress(lab):
        pytest.skip(f"{lab} is in progress: benched before it is finished")
    measured = lab_time.machine_seconds()
    assert lab in measured, f"docs/workshop.md's per-lab table has no row for {lab}"
    found = TIME_LINE.search(_learner_markdown(course.release_path(lab))[0].source)
    assert found and found.group(0).endswith(" s on 2 CPU cores."), f"{lab}: state the machine time in seconds"
    stated = float(found.group(2))
    assert header_matches_measurement(stated, measured[lab]), \
        f"{lab}: the header says about {stated:g} s, make bench measured {measured[lab]:g} s"


def test_machine_time_check_can_fail():
    table = ("| lab | learner run (s) | grading run (s) |\n|---|---:|---:|\n"
             "| `07_train_tune_integration` | 46.3 | 30.8 |\n| `10_quiz` | 1.3 | 1.6 |\n")
    assert lab_time.measured_learner_seconds(table) == {"07_train_tune_integration": 46.3, "10_quiz": 1.3}
    assert not header_matches_measurement(35, 46.3) and header_matches_measurement(45, 46.3)
    assert header_matches_measurement(2, 1.3) and not header_matches_measurement(10, 1.3)


@pytest.mark.parametrize("lab", LABS)
def test_header_learner_time_agrees_with_the_estimate_of_what_the_lab_asks(lab):
    """The learner's time is the newcomer-paced estimate of the lab's reading, demo code, exercises
    and machine time (grader/authoring/lab_time.py); refill the header when the lab grows."""
    if lab_status.in_progress(lab):
        pytest.skip(f"{lab} is in progress: timed before it is finished")
    found = TIME_LINE.search(_learner_markdown(course.release_path(lab))[0].source)
    assert found and " minutes " in found.group(0), f"{lab}: state the learner's time in minutes"
    nb = nbformat.read(course.solution_path(lab), as_version=4)
    estimate = lab_time.estimate_minutes(nb, lab_time.machine_seconds().get(lab, 0.0), quiz=lab == lab_time.QUIZ)
    assert lab_time.agrees(float(found.group(1)), estimate), \
        f"{lab}: the header says about {found.group(1)} minutes; the estimate is {estimate:.0f} " \
        f"(state {lab_time.header_minutes(estimate)})"


def test_the_learner_time_estimate_grows_with_what_a_lab_asks_and_its_check_can_fail():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(" ".join(["word"] * 300))]
    assert lab_time.estimate_minutes(nb, 0) == pytest.approx(2.0)
    answer = nbformat.v4.new_code_cell("def f():\n    ### BEGIN SOLUTION\n    # a comment\n    return 1\n"
                                       "    ### END SOLUTION\n")
    answer.metadata["nbgrader"] = {"solution": True, "grade_id": "f_answer"}
    nb.cells.append(answer)
    assert lab_time.estimate_minutes(nb, 30) == pytest.approx(2.0 + 10 + 0.5 + 1.0)
    answer.metadata["nbgrader"]["grade_id"] = "capstone_script_answer"  # written from an empty file
    assert lab_time.estimate_minutes(nb, 30) == pytest.approx(2.0 + 10 + 1.0 + 1.0)
    assert lab_time.agrees(110, 100) and not lab_time.agrees(75, 100) and lab_time.header_minutes(101) == 105


def _last_visible_statement(source: str):
    from grader.authoring import cell_messages

    body = ast.parse(cell_messages.visible(source)).body
    body = [node for node in body if not isinstance(node, ast.Pass)]  # a hidden block left a pass
    return body[-1] if body else None


def ends_with_checked(source: str) -> bool:
    """Whether a test cell's visible part ends by saying what it verified: ``checked("...")``."""
    last = _last_visible_statement(source)
    return (isinstance(last, ast.Expr) and isinstance(last.value, ast.Call)
            and isinstance(last.value.func, ast.Name) and last.value.func.id == "checked")


@pytest.mark.parametrize("lab", [lab for lab in LABS if lab != "10_quiz"])  # the quiz checks only the form
def test_every_visible_test_cell_ends_by_saying_what_it_verified(lab):
    nb = nbformat.read(course.solution_path(lab), as_version=4)
    tests = [c for c in nb.cells if c.cell_type == "code" and _meta(c).get("grade") and not _meta(c).get("solution")]
    assert tests
    missing = [_meta(c).get("grade_id") for c in tests if not ends_with_checked(c.source)]
    assert missing == [], f"{lab}: end these test cells' visible part with checked('what it verified.'): {missing}"


def test_the_summary_line_check_can_fail():
    assert ends_with_checked('check(x, "m")\nchecked("x.")\n### BEGIN HIDDEN TESTS\ncheck(y, "h")\n### END HIDDEN TESTS\n')
    assert not ends_with_checked('checked("x.")\ncheck(x, "m")\n')
    assert not ends_with_checked('check(x, "m")\nprint("Checked: x.")\n')


@pytest.mark.parametrize("lab", LABS)
def test_learner_prose_has_no_claim_ids_or_authoring_words(lab, learner_copy):
    """Traceability (claim ids, the source it came from) lives in cell tags and grader/claims.yaml,
    never in what a learner reads."""
    for cell in _learner_markdown(learner_copy(lab)):
        gid = _meta(cell).get("grade_id", cell.get("id"))
        assert not CLAIM_ID.search(cell.source), f"{lab}/{gid}: claim id {CLAIM_ID.search(cell.source)[0]}"
        assert not AUTHORS_WORDS.search(cell.source), \
            f"{lab}/{gid}: {AUTHORS_WORDS.search(cell.source)[0]!r} in learner prose"


def test_learner_prose_checks_can_fail():
    """The two checks above reject what they are meant to reject."""
    assert TIME_LINE.search("# 00 · x\n\n**Your time:** about 40 minutes (reading and exercises). "
                            "**Machine time:** about 15 s on 2 CPU cores.\n")
    assert not TIME_LINE.search("**Time:** about 3 minutes on 2 CPU cores.")
    assert not TIME_LINE.search("**Your time:** about minutes (reading and exercises). "
                                "**Machine time:** about 15 s on 2 CPU cores.")
    assert CLAIM_ID.search("- **C05** the Trainer") and not CLAIM_ID.search("C100 or EC2 or C5")
    assert AUTHORS_WORDS.search("## Claims you will check") and AUTHORS_WORDS.search("the Chapter")


# The course's machinery, which a learner's copy must not show: a branch on how the notebook is run
# (graded or not), a path into the course's test suite, the grader's hidden tests.
MACHINERY = re.compile(r"\blab\.grading\b|grading_mode\(|NBGRADER_EXECUTION|\btests/\S+\.py|hidden tests?\b",
                       re.IGNORECASE)


@pytest.mark.parametrize("lab", LABS)
def test_learner_notebook_shows_no_grading_machinery(lab, learner_copy):
    """Every cell of the released notebook, code and prose: the learner runs one notebook, the same
    way the grader does, and reads no references to files they do not have."""
    for cell in _nb(learner_copy(lab)).cells:
        gid = _meta(cell).get("grade_id", cell.get("id"))
        found = MACHINERY.search(cell.source)
        assert not found, f"{lab}/{gid}: {found[0]!r} in the learner's notebook"


def test_machinery_check_can_fail():
    for shown in ("EPOCHS = 2 if lab.grading else 3", "if raylab.grading_mode():",
                  "os.environ.get('NBGRADER_EXECUTION')", "(`tests/claims/test_claims_tune.py`)",
                  "the hidden tests also pass stand-ins"):
        assert MACHINERY.search(shown), shown
    for fine in ("lab.run_storage('x')", "a hidden layer of 64 units", "tests that pass"):
        assert not MACHINERY.search(fine), fine


@pytest.mark.parametrize("lab", LABS)
def test_optional_deep_dives_open_collapsed_in_their_own_cell(lab, learner_copy):
    """A deep dive is a heading cell of its own that JupyterLab opens collapsed (the cells under it
    stay hidden until the learner expands it), so a first reading skips it."""
    for cell in _learner_markdown(learner_copy(lab)):
        if re.search(r"^#+ Optional deep dive", cell.source, re.MULTILINE | re.IGNORECASE):
            assert re.match(r"#+ Optional deep dive", cell.source, re.IGNORECASE), \
                f"{lab}: a deep dive heading inside another cell: {cell.source[:80]!r}"
            assert cell.metadata.get("jp-MarkdownHeadingCollapsed") is True, cell.source[:80]
