"""Per-learner limits of the workshop hub (grader.workshop.limits, issue 17), measured on this
machine: a process started the way the hub starts a learner's server (the learner's group joined
and RLIMIT_NPROC lowered in ``preexec_fn``, then JupyterHub's own switch to the learner's uid)
cannot fork past its task limits, is killed past its memory limit and gets no more CPU time than
its quota. Needs root (a system user, cgroups); a limit this machine cannot enforce is skipped
with the reason the hub would log. A few seconds, no Ray."""
from __future__ import annotations

import json
import os
import pwd
import secrets
import shutil
import subprocess

import pytest

from grader.workshop.limits import LearnerGroup, Limits

if os.geteuid() != 0 or not shutil.which("useradd"):
    pytest.skip("per-learner limits need root (a system user, cgroups)", allow_module_level=True)

# The venv's interpreter may live where other users cannot run it (pyenv under /root); the probes
# need the standard library only.
PYTHON = next((p for p in ("/usr/bin/python3", "/usr/local/bin/python3") if os.access(p, os.X_OK)), None)
if PYTHON is None:
    pytest.skip("no system python3 for the learner's probe processes", allow_module_level=True)
MIB = 1024 ** 2
FORK_UNTIL_REFUSED = r"""
import json, os, signal, time
children, error = [], None
for _ in range(200):
    try:
        pid = os.fork()
    except OSError as exc:
        error = exc.strerror
        break
    if pid == 0:
        time.sleep(30)
        os._exit(0)
    children.append(pid)
for pid in children:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
print(json.dumps({"forked": len(children), "error": error, "uid": os.getuid(),
                  "cgroup": open("/proc/self/cgroup").read()}))
"""
ALLOCATE = "block = bytearray({size}); block[::4096] = b'x' * len(block[::4096]); print('allocated')"
SPIN = "import os, time\nend = time.time() + 2\nwhile time.time() < end: pass\nt = os.times(); print(t.user + t.system)"


@pytest.fixture(scope="module")
def learner():
    name = f"rlw-{secrets.token_hex(3)}l"
    subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name], check=True,
                   capture_output=True, timeout=60)
    yield name
    subprocess.run(["userdel", name], capture_output=True, timeout=60)


def _run_as(name: str, limits: Limits, code: str, timeout: int = 60):
    """Run ``code`` as the hub runs a learner's server: group, rlimit, then the uid switch."""
    from jupyterhub.spawner import set_user_setuid

    group = LearnerGroup(name, limits).create()
    try:
        result = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True,
                                timeout=timeout, cwd="/", preexec_fn=group.preexec(set_user_setuid(name, chdir=False)))
    finally:
        for folder in group.folders:
            try:
                folder.rmdir()
            except OSError:
                pass
    return group, result


def _need(group: LearnerGroup, controller: str):
    if controller not in group.held:
        pytest.skip(f"not enforced on this machine: {group.missing}")


def test_nproc_stops_a_fork_bomb_without_cgroups(learner):
    group, result = _run_as(learner, Limits(cpus=None, memory_bytes=None, tasks=None, nproc=12),
                            FORK_UNTIL_REFUSED)
    seen = json.loads(result.stdout)
    assert seen["uid"] == pwd.getpwnam(learner).pw_uid
    assert seen["error"] == "Resource temporarily unavailable" and seen["forked"] < 12, seen


def test_the_learners_group_caps_tasks(learner):
    group, result = _run_as(learner, Limits(cpus=None, memory_bytes=None, tasks=16, nproc=None),
                            FORK_UNTIL_REFUSED)
    _need(group, "pids")
    seen = json.loads(result.stdout)
    assert f"raylab-workshop-{learner}" in seen["cgroup"]
    assert seen["error"] == "Resource temporarily unavailable" and seen["forked"] < 16, seen
    # Not blind: without limits the same process forks all 200.
    _, free = _run_as(learner, Limits(cpus=None, memory_bytes=None, tasks=None, nproc=None),
                      FORK_UNTIL_REFUSED)
    assert json.loads(free.stdout)["forked"] == 200


def test_the_learners_group_caps_memory(learner):
    group, result = _run_as(learner, Limits(cpus=None, memory_bytes=200 * MIB, tasks=None, nproc=None),
                            ALLOCATE.format(size=400 * MIB))
    _need(group, "memory")
    assert result.returncode == -9 and "allocated" not in result.stdout, (result.returncode, result.stderr[-300:])
    _, free = _run_as(learner, Limits(cpus=None, memory_bytes=400 * MIB, tasks=None, nproc=None),
                      ALLOCATE.format(size=200 * MIB))
    assert free.returncode == 0 and "allocated" in free.stdout, free.stderr[-300:]


def test_the_learners_group_caps_cpu_time(learner):
    group, result = _run_as(learner, Limits(cpus=0.25, memory_bytes=None, tasks=None, nproc=None), SPIN)
    _need(group, "cpu")
    cpu_s = float(result.stdout)
    assert cpu_s < 2 * 0.25 * 1.3, cpu_s  # 2 s of spinning at a quarter of a core
