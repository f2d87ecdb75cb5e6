"""The heavy test modules' keys and ledger (grader/proof/suites.py): which modules are cached,
what each key covers, that a byte of an input changes the keys that read it and no other, that
make test leaves out a proven module and runs an audited one."""
import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from grader.proof import plan, suites

ROOT = Path(__file__).resolve().parents[2]


def test_the_cached_modules_are_the_heavy_ones_without_a_ledger_of_their_own():
    modules = suites.cached_modules()
    assert {"tests/grader/test_classgrade.py", "tests/grader/test_grading_attacks.py",
            "tests/claims/test_claims_tune.py", "tests/labs/test_browser.py",
            "tests/workshop/test_workshop_hub.py"} <= set(modules)
    assert not set(modules) & suites.NOT_CACHED
    assert "tests/grader/test_trim.py" not in modules  # no slow or browser test: always runs
    assert "tests/grader/test_proof_suites.py" not in modules


def test_a_module_s_key_covers_the_course_package_and_what_it_names():
    files = suites.tree_files()
    chosen = set(suites.module_inputs("tests/claims/test_claims_tune.py", files))
    assert {"tests/claims/test_claims_tune.py", "tests/conftest.py", "src/raylab/cluster.py", "requirements.txt",
            "requirements-dev.txt", "pyproject.toml"} <= chosen
    # it names no other part of the tree: not the grader, the labs, prose, the ledger or other tests
    assert not {f for f in chosen if f.startswith(("grader/", "solutions/", "notebooks/", "docs/", "ledger/",
                                                   "workshop/", "Makefile", "README"))}
    assert "tests/claims/test_claims_ops.py" not in chosen
    # a module that runs make targets gets what the Makefile's targets run
    ddp = set(suites.module_inputs("tests/labs/test_ddp_lab.py", files))
    assert {"Makefile", "scripts/gpu_check.py", "grader/grading/autograde.py"} <= ddp
    # a module that names the README keeps prose; one that reads round trips keeps the labs' ledger
    hints = set(suites.module_inputs("tests/helpers/test_hints.py", files))
    assert "README.md" in hints
    classgrade = set(suites.module_inputs("tests/grader/test_classgrade.py", files))
    assert "ledger/00_lab_setup.json" in classgrade and "ledger/tests.json" not in classgrade
    assert {"grader/grading/autograde.py", "solutions/00_lab_setup/00_lab_setup.ipynb"} <= classgrade


@pytest.fixture
def clone(tmp_path):
    """A git clone of this tree (committed files) with the working tree's own edits laid over it."""
    target = tmp_path / "course"
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(ROOT), str(target)], check=True, timeout=120)
    for f in suites.tree_files():
        dest = target / f
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / f, dest)
    return target


def _keys(root):
    return {m: p.key for m, p in suites.module_parts(root=root).items()}


def test_a_byte_of_an_input_changes_the_keys_that_read_it_and_no_other(clone):
    before = _keys(clone)
    with open(clone / "src" / "raylab" / "checks" / "common.py", "a") as fh:
        fh.write("\n")
    after = _keys(clone)
    assert {m for m in before if before[m] != after[m]} == set(before)  # everything reads raylab
    with open(clone / "tests" / "claims" / "test_claims_tune.py", "a") as fh:
        fh.write("\n")
    again = _keys(clone)
    assert {m for m in after if after[m] != again[m]} == {"tests/claims/test_claims_tune.py"}
    with open(clone / "docs" / "workshop.md", "a") as fh:
        fh.write("\nA new paragraph.\n")
    prose = _keys(clone)
    readers = {m for m in prose if "README" in (clone / m).read_text() or "docs/" in (clone / m).read_text()}
    assert {m for m in again if again[m] != prose[m]} == readers
    (clone / "grader" / "new_tool.py").write_text("X = 1\n")  # an untracked file counts as well
    files = suites.tree_files(clone)
    graders = {m for m in prose if "grader/new_tool.py" in suites.module_inputs(m, files, clone)}
    assert "tests/grader/test_classgrade.py" in graders and "tests/claims/test_claims_tune.py" not in graders
    assert {m for m in prose if prose[m] != _keys(clone)[m]} == graders


def test_the_environment_system_and_machine_are_parts_of_every_module_key():
    parts = next(iter(suites.module_parts(["tests/claims/test_claims_tune.py"]).values()))
    assert {f.name for f in dataclasses.fields(parts)} == {"module", "tree", "environment", "system", "machine", "schema"}
    for name in ("environment", "system", "machine", "schema"):
        assert dataclasses.replace(parts, **{name: "other" if name != "schema" else 99}).key != parts.key


def test_junit_outcomes_count_each_module_s_tests():
    xml = """<testsuites><testsuite>
      <testcase file="tests/a.py" name="t1" time="1.5"/>
      <testcase file="tests/a.py" name="t2" time="2.0"><skipped message="x"/></testcase>
      <testcase file="tests/b.py" name="t1" time="3.0"><failure message="boom"/></testcase>
      <testcase file="tests/b.py" name="t2" time="0.5"><error message="setup"/></testcase>
    </testsuite></testsuites>"""
    assert suites.outcomes(xml) == {"tests/a.py": {"tests": 2, "failed": 0, "skipped": 1, "seconds": 3.5},
                                    "tests/b.py": {"tests": 2, "failed": 2, "skipped": 0, "seconds": 3.5}}


def _run_with_plan(tmp_path, module, audits):
    key = "k" * 64
    p = plan.LabPlan(plan.MODULES, gradings={module: key}, audits={key: "rotation"} if audits else {})
    path = tmp_path / "plan.json"
    path.write_text(json.dumps({plan.MODULES: dataclasses.asdict(p)}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
    env["RAYLAB_PROOF_PLAN"] = str(path)
    return subprocess.run([sys.executable, "-m", "pytest", module, "-q", "-p", "no:cacheprovider", "-o", "addopts="],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300).stdout


def test_make_test_leaves_out_a_proven_module_and_runs_an_audited_one(tmp_path):
    module = "tests/grader/test_roundtrip_rules.py"
    left_out = _run_with_plan(tmp_path, module, audits=False)
    assert " deselected" in left_out and " passed" not in left_out, left_out[-2000:]
    assert f"proven for this tree by ledger/tests.json: 1 modules ({module})" in left_out
    audited = _run_with_plan(tmp_path, module, audits=True)
    assert " passed" in audited and "deselected" not in audited, audited[-2000:]
