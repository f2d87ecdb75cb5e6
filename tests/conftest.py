import sys

import pytest
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `grader` is a folder of the repository, not an installed package
    sys.path.insert(0, str(ROOT))


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
