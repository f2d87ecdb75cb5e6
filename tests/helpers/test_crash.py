"""raylab.checks.crash.kill_when: the failure exercises' way to kill a process mid-run (fast)."""
import subprocess
import sys
import time

from raylab.checks.crash import kill_when


def _sleeper():
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])


def test_kills_the_victim_once_it_is_named_and_remembers_it():
    proc, calls = _sleeper(), []

    def find():
        calls.append(1)
        return {"pid": proc.pid, "group": 7} if len(calls) >= 3 else None

    with kill_when(find, interval_s=0.01) as crash:
        assert proc.wait(timeout=10) == -9  # SIGKILL
    assert crash.victim == {"pid": proc.pid, "group": 7}
    assert len(calls) == 3  # it stops watching after the kill


def test_nothing_named_nothing_killed():
    proc = _sleeper()
    try:
        with kill_when(lambda: None, interval_s=0.01) as crash:
            time.sleep(0.1)
        assert crash.victim == {} and proc.poll() is None
    finally:
        proc.kill()
        proc.wait()


def test_a_victim_that_already_ended_is_not_recorded():
    proc = _sleeper()
    proc.kill()
    proc.wait()
    with kill_when(lambda: {"pid": proc.pid}, interval_s=0.01) as crash:
        time.sleep(0.1)
    assert crash.victim == {}
