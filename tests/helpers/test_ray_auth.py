"""What Ray 2.58.0's token authentication (``RAY_AUTH_MODE=token``) protects, measured.

One local cluster is started with token authentication on, in a child process with its own home
folder (so ``ray.init`` writes the token to ``<home>/.ray/auth_token`` as it does on a laptop).
Other processes then try to join it and run a task: without the token, with a wrong token, and
with the right one. Only the last may run work on it. Two facts the docs rely on are recorded on
the same cluster: the ports still listen on every interface (token auth is not a firewall), and
the token file Ray writes is readable by other users under the usual umask 022 (so on a shared
machine the token must live in a file only its owner can read).

Sources: ray/_private/authentication/authentication_token_setup.py (token made by ray.init in
~/.ray/auth_token, RAY_AUTH_MODE read from the environment only), grpc_authentication_server_
interceptor.py (gRPC servers check the bearer token), http_token_authentication.py (dashboard and
job HTTP API: 401 without, 403 with a wrong token; not measured here: the dashboard needs aiohttp,
which the course's pinned environment does not install).
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import textwrap
import time

import psutil
import pytest

pytestmark = pytest.mark.slow

PYTHON = sys.executable
START_TIMEOUT_S = 150
CLIENT_TIMEOUT_S = 150

# The protected cluster: loopback node address, 1 CPU, no dashboard; prints its addresses and waits
# until its stdin closes.
HEAD = textwrap.dedent("""
    import json, sys, ray
    ctx = ray.init(address="local", num_cpus=1, include_dashboard=False,
                   _node_ip_address="127.0.0.1", object_store_memory=80 * 1024 * 1024,
                   _temp_dir=sys.argv[1], log_to_driver=False)
    node = ray.nodes()[0]
    print(json.dumps({"gcs": ctx.address_info["gcs_address"],
                      "raylet_port": node["NodeManagerPort"]}), flush=True)
    sys.stdin.read()
    ray.shutdown()
""")

# Another process: join the cluster and run one task. Prints CONNECTED <result> or REFUSED <why>.
CLIENT = textwrap.dedent("""
    import sys, ray
    try:
        ray.init(address=sys.argv[1], log_to_driver=False)
        value = ray.get(ray.remote(lambda: 41 + 1).remote(), timeout=60)
        print("CONNECTED", value, flush=True)
    except Exception as exc:
        print("REFUSED", type(exc).__name__, str(exc)[:200], flush=True)
""")


def _clean_env(home, **extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env.update(HOME=str(home), **extra)
    return env


@pytest.fixture(scope="module")
def protected_cluster(tmp_path_factory):
    base = tmp_path_factory.mktemp("rayauth")
    home = base / "owner-home"
    home.mkdir()
    # A short temp folder: Ray's socket paths live under it and AF_UNIX paths stop at 107 bytes
    # (pytest's own folders under an xdist worker are too deep).
    temp_dir = tempfile.mkdtemp(prefix="rauth-")
    head_log = base / "head.log"
    old_umask = os.umask(0o022)  # the usual default; the token file's mode depends on it
    try:
        with open(head_log, "w") as log:
            head, info = _start_head(HEAD, temp_dir, _clean_env(home, RAY_AUTH_MODE="token"), stderr=log)
    finally:
        os.umask(old_umask)
    try:
        if not info:
            pytest.fail(f"the token-auth cluster did not start within {START_TIMEOUT_S} s:\n"
                        + head_log.read_text()[-2000:])
        info.update(home=home, base=base, pid=head.pid)
        yield info
    finally:
        _stop_head(head)
        shutil.rmtree(temp_dir, ignore_errors=True)


def _join(address, home, **env):
    out = subprocess.run([PYTHON, "-c", CLIENT, address], capture_output=True, text=True,
                         timeout=CLIENT_TIMEOUT_S, env=_clean_env(home, **env))
    verdict = [ln for ln in out.stdout.splitlines() if ln.startswith(("CONNECTED", "REFUSED"))]
    assert verdict, f"client printed no verdict: {out.stdout[-500:]} {out.stderr[-500:]}"
    return verdict[-1]


def test_ray_init_writes_a_token_other_users_can_read(protected_cluster):
    token_file = protected_cluster["home"] / ".ray" / "auth_token"
    assert token_file.is_file() and len(token_file.read_text().strip()) >= 32
    mode = stat.S_IMODE(token_file.stat().st_mode)
    # Under umask 022 Ray writes it 0644: anyone who can enter the home folder can read it.
    assert mode & stat.S_IROTH, oct(mode)


def test_a_process_without_the_token_cannot_run_work(protected_cluster, tmp_path):
    verdict = _join(protected_cluster["gcs"], tmp_path)
    assert verdict.startswith("REFUSED"), verdict


def test_a_token_in_the_environment_without_token_mode_is_not_sent(protected_cluster, tmp_path):
    token = (protected_cluster["home"] / ".ray" / "auth_token").read_text().strip()
    verdict = _join(protected_cluster["gcs"], tmp_path, RAY_AUTH_TOKEN=token)
    assert verdict.startswith("REFUSED"), verdict


def test_a_wrong_token_is_refused(protected_cluster, tmp_path):
    verdict = _join(protected_cluster["gcs"], tmp_path, RAY_AUTH_MODE="token",
                    RAY_AUTH_TOKEN="0" * 64)
    assert verdict.startswith("REFUSED"), verdict


def test_the_right_token_runs_work(protected_cluster, tmp_path):
    token_file = protected_cluster["home"] / ".ray" / "auth_token"
    verdict = _join(protected_cluster["gcs"], tmp_path, RAY_AUTH_MODE="token",
                    RAY_AUTH_TOKEN_PATH=str(token_file))
    assert verdict == "CONNECTED 42", verdict


def test_ports_still_listen_on_every_interface(protected_cluster):
    """Token auth refuses clients; it does not close ports. Even with a loopback node address the
    GCS and raylet listen on the wildcard address, so a firewall is still what hides them."""
    gcs_port = int(protected_cluster["gcs"].rsplit(":", 1)[1])
    wanted = {gcs_port, protected_cluster["raylet_port"]}
    family = [psutil.Process(protected_cluster["pid"])]
    family += family[0].children(recursive=True)
    bound = {}
    for proc in family:
        try:
            for conn in proc.net_connections(kind="tcp"):
                if conn.status == psutil.CONN_LISTEN and conn.laddr.port in wanted:
                    bound[conn.laddr.port] = conn.laddr.ip
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    assert set(bound) == wanted, bound
    assert all(ip in ("0.0.0.0", "::") for ip in bound.values()), bound
    # And reachable through a non-loopback address of this machine where it has one.
    other = [a.address for addrs in psutil.net_if_addrs().values() for a in addrs
             if a.family == socket.AF_INET and not a.address.startswith("127.")]
    if other:
        with socket.create_connection((other[0], gcs_port), timeout=5):
            pass


# The course's own cluster with the opt-in switch: raylab.start_cluster under RAYLAB_RAY_AUTH=token.
COURSE_HEAD = textwrap.dedent("""
    import json, sys
    from raylab.cluster import start_cluster
    ctx = start_cluster(num_cpus=1, _temp_dir=sys.argv[1], log_to_driver=False)
    import ray
    print(json.dumps({"gcs": ctx.address_info["gcs_address"]}), flush=True)
    sys.stdin.read()
    ray.shutdown()
""")


def _start_head(script, temp_dir, env, stderr=subprocess.DEVNULL):
    """Start a head process; return it and the addresses it printed (None if it printed none in time)."""
    head = subprocess.Popen([PYTHON, "-c", script, str(temp_dir)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=stderr, text=True, env=env)
    deadline = time.monotonic() + START_TIMEOUT_S
    line = ""
    while not line and time.monotonic() < deadline and head.poll() is None:
        line = head.stdout.readline().strip()
    return head, (json.loads(line) if line else None)


def _stop_head(head):
    family = psutil.Process(head.pid).children(recursive=True) if head.poll() is None else []
    head.stdin.close()
    try:
        head.wait(timeout=30)
    except subprocess.TimeoutExpired:
        head.kill()
    from raylab.processes import kill_processes

    kill_processes([p for p in family if p.is_running()])


def test_course_cluster_switch_turns_token_auth_on(tmp_path):
    home = tmp_path / "learner-home"
    home.mkdir()
    # A short temp folder: Ray's socket paths live under it and AF_UNIX paths stop at 107 bytes.
    temp_dir = tempfile.mkdtemp(prefix="rauth-")
    head, info = _start_head(COURSE_HEAD, temp_dir, _clean_env(home, RAYLAB_RAY_AUTH="token"))
    try:
        assert info, f"raylab.start_cluster with token auth did not start in {START_TIMEOUT_S} s"
        token_file = home / ".ray" / "auth_token"
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        assert _join(info["gcs"], tmp_path).startswith("REFUSED")
        assert _join(info["gcs"], tmp_path, RAY_AUTH_MODE="token",
                     RAY_AUTH_TOKEN_PATH=str(token_file)) == "CONNECTED 42"
    finally:
        _stop_head(head)
        shutil.rmtree(temp_dir, ignore_errors=True)
