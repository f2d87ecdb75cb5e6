"""Each workshop learner's Ray cluster is their own (issue 17), with the environment the hub gives
every learner's server (grader.workshop.hub.user_environment): Ray's temp folder in the learner's
home, and Ray 2.58.0's token authentication with a token only that learner can read.

Two system users (rlw-<random>, removed after): learner A starts the course's cluster
(raylab.cluster.start_cluster) in their own temp folder; learner B, with their own token, is
refused by A's GCS; with A's token (a copy, the control) B passes the GCS's authentication, which
shows the refusal is the token's. Needs root."""
from __future__ import annotations

import json
import os
import pwd
import secrets
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from grader.workshop import accounts as workshop_accounts, state as workshop_state
from grader.workshop.hub import user_environment

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

if os.geteuid() != 0 or not shutil.which("useradd") or not shutil.which("runuser"):
    pytest.skip("needs root, useradd and runuser", allow_module_level=True)

OWNER = r"""
import json, sys
from raylab.cluster import start_cluster
import ray
ctx = start_cluster(num_cpus=1)
node = ray._private.worker.global_worker.node
print(json.dumps({"gcs": ctx.address_info["gcs_address"], "session": node.get_session_dir_path()}), flush=True)
sys.stdin.readline()
ray.shutdown()
"""

OTHER = r"""
import json, sys
import ray
try:
    ray.init(address=sys.argv[1], log_to_driver=False)
    print(json.dumps({"joined": True, "ran": ray.get(ray.remote(lambda: 41 + 1).remote(), timeout=60)}))
except Exception as exc:
    print(json.dumps({"joined": False, "error": f"{type(exc).__name__}: {str(exc)[:300]}"}))
"""


def test_another_learner_cannot_submit_work_to_a_learners_ray_cluster():
    try:  # the learners' Python runs the course from this clone
        workshop_state.require_clone_reachable()
    except SystemExit as exc:
        pytest.fail(str(exc))
    tag = secrets.token_hex(3)
    owner, other = f"rlw-{tag}r", f"rlw-{tag}s"
    state = workshop_state.State(Path(tempfile.mkdtemp(prefix="rlw-ray-", dir="/tmp")))
    os.chmod(state.root, 0o755)
    proc = None
    try:
        for name in (owner, other):
            subprocess.run(["useradd", "--create-home", name], check=True, timeout=60, capture_output=True)
            os.chmod(pwd.getpwnam(name).pw_dir, 0o700)
        settings = {"venv_prefix": sys.prefix, "python": str(workshop_state.learner_python(state)),
                    "instructors": [], "learner_config": str(state.root), "instructor_config": str(state.root)}

        def run_as(name, code, *args, token=None, **kw):
            env = {**user_environment(name, settings), "HOME": pwd.getpwnam(name).pw_dir,
                   "USER": name, "LOGNAME": name}
            if token:
                env["RAY_AUTH_TOKEN_PATH"] = str(token)
            cmd = [shutil.which("runuser"), "-u", name, "--", settings["python"], "-c", code, *args]
            return cmd, env

        cmd, env = run_as(owner, OWNER)
        proc = subprocess.Popen(cmd, env=env, cwd="/", stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True)
        line = proc.stdout.readline()
        assert line, "the owner's cluster did not start"
        cluster = json.loads(line)
        owner_home = pwd.getpwnam(owner).pw_dir
        assert cluster["session"].startswith(f"{owner_home}/.raylab-tmp/ray/session_")

        def run(cmd, env):
            out = subprocess.run(cmd, env=env, cwd="/", capture_output=True, text=True, timeout=120)
            lines = out.stdout.strip().splitlines()
            return (json.loads(lines[-1]) if lines else None), out.stderr

        cmd, env = run_as(other, OTHER, cluster["gcs"])
        refused, log = run(cmd, env)
        assert refused is not None and refused["joined"] is False, (refused, log[-1500:])
        assert "token is missing or incorrect" in log, log[-1500:]

        # Control: the same learner with the owner's token (a copy they were handed) passes the
        # GCS's authentication ("Connected to Ray cluster"); Ray then cannot even open its driver
        # log in the owner's session folder (in the owner's 0700 home), a second wall.
        copy = Path(pwd.getpwnam(other).pw_dir) / ".ray" / "owner_token"
        shutil.copy(Path(owner_home) / ".ray" / "auth_token", copy)
        os.chown(copy, pwd.getpwnam(other).pw_uid, pwd.getpwnam(other).pw_gid)
        os.chmod(copy, 0o600)
        cmd, env = run_as(other, OTHER, cluster["gcs"], token=copy)
        joined, log = run(cmd, env)
        assert "Connected to Ray cluster" in log, log[-1500:]
        assert "token is missing or incorrect" not in log
        assert joined is None or joined.get("ran") in (None, 42)
    finally:
        if proc is not None:
            try:
                proc.stdin.write("\n")
                proc.stdin.flush()
                proc.wait(timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                proc.kill()
        from raylab.processes import kill_processes
        import psutil

        uids = {pwd.getpwnam(n).pw_uid for n in (owner, other) if workshop_accounts.user_exists(n)}
        kill_processes([p for p in psutil.process_iter(["uids"])
                        if p.info["uids"] and p.info["uids"].real in uids])
        for name in (owner, other):
            subprocess.run(["userdel", "--remove", name], capture_output=True, timeout=60)
        shutil.rmtree(state.root, ignore_errors=True)


OTHER_CLUSTER = r"""
import sys, ray
ray.init(address="local", num_cpus=1, include_dashboard=False, log_to_driver=False)
print("up", flush=True)
sys.stdin.readline()
"""

LOOKUP = r"""
import json, os
from raylab.cluster import start_cluster
import ray
from ray._private import services

ctx = start_cluster(num_cpus=1)

@ray.remote
def lookup(drop_address):
    # What Ray Train's placement-group cleaner does in its worker: find "the" cluster, no address given.
    if drop_address:
        os.environ.pop("RAY_ADDRESS", None)
    services.find_gcs_addresses.cache_clear()
    try:
        return services.canonicalize_bootstrap_address_or_die(None)
    except ConnectionError as exc:
        return "ConnectionError: " + str(exc)[:80]

print(json.dumps({"gcs": ctx.address_info["gcs_address"], "kernel_env": os.environ.get("RAY_ADDRESS"),
                  "found": ray.get(lookup.remote(False)), "without": ray.get(lookup.remote(True))}))
ray.shutdown()
"""


def test_a_clusters_own_processes_find_it_with_another_cluster_on_the_machine():
    """raylab.cluster gives the cluster's processes their own address (RAY_ADDRESS, only while
    ray.init starts them): with a second cluster on the machine, the lookup Ray Train's placement-
    group cleaner makes in its worker finds this cluster; without that variable (the control) it
    fails with "Found multiple active Ray instances", the traceback that reached notebooks late.
    The kernel's own environment keeps no RAY_ADDRESS."""
    env = dict(os.environ)
    env.pop("RAY_ADDRESS", None)
    other = subprocess.Popen([sys.executable, "-c", OTHER_CLUSTER], env=env, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert other.stdout.readline().strip() == "up"
        run = subprocess.run([sys.executable, "-c", LOOKUP], env=env, capture_output=True, text=True, timeout=240)
    finally:
        other.communicate("\n", timeout=60)
    assert run.returncode == 0, run.stderr[-2000:]
    seen = json.loads(run.stdout.strip().splitlines()[-1])
    port = seen["gcs"].rsplit(":", 1)[1]
    assert seen["found"].endswith(f":{port}"), seen
    assert seen["without"].startswith("ConnectionError: Found multiple active Ray instances"), seen
    assert seen["kernel_env"] is None, seen
