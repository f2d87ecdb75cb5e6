import sys

import pytest
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `grader` is a folder of the repository, not an installed package
    sys.path.insert(0, str(ROOT))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """Fail the test that leaves Ray initialised in the pytest process, and shut Ray down, so a leak
    is reported where it happens instead of in whichever later test counts Ray processes. Runs after
    the fixtures of the test are finalised (module fixtures too, when the module ends)."""
    outcome = yield
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        ray.shutdown()
        raise AssertionError(f"{item.nodeid} (or a fixture it used) left Ray initialised: a cluster "
                             "started implicitly or never stopped; it has been shut down")
