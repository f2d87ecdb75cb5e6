"""The workshop hub (`make workshop`, issue 17), started for real with a 2-learner roster.

`grader.workshop.up` runs as it does for an instructor (system users, state folder, nbgrader release,
JupyterHub with its pinned configurable-http-proxy) in a temporary state folder on a free port.
A learner logs in through the hub's login form, starts their server through the hub's REST API,
and from the learner's side (commands run as that user with their server's environment) nothing
of the answer key, the gradebook or the other learner's home is readable, while what nbgrader
released to them is. Needs root (useradd, a hub that spawns servers as other users) and the npm
proxy (`npm ci --prefix workshop/hub`). The users it creates (rlw-<random>) are removed after.
"""
from __future__ import annotations

import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from grader.workshop import accounts as workshop_accounts
from grader.workshop import down as workshop_down
from grader.workshop import state as workshop_state
from grader.workshop import up as workshop

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

requests = pytest.importorskip("requests")

if os.geteuid() != 0 or not shutil.which("useradd"):
    pytest.skip("the workshop hub creates system users: root and useradd needed", allow_module_level=True)

LAB = "00_lab_setup"
PASSWORD = "rlw-" + secrets.token_urlsafe(12)


@dataclass
class Hub:
    url: str
    state: Path
    learners: list[str]
    instructor: str
    proc: subprocess.Popen
    log: Path
    auth: dict = None  # login -> API headers of that user's token (filled by _start_server)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _top_level_modes() -> dict[Path, int]:
    return {p: stat.S_IMODE(p.lstat().st_mode) for p in ROOT.iterdir() if not p.is_symlink()}


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    try:  # learners' servers run the course from this clone: say so, rather than servers failing
        workshop_state.require_clone_reachable()
    except SystemExit as exc:
        pytest.fail(str(exc))
    if not workshop.PROXY.exists():
        if not shutil.which("npm"):
            pytest.skip("npm (Debian's nodejs/npm) is needed for configurable-http-proxy")
        workshop.install_proxy()
    tag = secrets.token_hex(3)
    learners, instructor, group = [f"rlw-{tag}a", f"rlw-{tag}b"], f"rlw-{tag}i", f"rlw-{tag}g"
    users = learners + [instructor]
    # Learners must reach the exchange inside it: a world-traversable parent, not pytest's tmp_path.
    state = Path(tempfile.mkdtemp(prefix="rlw-state-", dir="/tmp"))
    os.chmod(state, 0o755)
    roster = state.with_name(state.name + "-roster.txt")
    roster.write_text("# test roster\n" + "\n".join(learners) + f"\ninstructor: {instructor}\n")
    log = tmp_path_factory.mktemp("workshop-hub") / "hub.log"  # pytest's root-only folder
    modes = _top_level_modes()
    port = _free_port()
    env = {**os.environ, workshop_accounts.TEST_PASSWORD_ENV: PASSWORD}
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "grader.workshop.up", "--roster", str(roster), "--state", str(state),
             "--port", str(port), "--labs", LAB, "--instructor-group", group],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    hub = Hub(f"http://127.0.0.1:{port}", state, learners, instructor, proc, log)
    try:
        _wait_for_api(hub, 150)
        yield hub
    finally:
        proc = hub.proc  # the restart test replaces it
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(timeout=10)
        from raylab.processes import kill_processes

        kill_processes(workshop_down.users_processes(users))
        from grader.workshop.limits import LearnerGroup, Limits

        for name in learners:
            LearnerGroup(name, Limits()).remove()
        for name in users:
            subprocess.run(["userdel", "--remove", name], capture_output=True, timeout=60)
        subprocess.run(["groupdel", group], capture_output=True, timeout=60)
        for path, mode in modes.items():  # the shared clone as it was (make workshop keeps it closed)
            if path.exists() and stat.S_IMODE(path.lstat().st_mode) != mode:
                os.chmod(path, mode)
        shutil.rmtree(state, ignore_errors=True)
        roster.unlink(missing_ok=True)
        print(f"hub log kept at {log}")


def _login(hub: Hub, name: str, password: str = PASSWORD):
    """Log in through the hub's login form; return the session and the hub's API headers."""
    session = requests.Session()
    session.get(f"{hub.url}/hub/login", timeout=30)
    reply = session.post(f"{hub.url}/hub/login", timeout=60, allow_redirects=False,
                         data={"username": name, "password": password,
                               "_xsrf": session.cookies.get("_xsrf")})
    return session, reply


def _start_server(hub: Hub, name: str, options: dict | None = None) -> dict:
    """Start ``name``'s server through the hub's REST API (``options``: what the spawn page's form
    would send, e.g. the learner's edition)."""
    session, reply = _login(hub, name)
    assert reply.status_code == 302, reply.text[:500]
    xsrf = {"X-XSRFToken": session.cookies.get("_xsrf")}
    token = session.post(f"{hub.url}/hub/api/users/{name}/tokens", headers=xsrf, timeout=30,
                         json={"note": "test_workshop_hub", "expires_in": 900})
    assert token.status_code == 201, token.text[:500]
    auth = {"Authorization": f"token {token.json()['token']}"}
    started = requests.post(f"{hub.url}/hub/api/users/{name}/server", headers=auth, timeout=60,
                            json=options)
    assert started.status_code in (201, 202), started.text[:500]
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        user = requests.get(f"{hub.url}/hub/api/users/{name}", headers=auth, timeout=30).json()
        if user.get("servers", {}).get("", {}).get("ready"):
            hub.auth = {**(hub.auth or {}), name: auth}
            return auth
        time.sleep(1)
    pytest.fail(f"{name}'s server did not start within 120 s:\n{hub.log.read_text()[-3000:]}")


def _server_environment(name: str) -> dict:
    """The environment of ``name``'s single-user server process (read from /proc)."""
    import psutil

    for proc in workshop_down.users_processes([name]):
        try:
            if "jupyterhub.singleuser" in " ".join(proc.cmdline()):
                return proc.environ()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return {}


# Run as a learner: what can they read, which processes and /tmp entries do they see, which Python
# do they run? Prints one JSON object.
PROBE = r"""
import json, os, sys
root, state, other_home, hidden_marker = sys.argv[1:5]
def owner(pid):
    try:
        return next(int(l.split()[1]) for l in open(f'/proc/{pid}/status') if l.startswith('Uid:'))
    except (OSError, StopIteration):
        return None
pids = [int(p) for p in os.listdir('/proc') if p.isdigit()]
hidden_marker = hidden_marker.encode()
def readable(path):
    try:
        if os.path.isdir(path):
            os.listdir(path)
        else:
            open(path, 'rb').read(1)
        return True
    except OSError:
        return False
targets = json.loads(sys.argv[5])
hits = []
for top in (root, state, '/home', '/opt', '/srv', '/tmp', '/var/tmp', '/work', '/root'):
    for folder, dirs, files in os.walk(top, onerror=lambda e: None):
        dirs[:] = [d for d in dirs if d not in ('.venv', 'node_modules')]
        for f in files:
            path = os.path.join(folder, f)
            try:
                with open(path, 'rb') as handle:
                    if hidden_marker in handle.read(4_000_000):
                        hits.append(path)
            except OSError:
                pass
print(json.dumps({"readable": {t: readable(t) for t in targets}, "hidden_test_text_in": hits,
                  "pids": pids, "uids": sorted({owner(p) for p in pids} - {None}),
                  "tmp": sorted(os.listdir('/tmp')), "python": [sys.version, os.path.realpath(sys.executable)]}))
"""


def _in_server(name: str, argv: list[str], env: dict | None = None) -> subprocess.CompletedProcess:
    """Run ``argv`` as ``name`` inside that user's server's mount namespace: what their server,
    kernels and terminals see of the machine."""
    server = _server_process(name)
    assert server is not None, f"{name}'s server is not running"
    entry = pwd.getpwnam(name)
    cmd = [shutil.which("nsenter"), f"--target={server.pid}", "--mount", "--", "/usr/bin/setpriv",
           f"--reuid={entry.pw_uid}", f"--regid={entry.pw_gid}", "--init-groups", "--", *argv]
    return subprocess.run(cmd, env=env or _server_environment(name), capture_output=True, text=True,
                          timeout=120, cwd="/")


def _decoy_checkout(tag: str) -> list[Path]:
    """Other copies of the course's answer key, readable by everyone, where a careless machine has
    them: another clone in /opt, a scratch copy in /tmp."""
    decoys = []
    for top in (Path("/opt"), Path("/tmp")):
        folder = top / f"rlw-decoy-{tag}" / "solutions" / LAB
        folder.mkdir(parents=True)
        shutil.copy(ROOT / "solutions" / LAB / f"{LAB}.ipynb", folder)
        for path in [top / f"rlw-decoy-{tag}", *(top / f"rlw-decoy-{tag}").rglob("*")]:
            os.chmod(path, 0o755 if path.is_dir() else 0o644)
        decoys.append(folder / f"{LAB}.ipynb")
    return decoys


def test_learner_logs_in_and_gets_a_learner_server(hub):
    name = hub.learners[0]
    _, wrong = _login(hub, name, "not-the-password")
    assert wrong.status_code != 302, "a wrong password was let in"
    auth = _start_server(hub, name)
    base = f"{hub.url}/user/{name}"
    # The learner JupyterLab: nbgrader's instructor tools switched off, the Assignments list on.
    lab = requests.get(f"{base}/lab", headers=auth, timeout=60)
    assert lab.status_code == 200
    assert '"@jupyter/nbgrader:create-assignment": true' in lab.text.replace("\\", "") or \
        "nbgrader:create-assignment" in lab.text
    assert requests.get(f"{base}/formgrader", headers=auth, timeout=60).status_code == 404
    listing = requests.get(f"{base}/assignments", params={"course_id": workshop_state.COURSE_ID},
                           headers=auth, timeout=120)
    assert listing.status_code == 200, listing.text[:500]
    released = [a["assignment_id"] for a in listing.json()["value"] if a["status"] == "released"]
    assert released == [LAB]
    # The server runs as the learner, with its own Ray temp folder and Ray token authentication.
    env = _server_environment(name)
    home = pwd.getpwnam(name).pw_dir
    assert env.get("RAY_TMPDIR", "").startswith(home + "/"), env.get("RAY_TMPDIR")
    assert env.get("RAY_AUTH_MODE") == "token" and env.get("RAYLAB_RAY_AUTH") == "token"
    token = Path(env["RAY_AUTH_TOKEN_PATH"])
    assert token.stat().st_uid == pwd.getpwnam(name).pw_uid
    assert stat.S_IMODE(token.stat().st_mode) == 0o600
    assert stat.S_IMODE(os.stat(home).st_mode) == 0o700
    # Another login of the roster cannot use this learner's server.
    other = _start_server(hub, hub.learners[1])
    assert requests.get(f"{base}/api/contents", headers=other, timeout=60,
                        allow_redirects=False).status_code in (302, 403, 404)


def test_learner_cannot_read_answer_key_gradebook_or_other_home(hub):
    from grader.workshop.hub import user_environment

    me, other = hub.learners
    settings = json.loads((hub.state / "hub" / "workshop.json").read_text())
    user_environment(other, settings)  # the other learner's Ray token, as their server gets it
    other_home = Path(pwd.getpwnam(other).pw_dir)
    secret = other_home / "my-answers.ipynb"
    secret.write_text('{"answer": 42}')
    os.chown(secret, pwd.getpwnam(other).pw_uid, pwd.getpwnam(other).pw_gid)
    os.chmod(secret, 0o644)  # even a file the other learner left world-readable
    course = hub.state / "course"
    closed = [ROOT / "solutions" / LAB / f"{LAB}.ipynb", ROOT / "solutions", ROOT / "solutions" / LAB / "mutants.yaml",
              ROOT / ".git", ROOT / "tests", course, course / "gradebook.db",
              course / "source" / LAB / f"{LAB}.ipynb", hub.state / "hub" / "jupyterhub.sqlite",
              hub.state / "hub" / "passwords.txt", other_home, secret,
              hub.state / "exchange" / workshop_state.COURSE_ID / "inbound",
              other_home / ".ray" / "auth_token"]
    released = hub.state / "exchange" / workshop_state.COURSE_ID / "outbound" / LAB / f"{LAB}.ipynb"
    decoys = _decoy_checkout(secrets.token_hex(3))
    closed += decoys
    released_ja = hub.state / "exchange-ja" / workshop_state.COURSE_ID / "outbound" / LAB / f"{LAB}.ipynb"
    opened = [released, released_ja]
    assert all(p.exists() for p in closed + opened), [str(p) for p in closed + opened if not p.exists()]
    (hub.auth or {}).get(me) or _start_server(hub, me)
    other_server = _server_process(other) or (_start_server(hub, other) and _server_process(other))
    env = {**user_environment(me, settings), "HOME": pwd.getpwnam(me).pw_dir, "USER": me}
    args = ["-c", PROBE, str(ROOT), str(hub.state), str(other_home), "BEGIN HIDDEN TESTS",
            json.dumps([str(p) for p in closed + opened])]
    try:
        out = _in_server(me, [settings["python"], *args], env)
        # The control: the same probe as the same learner outside the server's namespace (the
        # system's Python: the course's lives under /root) reads the decoys and sees other users.
        bare = subprocess.run([shutil.which("runuser"), "-u", me, "--", "/usr/bin/python3", *args],
                              capture_output=True, text=True, timeout=120, env=env, cwd="/")
    finally:
        for decoy in decoys:
            shutil.rmtree(decoy.parents[2], ignore_errors=True)
    assert out.returncode == 0, out.stderr[-2000:]
    seen, outside = json.loads(out.stdout), json.loads(bare.stdout)
    print(json.dumps({k: v for k, v in seen.items() if k != "pids"}, indent=1))
    assert [p for p in map(str, closed) if seen["readable"][p]] == []
    assert all(seen["readable"][str(p)] for p in opened)
    assert seen["hidden_test_text_in"] == []
    # Processes: the learner's own only (hidepid=2); the other learner's server is not among them.
    assert seen["uids"] == [pwd.getpwnam(me).pw_uid], seen["uids"]
    assert other_server.pid not in seen["pids"]
    assert not [e for e in seen["tmp"] if e == "ray" or e.startswith("rlw-decoy")], seen["tmp"]
    # The same learner's server runs the grader's interpreter (this venv's, from /root's pyenv).
    assert seen["python"] == [sys.version, os.path.realpath(sys.executable)]
    # The probe is not blind: outside the namespace the decoys are readable and others' processes seen.
    assert all(outside["readable"][str(p)] for p in decoys), outside["readable"]
    assert len(outside["uids"]) > 1
    assert "BEGIN HIDDEN TESTS" in (ROOT / "solutions" / LAB / f"{LAB}.ipynb").read_text()


def test_instructor_gets_formgrader_on_the_course(hub):
    auth = _start_server(hub, hub.instructor)
    base = f"{hub.url}/user/{hub.instructor}"
    assert requests.get(f"{base}/formgrader", headers=auth, timeout=120).status_code == 200
    listing = requests.get(f"{base}/formgrader/api/assignments", headers=auth, timeout=120)
    assert listing.status_code == 200, listing.text[:500]
    assert LAB in {a["name"] for a in listing.json()}, listing.text[:500]


def _server_process(name: str):
    for proc in workshop_down.users_processes([name]):
        try:
            if "jupyterhub.singleuser" in " ".join(proc.cmdline()):
                return proc
        except Exception:
            continue
    return None


def test_learner_server_runs_inside_its_limits_and_what_it_costs(hub):
    """The learner's server is in the learner's control group (CPU, memory, tasks) with
    RLIMIT_NPROC, the instructor's is not; the resident memory of the hub, its proxy and one idle
    learner server goes to .scratch/workshop-hub-cost.json (docs/workshop.md, sizing)."""
    import psutil

    from grader.workshop.limits import LearnerGroup, Limits

    name = hub.learners[0]
    (hub.auth or {}).get(name) or _start_server(hub, name)
    (hub.auth or {}).get(hub.instructor) or _start_server(hub, hub.instructor)
    server, teacher = _server_process(name), _server_process(hub.instructor)
    assert server is not None and teacher is not None
    limits = Limits(**json.loads((hub.state / "hub" / "workshop.json").read_text())["limits"])
    group = LearnerGroup(name, limits).create()  # the same group again: its folders and limits
    held = set(group.held)
    assert "nproc" in held
    cgroups = Path(f"/proc/{server.pid}/cgroup").read_text()
    if held - {"nproc"}:
        assert f"raylab-workshop-{name}" in cgroups, cgroups
        assert server.pid in group.members()
    assert "raylab-workshop-" not in Path(f"/proc/{teacher.pid}/cgroup").read_text()
    def max_processes(pid):  # /proc/<pid>/limits: psutil's prlimit call is refused in containers
        line = next(x for x in Path(f"/proc/{pid}/limits").read_text().splitlines()
                    if x.startswith("Max processes"))
        return line.split()[2:4]

    assert max_processes(server.pid) == [str(limits.nproc)] * 2
    assert max_processes(teacher.pid) != [str(limits.nproc)] * 2
    for folder in group.folders:
        for knob, value in (("memory.limit_in_bytes", limits.memory_bytes), ("pids.max", limits.tasks),
                            ("cpu.cfs_quota_us", int(limits.cpus * 100_000))):
            if (folder / knob).exists():
                assert int((folder / knob).read_text()) == value, knob
    hub_proc = psutil.Process(hub.proc.pid)
    proxy = [p for p in hub_proc.children(recursive=True) if "configurable-http-proxy" in " ".join(p.cmdline())]

    def mib(proc):
        info = proc.memory_full_info()
        return {"rss_mib": round(info.rss / 2**20), "uss_mib": round(info.uss / 2**20)}

    cost = {"hub": mib(hub_proc), "proxy": mib(proxy[0]) if proxy else None,
            "learner_server": mib(server), "instructor_server": mib(teacher),
            "limits_held": sorted(held), "limits_missing": group.missing,
            "hub_cpu_s": round(sum(hub_proc.cpu_times()[:2]), 1),
            "learner_server_cpu_s": round(sum(server.cpu_times()[:2]), 1)}
    for folder in group.folders:
        if (folder / "memory.usage_in_bytes").exists():
            cost["learner_group_memory_mib"] = round(int((folder / "memory.usage_in_bytes").read_text()) / 2**20)
    print(json.dumps(cost))
    (ROOT / ".scratch").mkdir(exist_ok=True)
    (ROOT / ".scratch" / "workshop-hub-cost.json").write_text(json.dumps(cost, indent=1))


def test_fetch_and_submit_through_the_assignments_tab_then_collect(hub):
    """The calls JupyterLab's Assignments tab makes (fetch, submit), on the learner's own server,
    then the instructor's collect (nbgrader's API on the course folder, as `nbgrader collect`)."""
    name = hub.learners[0]
    auth = (hub.auth or {}).get(name) or _start_server(hub, name)
    base = f"{hub.url}/user/{name}/assignments"
    course = {"assignment_id": LAB, "course_id": workshop_state.COURSE_ID}
    fetched = requests.post(f"{base}/fetch", data=course, headers=auth, timeout=120)
    assert fetched.status_code == 200, fetched.text[:500]
    entry = pwd.getpwnam(name)
    notebook = Path(entry.pw_dir) / LAB / f"{LAB}.ipynb"
    assert notebook.stat().st_uid == entry.pw_uid
    assert "BEGIN HIDDEN TESTS" not in notebook.read_text()
    submitted = requests.post(f"{base}/submit", data=course, headers=auth, timeout=120)
    assert submitted.status_code == 200, submitted.text[:500]
    assert any(a["status"] == "submitted" for a in submitted.json()["value"]), submitted.text[:500]
    result = workshop._nbgrader_api(workshop_state.State(hub.state)).collect(LAB)
    assert result["success"], result
    collected = hub.state / "course" / "submitted" / name / LAB / f"{LAB}.ipynb"
    assert collected.exists(), sorted(str(p) for p in (hub.state / "course").rglob("*"))[:40]


def _children_running(name: str, marker: str, seconds: float = 60):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for proc in workshop_down.users_processes([name]):
            try:
                if marker in " ".join(proc.cmdline()):
                    return proc
            except Exception:  # noqa: BLE001 - a process that ended meanwhile
                continue
        time.sleep(0.5)
    return None


def test_learner_kernel_and_terminal_run_the_graders_python(hub):
    """A kernel the learner starts runs the very interpreter the grader runs (this venv's); in a
    terminal, ``python``, ``ray`` and ``nbgrader`` are the course venv's."""
    name = hub.learners[0]
    auth = (hub.auth or {}).get(name) or _start_server(hub, name)
    base = f"{hub.url}/user/{name}/api"
    kernel = requests.post(f"{base}/kernels", json={"name": "python3"}, headers=auth, timeout=120)
    assert kernel.status_code == 201, kernel.text[:500]
    terminal = requests.post(f"{base}/terminals", headers=auth, timeout=120)
    assert terminal.status_code == 200, terminal.text[:500]
    try:
        process = _children_running(name, "ipykernel_launcher")
        assert process is not None, "no kernel process"
        assert os.path.realpath(f"/proc/{process.pid}/exe") == os.path.realpath(sys.executable)
        shell = _children_running(name, "/bin/bash")
        assert shell is not None, "no terminal shell"
        env = shell.environ()
        found = _in_server(name, ["/bin/bash", "-c", "command -v python ray nbgrader"], env)
        assert found.returncode == 0, (found.stdout, found.stderr[-500:])
        venv_bin = str(workshop_state.VENV_BIN)
        assert found.stdout.split() == [f"{venv_bin}/{tool}" for tool in ("python", "ray", "nbgrader")]
        version = _in_server(name, ["/bin/bash", "-c", "python -c 'import sys; print(sys.version)'"], env)
        assert version.stdout.strip() == sys.version
    finally:
        requests.delete(f"{base}/kernels/{kernel.json()['id']}", headers=auth, timeout=60)
        requests.delete(f"{base}/terminals/{terminal.json()['name']}", headers=auth, timeout=60)



RAY_OWNER = r"""
import json, sys
from raylab.cluster import start_cluster
from ray._private.services import find_gcs_addresses
ctx = start_cluster(num_cpus=1)
print(json.dumps({"gcs": ctx.address_info["gcs_address"]}), flush=True)
sys.stdin.readline()  # the other learner's cluster is running now
find_gcs_addresses.cache_clear()
print(json.dumps({"found": sorted(find_gcs_addresses())}), flush=True)
sys.stdin.readline()
"""


def test_each_learners_ray_finds_only_their_own_cluster(hub):
    """With both learners' clusters running, the lookup Ray's clients use when no address is given
    (it reads the process table: "Found multiple active Ray instances" when it finds several)
    finds only the learner's own cluster; root, outside the learners' namespaces, finds both."""
    from ray._private.services import find_gcs_addresses

    procs, seen = [], {}
    try:
        for name in hub.learners:
            (hub.auth or {}).get(name) or _start_server(hub, name)
            server, entry = _server_process(name), pwd.getpwnam(name)
            proc = subprocess.Popen(
                [shutil.which("nsenter"), f"--target={server.pid}", "--mount", "--", "/usr/bin/setpriv",
                 f"--reuid={entry.pw_uid}", f"--regid={entry.pw_gid}", "--init-groups", "--",
                 str(workshop_state.VENV_BIN / "python"), "-c", RAY_OWNER],
                env=_server_environment(name), cwd="/", stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL, text=True)
            procs.append(proc)
            line = proc.stdout.readline()
            assert line, f"{name}'s cluster did not start"
            seen[name] = json.loads(line)
        find_gcs_addresses.cache_clear()
        everyone = set(find_gcs_addresses())
        for name, proc in zip(hub.learners, procs):
            proc.stdin.write("\n")
            proc.stdin.flush()
            seen[name].update(json.loads(proc.stdout.readline()))
    finally:
        for proc in procs:
            try:
                proc.communicate("\n", timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                proc.kill()
    for name, cluster in seen.items():
        assert cluster["found"] == [cluster["gcs"]], (name, cluster)
    assert {c["gcs"] for c in seen.values()} <= everyone, everyone


def test_formgrader_frames_in_jupyterlab_and_autograde_points_to_make_grade(hub):
    """The instructor's formgrader may be framed by their own JupyterLab (its Formgrader tab), a
    learner's pages by nothing; the formgrader's Autograde button (its API call) runs nothing and
    names `make grade` (it would run learner code as the instructor, outside the sandbox)."""
    teacher = (hub.auth or {}).get(hub.instructor) or _start_server(hub, hub.instructor)
    page = requests.get(f"{hub.url}/user/{hub.instructor}/formgrader", headers=teacher, timeout=120)
    assert page.headers.get("Content-Security-Policy") == workshop_state.INSTRUCTOR_CSP, page.headers
    learner = hub.learners[0]
    mine = (hub.auth or {}).get(learner) or _start_server(hub, learner)
    lab = requests.get(f"{hub.url}/user/{learner}/lab", headers=mine, timeout=120)
    assert "frame-ancestors 'none'" in lab.headers.get("Content-Security-Policy", ""), lab.headers
    submitted = hub.state / "course" / "submitted" / learner / LAB
    assert submitted.is_dir(), "collected by the test before"
    reply = requests.post(f"{hub.url}/user/{hub.instructor}/formgrader/api/submission/{LAB}/{learner}/autograde",
                          headers=teacher, timeout=300)
    assert reply.status_code == 200, reply.text[:500]
    result = reply.json()
    assert result["success"] is False and "make grade" in (result.get("error") or "") + (result.get("log") or ""), result


def test_a_lab_released_later_reaches_the_exchange_and_the_formgrader(hub):
    """`make workshop-release LABS=..` while the room runs: the lab is in the exchange and in the
    course's gradebook, so the formgrader lists it; an unknown lab is refused with the list."""
    later = "10_quiz"
    bad = subprocess.run([sys.executable, "-m", "grader.workshop.up", "--release-only", "--state", str(hub.state),
                          "--labs", "99_nope"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert bad.returncode != 0 and "no such lab: 99_nope" in bad.stderr, bad.stderr[-500:]
    run = subprocess.run([sys.executable, "-m", "grader.workshop.up", "--release-only", "--state", str(hub.state),
                          "--labs", later], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert (hub.state / "exchange" / workshop_state.COURSE_ID / "outbound" / later / f"{later}.ipynb").exists()
    teacher = (hub.auth or {}).get(hub.instructor) or _start_server(hub, hub.instructor)
    listing = requests.get(f"{hub.url}/user/{hub.instructor}/formgrader/api/assignments", headers=teacher, timeout=120)
    assert later in {a["name"] for a in listing.json()}, listing.text[:500]


def test_a_learner_who_chooses_japanese_gets_the_japanese_lab_collected_under_the_same_lab(hub):
    """The spawn page offers English and 日本語; a learner who picks Japanese gets raylab's messages
    and JupyterLab's menus in Japanese, and fetches the Japanese copy of the released lab, which
    they cannot change in the exchange; their submission is collected under the same lab, with
    the English copy's grade ids. (Run alone, the last check needs the test of a later release.)"""
    name = hub.learners[1]
    auth = (hub.auth or {}).get(name) or _start_server(hub, name)
    requests.delete(f"{hub.url}/hub/api/users/{name}/server", headers=auth, timeout=120)
    deadline = time.monotonic() + 60
    while requests.get(f"{hub.url}/hub/api/users/{name}", headers=auth, timeout=30).json().get("servers"):
        assert time.monotonic() < deadline, f"{name}'s server did not stop"
        time.sleep(1)
    session, _ = _login(hub, name)
    form = session.get(f"{hub.url}/hub/spawn/{name}", timeout=60).content.decode()
    assert 'name="edition" value="ja"' in form and "日本語" in form, form[-3000:]
    _start_server(hub, name, {"edition": "ja"})
    auth = hub.auth[name]
    env = _server_environment(name)
    learner_config = str(hub.state / "learner-config")
    assert env["RAYLAB_LANG"] == "ja"
    assert env["JUPYTER_CONFIG_PATH"].split(os.pathsep)[:2] == [f"{learner_config}/ja", learner_config]
    (hub.auth or {}).get(hub.learners[0]) or _start_server(hub, hub.learners[0])
    assert _server_environment(hub.learners[0]).get("RAYLAB_LANG") == "en"
    base = f"{hub.url}/user/{name}"
    locale = requests.get(f"{base}/lab/api/settings/@jupyterlab/translation-extension:plugin",
                          headers=auth, timeout=60)
    # The layer's override is the setting's default (the learner may still pick another language).
    assert locale.status_code == 200, locale.text[:500]
    assert locale.json()["schema"]["properties"]["locale"]["default"] == "ja_JP", locale.text[:1000]
    course = {"assignment_id": LAB, "course_id": workshop_state.COURSE_ID}
    fetched = requests.post(f"{base}/assignments/fetch", data=course, headers=auth, timeout=120)
    assert fetched.status_code == 200 and fetched.json()["success"], fetched.text[:500]
    home = Path(pwd.getpwnam(name).pw_dir)
    notebook = home / LAB / f"{LAB}.ipynb"
    japanese = ROOT / "notebooks-ja" / LAB / f"{LAB}.ipynb"
    assert notebook.exists(), (fetched.text[:500], sorted(str(p) for p in home.rglob("*.ipynb")))
    assert notebook.read_bytes() == japanese.read_bytes()
    outbound_ja = hub.state / "exchange-ja" / workshop_state.COURSE_ID / "outbound" / LAB
    tamper = _in_server(name, ["/bin/sh", "-c", f"echo x > {outbound_ja}/{LAB}.ipynb || echo x > {outbound_ja}/x"])
    assert tamper.returncode != 0 and japanese.read_bytes() == (outbound_ja / f"{LAB}.ipynb").read_bytes()
    assert not (hub.state / "exchange-ja" / workshop_state.COURSE_ID / "inbound").exists()
    submitted = requests.post(f"{base}/assignments/submit", data=course, headers=auth, timeout=120)
    assert submitted.status_code == 200 and submitted.json()["success"], submitted.text[:500]
    result = workshop._nbgrader_api(workshop_state.State(hub.state)).collect(LAB)
    assert result["success"], result
    collected = hub.state / "course" / "submitted" / name / LAB / f"{LAB}.ipynb"
    assert collected.read_bytes() == japanese.read_bytes()

    def grade_ids(path):
        cells = json.loads(path.read_text())["cells"]
        return [c["metadata"].get("nbgrader", {}).get("grade_id") for c in cells]

    assert grade_ids(collected) == grade_ids(ROOT / "notebooks" / LAB / f"{LAB}.ipynb")
    # A lab released later reaches both editions.
    assert (hub.state / "exchange-ja" / workshop_state.COURSE_ID / "outbound" / "10_quiz").is_dir()


def _wait_for_api(hub: Hub, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while True:
        if hub.proc.poll() is not None:
            pytest.fail(f"the hub exited ({hub.proc.returncode}):\n{hub.log.read_text()[-3000:]}")
        try:
            if requests.get(f"{hub.url}/hub/api", timeout=3).status_code == 200:
                return
        except requests.RequestException:
            pass
        if time.monotonic() > deadline:
            pytest.fail(f"the hub did not answer within {seconds:g} s:\n{hub.log.read_text()[-3000:]}")
        time.sleep(1)


def test_hub_state_survives_a_restart(hub):
    """Stop the hub and start it again on the same state folder: a learner's login cookie is still
    good (same cookie secret, same database), and the state stays root-only."""
    hub_dir = hub.state / "hub"
    secret = hub_dir / "jupyterhub_cookie_secret"
    assert secret.exists() and stat.S_IMODE(secret.stat().st_mode) == 0o600
    assert stat.S_IMODE(hub_dir.stat().st_mode) == 0o700
    assert json.loads((hub_dir / "workshop.json").read_text())["ip"] == "127.0.0.1"
    name = hub.learners[1]
    session, reply = _login(hub, name)
    assert reply.status_code == 302
    assert session.get(f"{hub.url}/hub/api/user", timeout=30).json()["name"] == name
    before = secret.read_bytes()
    os.killpg(hub.proc.pid, signal.SIGTERM)
    hub.proc.wait(timeout=60)
    with open(hub.log, "a") as out:
        hub.proc = subprocess.Popen(
            [str(workshop_state.VENV_BIN / "jupyterhub"), "-f", str(hub_dir / "jupyterhub_config.py")],
            cwd=hub_dir, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    _wait_for_api(hub, 120)
    assert secret.read_bytes() == before
    again = session.get(f"{hub.url}/hub/api/user", timeout=30)
    assert again.status_code == 200 and again.json()["name"] == name


def test_workshop_down_removes_accounts_group_cgroups_and_state(tmp_path):
    """`make workshop-down` on a room of its own (one learner with a running server, one
    instructor): the hub stops, the learner's processes end, the accounts (with their homes), the
    instructors' group, the learner's control groups and the state folder are gone; the course
    folder (submissions, gradebook) is kept, root only. Accounts that existed before are kept."""
    from grader.workshop.limits import LearnerGroup, Limits

    tag = secrets.token_hex(3)
    learner, instructor, group = f"rlw-{tag}d", f"rlw-{tag}j", f"rlw-{tag}h"
    state = Path(tempfile.mkdtemp(prefix="rlw-down-", dir="/tmp"))
    os.chmod(state, 0o755)
    roster = tmp_path / "roster.txt"
    roster.write_text(f"{learner}\ninstructor: {instructor}\nnobody\n")  # nobody: an existing account
    env = {**os.environ, workshop_accounts.TEST_PASSWORD_ENV: PASSWORD}
    setup = subprocess.run([sys.executable, "-m", "grader.workshop.up", "--roster", str(roster), "--state", str(state),
                            "--port", str(_free_port()), "--labs", LAB, "--instructor-group", group, "--no-start"],
                           cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert setup.returncode == 0, setup.stderr[-2000:]
    port = json.loads((state / "hub" / "workshop.json").read_text())["port"]
    log = tmp_path / "hub.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([str(workshop_state.VENV_BIN / "jupyterhub"), "-f", str(state / "hub" / "jupyterhub_config.py")],
                                cwd=state / "hub", stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    room = Hub(f"http://127.0.0.1:{port}", state, [learner], instructor, proc, log)
    try:
        _wait_for_api(room, 150)
        _start_server(room, learner)
        assert _server_process(learner) is not None
        groups = LearnerGroup(learner, Limits()).create().folders
        down = subprocess.run([sys.executable, "-m", "grader.workshop.down", "--state", str(state)], cwd=ROOT,
                              env=env, capture_output=True, text=True, timeout=300)
        print(down.stdout)
        assert down.returncode == 0, down.stderr[-2000:]
        assert proc.wait(timeout=60) is not None
        assert workshop_down.users_processes([learner, instructor]) == []
        assert not workshop_accounts.user_exists(learner) and not workshop_accounts.user_exists(instructor)
        assert workshop_accounts.user_exists("nobody"), "an account that existed before was removed"
        assert not Path(f"/home/{learner}").exists()
        assert subprocess.run(["getent", "group", group], capture_output=True).returncode != 0
        assert [folder for folder in groups if folder.exists()] == []
        assert not state.exists()
        kept = [p for p in state.parent.glob(f"{state.name}-course-*")]
        assert len(kept) == 1 and (kept[0] / "gradebook.db").exists()
        assert stat.S_IMODE(kept[0].stat().st_mode) == 0o700
        # Bad input loses nothing: a folder that holds no room is refused, not deleted.
        again = subprocess.run([sys.executable, "-m", "grader.workshop.down", "--state", str(kept[0])], cwd=ROOT,
                               env=env, capture_output=True, text=True, timeout=120)
        assert again.returncode != 0 and "nothing to take down" in again.stderr
        assert (kept[0] / "gradebook.db").exists()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        from raylab.processes import kill_processes

        kill_processes(workshop_down.users_processes([learner, instructor]))
        LearnerGroup(learner, Limits()).remove()
        for name in (learner, instructor):
            subprocess.run(["userdel", "--remove", name], capture_output=True, timeout=60)
        subprocess.run(["groupdel", group], capture_output=True, timeout=60)
        shutil.rmtree(state, ignore_errors=True)
        for kept in state.parent.glob(f"{state.name}-course-*"):
            shutil.rmtree(kept, ignore_errors=True)
