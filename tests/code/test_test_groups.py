"""make test runs two xdist workers; a group (a module, a lab's round trip, the hub modules) must
run whole in one worker, or its module-scoped clusters and hubs start twice and tests that build
on an earlier test of their module meet a fresh fixture. xdist's own --dist loadgroup silently
stopped grouping under pytest 9 (it tags ``Item._nodeid``), so this checks what really happens."""
import os
import re
import subprocess
import sys
from pathlib import Path

import conftest

ROOT = Path(__file__).resolve().parents[2]


def test_group_of_names_round_trips_hubs_and_modules():
    rt = "tests/grader/test_autograde_roundtrip.py::test_autograder_is_right_in_both_directions"
    assert conftest.group_of(f"{rt}[03_checkpoints_and_report]") == "roundtrip-03"
    assert conftest.group_of(f"{rt}[00_lab_setup]") == "tests/grader/test_classgrade.py"
    assert conftest.group_of("tests/grader/test_classgrade.py::test_x") == "tests/grader/test_classgrade.py"
    hub = {conftest.group_of(f"{m}::test_x") for m in conftest.HUB_MODULES}
    assert hub == {"workshop-hub"}
    assert conftest.group_of("tests/helpers/test_devices.py::test_x[a::b]") == "tests/helpers/test_devices.py"


def test_the_scheduler_make_test_gets_splits_by_group():
    from types import SimpleNamespace

    config = SimpleNamespace(getvalue=lambda name: ["2*popen"], option=SimpleNamespace(loadscopereorder=False))
    scheduler = conftest.pytest_xdist_make_scheduler(config, log=None)
    rt = "tests/grader/test_autograde_roundtrip.py::test_autograder_is_right_in_both_directions"
    assert scheduler._split_scope(f"{rt}[01_train_v2_responsibilities]") == "roundtrip-01"
    assert scheduler._split_scope("tests/workshop/test_workshop_browser.py::test_x") == "workshop-hub"


def test_make_tests_two_workers_keep_each_module_in_one_worker():
    """With the worker flags of `make test` (read from the Makefile)."""
    recipe = next(line for line in (ROOT / "Makefile").read_text().splitlines() if "-m pytest tests -n" in line)
    flags = recipe.split("-m pytest tests", 1)[1].split()
    modules = ["tests/helpers/test_devices.py", "tests/helpers/test_retry_budget.py",
               "tests/grader/test_roundtrip_rules.py"]
    out = subprocess.run([sys.executable, "-m", "pytest", *modules, *flags, "-v", "-p", "no:cacheprovider",
                          "-o", "addopts="], cwd=ROOT, capture_output=True, text=True, timeout=300,
                         # a plan of make test's own run would leave proven modules out of this one
                         env={k: v for k, v in os.environ.items()
                              if not k.startswith("PYTEST_XDIST") and k != "RAYLAB_PROOF_PLAN"})
    assert out.returncode == 0, out.stdout[-3000:]
    workers = {}
    for worker, module in re.findall(r"^\[(gw\d)\].*? (tests/[^:\s]+)::", out.stdout, re.M):
        workers.setdefault(module, set()).add(worker)
    assert set(workers) == set(modules), out.stdout[-3000:]
    assert all(len(w) == 1 for w in workers.values()), workers
