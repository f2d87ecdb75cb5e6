import contextlib
import os
import re
import sys

import pytest
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# --- two test processes at once (`make test`: pytest-xdist, -n 2 --dist loadscope) -----------------
# The round trips keep both cores busy; most other tests mostly wait (Ray start-ups, time-outs,
# hubs), so two processes finish the suite sooner than one. Each worker:
# - grades one submission at a time in a round trip (two workers already run two);
# - leases sandbox uids from its own range, so a test that looks for leftover sandbox processes
#   sees only its own worker's (grader/grading/isolation.py reads RAYLAB_SANDBOX_UID_BASE on import).
XDIST_WORKER = os.environ.get("PYTEST_XDIST_WORKER")
if XDIST_WORKER:
    os.environ.setdefault("RAYLAB_ROUNDTRIP_WORKERS", "1")
    os.environ.setdefault("RAYLAB_SANDBOX_UID_BASE", str(610000 + 4096 * (1 + int(XDIST_WORKER[2:] or 0))))

# Groups a worker runs whole, heaviest first (seconds in a fresh-clone make test on 2 cores on a
# slow phase of the host, 5 Dec 2026 18:14; a group not named here weighs 1): a module's tests stay
# together (their module-scoped clusters and hubs start once), each round trip is a group of its
# own, weighed by the gradings the proof plan expects it to run (:func:`group_weights`), lab 00's
# goes with the class grader's tests (which compare their grades with it), and the two modules
# that start a workshop hub never run at once (each closes and later restores the clone's
# permissions).
GROUP_WEIGHTS = {"tests/grader/test_classgrade.py": 950, "tests/grader/test_grading_attacks.py": 357,
                 "tests/claims/test_claims_fixes_02_06_07.py": 262,
                 "tests/claims/test_claims_fixes_03_05_08.py": 255,
                 "tests/labs/test_quiz.py": 20, "tests/claims/test_claims_tune.py": 152,
                 "workshop-hub": 150, "tests/labs/test_browser.py": 140,
                 "tests/claims/test_claims_checkpoints_failures.py": 133, "tests/helpers/test_ray_auth.py": 111,
                 "tests/labs/test_ddp_lab.py": 101, "tests/claims/test_claims_ops.py": 84,
                 "tests/claims/test_claims_setup.py": 80, "tests/claims/test_claims_fixes_01_04.py": 79,
                 "tests/helpers/test_separate_nodes.py": 78, "tests/helpers/test_running_example.py": 76,
                 "tests/claims/test_claims_train_v2.py": 71, "tests/claims/test_claims_storage_nodes.py": 57,
                 "tests/helpers/test_run_view.py": 51}
# The proof plan `make test` writes first (python -m grader.proof check): the audits of this run
# and the seconds each lab's round trip is expected to grade.
PROOF_PLAN = os.environ.get("RAYLAB_PROOF_PLAN")
# Seconds a round trip spends besides grading (generating its templates, keying its gradings).
ROUND_TRIP_SETUP_S = 15


def proof_plan() -> dict:
    from grader.proof import plan

    return plan.read(Path(PROOF_PLAN)) if PROOF_PLAN else {}


def group_weights(plans: dict) -> dict:
    """GROUP_WEIGHTS with each round trip's added from the proof plan: what it will grade, as the
    ledger timed it (a lab the plan does not know weighs as much as grading all of it might)."""
    from grader.grading import course
    from grader.proof.plan import MODULES

    weights = dict(GROUP_WEIGHTS)
    for lab, p in plans.items():
        if lab == MODULES:
            continue
        group = group_of(f"{ROUND_TRIP_MODULE}::t[{lab}]") if lab != "10_quiz" else "tests/labs/test_quiz.py"
        weights[group] = weights.get(group, 0) + ROUND_TRIP_SETUP_S + p.cost()
    for lab in course.labs():
        weights.setdefault(f"roundtrip-{lab[:2]}", 600)
    return weights


ROUND_TRIP_MODULE = "tests/grader/test_autograde_roundtrip.py"
HUB_MODULES = {"tests/workshop/test_workshop_hub.py", "tests/workshop/test_workshop_browser.py"}
ROUND_TRIP_LAB = re.compile(r"\[(\d\d)_[^\]]*\]$")


def group_of(nodeid: str) -> str:
    """The group a test runs in (see GROUP_WEIGHTS), from its node id alone: the xdist scheduler
    sees only ids."""
    module = nodeid.split("::")[0]
    if module == ROUND_TRIP_MODULE:
        lab = ROUND_TRIP_LAB.search(nodeid).group(1)
        return "tests/grader/test_classgrade.py" if lab == "00" else f"roundtrip-{lab}"
    return "workshop-hub" if module in HUB_MODULES else module


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Leave out the heavy test modules the proof plan finds proven (:func:`leave_out_proven`);
    in an xdist worker, order the rest by group (:func:`order_by_group`)."""
    leave_out_proven(config, items)
    if XDIST_WORKER:
        order_by_group(items)


def leave_out_proven(config, items):
    """Deselect the heavy test modules whose key the ledger holds for this tree
    (``grader/proof/suites.py``) and that this run does not audit. Without a plan (a plain
    ``pytest``) every module runs."""
    from grader.proof import plan

    cached = plan.cached_modules(proof_plan())
    left_out = [item for item in items if item.nodeid.split("::")[0] in cached]
    if left_out:
        items[:] = [item for item in items if item.nodeid.split("::")[0] not in cached]
        config.hook.pytest_deselected(items=left_out)


def pytest_terminal_summary(terminalreporter, config):
    """Say which modules the run left out as proven (the xdist controller collects nothing itself)."""
    from grader.proof import plan

    proven = sorted(plan.cached_modules(proof_plan()))
    if proven:
        terminalreporter.write_line(f"left out, proven for this tree by ledger/tests.json: {len(proven)} modules "
                                    f"({', '.join(proven)})")


def order_by_group(items):
    """Groups in order of weight, each group's tests together (the scheduler hands out groups
    in collection order; --no-loadscope-reorder keeps it)."""
    groups = {item.nodeid: group_of(item.nodeid) for item in items}
    weights = group_weights(proof_plan())
    order = {}
    for group in groups.values():
        order.setdefault(group, len(order))
    items.sort(key=lambda item: (-weights.get(groups[item.nodeid], 1), order[groups[item.nodeid]]))


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    """xdist's load-scope scheduler with :func:`group_of` as the scope. (xdist 3.8's own
    ``--dist loadgroup`` tags node ids through ``Item._nodeid``, which pytest 9 no longer reads,
    so its groups were silently ignored and a module's tests were split between workers.)"""
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid)

    return GroupScheduling(config, log)


RAY_PROCESS_NAMES = ("gcs_server", "raylet", "ray::", "monitor.py", "dashboard.py", "log_monitor.py")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """When a test module ends, fail if it left Ray initialised in the pytest process or left Ray
    processes behind (a refused ``ray.init`` leaves a half-started head, for instance), and clean
    up, so the leak is reported where it happened instead of by whichever later test counts Ray
    processes. Checked at module ends because module-scoped fixtures keep a cluster between tests."""
    yield
    if nextitem is not None and nextitem.path == item.path:
        return
    import psutil

    from raylab.processes import kill_processes

    problems = []
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        ray.shutdown()
        problems.append("Ray is still initialised")
    left = []
    for proc in psutil.Process().children(recursive=True):
        try:
            text = " ".join(proc.cmdline()) or proc.name()
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
        if any(name in text for name in RAY_PROCESS_NAMES):
            left.append(proc)
            problems.append(f"Ray process {proc.pid} left running: {text[:120]}")
    kill_processes(left)
    if problems:
        raise AssertionError(f"{item.path.name} (last test: {item.name}) leaked Ray; cleaned up now:\n  "
                             + "\n  ".join(problems))


# Bounds for every Train run of a claim-test module (Ray Train forwards RAY_TRAIN_* variables to
# its actors), so a stalled run fails instead of hanging.
BOUNDED_TRAIN_ENV = {"RAY_TRAIN_COLLECTIVE_TIMEOUT_S": "60", "RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S": "30"}


@pytest.fixture(scope="module")
def train_cluster():
    """The course cluster for one test module, with BOUNDED_TRAIN_ENV set while it lives; no Ray
    process may be left when it stops."""
    import raylab

    with pytest.MonkeyPatch.context() as mp:
        for key, value in BOUNDED_TRAIN_ENV.items():
            mp.setenv(key, value)
        raylab.start_cluster(quiet=False, log_to_driver=False)
        try:
            yield
        finally:
            left = raylab.stop_cluster()
        assert left == [], f"Ray processes left: {left}"


@contextlib.contextmanager
def proven_environment():
    """The environment ``make prove`` grades in, for a round trip inside the test process: no
    RAY_TRAIN_* variable. A learner's kernel inherits those (grader.grading.isolation.PASSED_PREFIXES),
    so they are part of every grading's key, and an earlier test's course cluster leaves three in
    this process (raylab.start_cluster sets them for its Ray processes); with them the keys would
    not be the ledger's and every grading would run again."""
    with pytest.MonkeyPatch.context() as mp:
        for name in [k for k in os.environ if k.startswith("RAY_TRAIN_")]:
            mp.delenv(name)
        yield


@pytest.fixture
def proven_env():
    """:func:`proven_environment` for one test."""
    with proven_environment():
        yield


@pytest.fixture(scope="session")
def proof_audits() -> frozenset:
    """The stored gradings this run grades again (the plan's audits; none without a plan)."""
    return frozenset(key for p in proof_plan().values() for key in p.audits)


@pytest.fixture(scope="session")
def round_trips(tmp_path_factory, proof_audits):
    """``round_trips(lab)``: the lab's round trip (grader.proof.roundtrip.run) at full depth, every
    mutant and right answer, run once per test session and shared by the tests that read it (the
    round-trip test, the class-grader comparison). A grading whose key the ledger holds is taken
    from it; the rest, and this run's audits, are graded now."""
    from grader.proof import ledger, roundtrip

    done = {}

    def get(lab):
        if lab not in done:
            with proven_environment():
                done[lab] = roundtrip.run(lab, tmp_path_factory.mktemp(f"roundtrip-{lab}"),
                                          stored=ledger.read(lab), audit=proof_audits)
        return done[lab]

    return get


@pytest.fixture
def probe_watch(tmp_path):
    """Run a script in a fresh Python with the capstone probe watching the running example's
    training split (as the capstone's check sets it up); return the JSON of its last line."""
    import json
    import subprocess

    from raylab import running_example
    from raylab.checks import capstone_probe

    splits = running_example.write_splits(tmp_path / "data")
    env = dict(os.environ, **{capstone_probe.PROBE_DIR_VAR: str(tmp_path / "probe"),
                              capstone_probe.TRAIN_SPLIT_VAR: str(splits["train"])})

    def run(source: str) -> dict:
        out = subprocess.run([sys.executable, "-c", source], env=env, capture_output=True, text=True,
                             timeout=120)
        assert out.returncode == 0, out.stderr[-2000:]
        return json.loads(out.stdout.strip().splitlines()[-1])

    return run
