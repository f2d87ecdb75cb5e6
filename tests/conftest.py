import os
import sys

import pytest
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `grader` is a folder of the repository, not an installed package
    sys.path.insert(0, str(ROOT))

# --- two test processes at once (`make test`: pytest-xdist, -n 2 --dist loadgroup) -----------------
# The round trips keep both cores busy; most other tests mostly wait (Ray start-ups, time-outs,
# hubs), so two processes finish the suite sooner than one. Each worker:
# - grades one submission at a time in a round trip (two workers already run two);
# - leases sandbox uids from its own range, so a test that looks for leftover sandbox processes
#   sees only its own worker's (grader/isolation.py reads RAYLAB_SANDBOX_UID_BASE on import).
XDIST_WORKER = os.environ.get("PYTEST_XDIST_WORKER")
if XDIST_WORKER:
    os.environ.setdefault("RAYLAB_ROUNDTRIP_WORKERS", "1")
    os.environ.setdefault("RAYLAB_SANDBOX_UID_BASE", str(610000 + 4096 * (1 + int(XDIST_WORKER[2:] or 0))))

# Groups a worker runs whole, heaviest first (seconds on 2 cores, make test of 4 Dec 2026; a
# module not named here weighs 1): a module's tests stay together (their module-scoped clusters
# start once), each round trip is a group of its own, and lab 00's goes with the class grader's
# tests, which compare their grades with it.
GROUP_WEIGHTS = {"roundtrip-01": 480, "roundtrip-09": 440, "roundtrip-04": 340, "roundtrip-02": 280,
                 "roundtrip-06": 250, "roundtrip-03": 240, "tests/grader/test_classgrade.py": 430,
                 "roundtrip-05": 200, "roundtrip-07": 180, "roundtrip-08": 160,
                 "tests/grader/test_grading_attacks.py": 280, "tests/claims/test_claims_fixes_02_06_07.py": 240,
                 "tests/claims/test_claims_fixes_03_05_08.py": 140, "tests/workshop/test_workshop_browser.py": 200,
                 "tests/helpers/test_ray_auth.py": 100, "tests/labs/test_quiz.py": 75,
                 "tests/claims/test_claims_tune.py": 85, "tests/claims/test_claims_checkpoints_failures.py": 75,
                 "tests/labs/test_browser.py": 90, "tests/workshop/test_workshop_hub.py": 60}


def _group(item) -> str:
    module = item.nodeid.split("::")[0]
    if module == "tests/grader/test_autograde_roundtrip.py":
        lab = item.callspec.params["lab"][:2]
        return "tests/grader/test_classgrade.py" if lab == "00" else f"roundtrip-{lab}"
    return module


@pytest.hookimpl(tryfirst=True)  # before xdist tags each test id with its group
def pytest_collection_modifyitems(config, items):
    """In an xdist worker: every test in its group (see GROUP_WEIGHTS), groups in order of weight
    (the scheduler hands out groups in collection order; --no-loadscope-reorder keeps it)."""
    if not XDIST_WORKER:
        return
    order = {}
    for item in items:
        order.setdefault(_group(item), len(order))
        item.add_marker(pytest.mark.xdist_group(_group(item)))
    items.sort(key=lambda item: (-GROUP_WEIGHTS.get(_group(item), 1), order[_group(item)]))


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

    from raylab.cluster import kill_processes

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


@pytest.fixture(scope="session")
def round_trips(tmp_path_factory):
    """``round_trips(lab)``: the lab's round trip (grader.roundtrip.run), run once per test session
    and shared by the tests that read it (the round-trip test, the class-grader comparison)."""
    from grader import roundtrip

    done = {}

    def get(lab):
        if lab not in done:
            done[lab] = roundtrip.run(lab, tmp_path_factory.mktemp(f"roundtrip-{lab}"))
        return done[lab]

    return get
