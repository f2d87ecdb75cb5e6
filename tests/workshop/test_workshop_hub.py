"""The workshop hub (`make workshop`, issue 17), started for real with a 2-learner roster.

`grader.workshop` runs as it does for an instructor (system users, state folder, nbgrader release,
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

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from grader import workshop  # noqa: E402

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


def _processes_of(users: list[str]) -> list:
    import psutil

    uids = set()
    for name in users:
        try:
            uids.add(pwd.getpwnam(name).pw_uid)
        except KeyError:
            pass
    found = []
    for proc in psutil.process_iter(["uids"]):
        try:
            if proc.info["uids"] and proc.info["uids"].real in uids:
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    try:  # learners' servers run the course from this clone: say so, rather than servers failing
        workshop.require_clone_reachable()
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
    env = {**os.environ, workshop.TEST_PASSWORD_ENV: PASSWORD, "PYTHONPATH": str(ROOT)}
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "grader.workshop", "--roster", str(roster), "--state", str(state),
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
        from raylab.cluster import kill_processes

        kill_processes(_processes_of(users))
        from grader.workshop_limits import LearnerGroup, Limits

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


def _start_server(hub: Hub, name: str) -> dict:
    session, reply = _login(hub, name)
    assert reply.status_code == 302, reply.text[:500]
    xsrf = {"X-XSRFToken": session.cookies.get("_xsrf")}
    token = session.post(f"{hub.url}/hub/api/users/{name}/tokens", headers=xsrf, timeout=30,
                         json={"note": "test_workshop_hub", "expires_in": 900})
    assert token.status_code == 201, token.text[:500]
    auth = {"Authorization": f"token {token.json()['token']}"}
    started = requests.post(f"{hub.url}/hub/api/users/{name}/server", headers=auth, timeout=60)
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

    for proc in _processes_of([name]):
        try:
            if "jupyterhub.singleuser" in " ".join(proc.cmdline()):
                return proc.environ()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return {}


# Run as a learner: what can they read? Prints one JSON object.
PROBE = r"""
import json, os, sys
root, state, other_home, hidden_marker = sys.argv[1:5]
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
for top in (root, state, '/home'):
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
print(json.dumps({"readable": {t: readable(t) for t in targets}, "hidden_test_text_in": hits}))
"""


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
    listing = requests.get(f"{base}/assignments", params={"course_id": workshop.COURSE_ID},
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
    from grader.workshop_hub import user_environment

    me, other = hub.learners
    settings = json.loads((hub.state / "hub" / "workshop.json").read_text())
    user_environment(other, settings)  # the other learner's Ray token, as their server gets it
    other_home = Path(pwd.getpwnam(other).pw_dir)
    secret = other_home / "my-answers.ipynb"
    secret.write_text('{"answer": 42}')
    os.chown(secret, pwd.getpwnam(other).pw_uid, pwd.getpwnam(other).pw_gid)
    os.chmod(secret, 0o644)  # even a file the other learner left world-readable
    course = hub.state / "course"
    closed = [ROOT / "solutions" / LAB / f"{LAB}.ipynb", ROOT / "solutions", ROOT / "grader" / "mutants",
              ROOT / ".git" / "HEAD", ROOT / "tests", course, course / "gradebook.db",
              course / "source" / LAB / f"{LAB}.ipynb", hub.state / "hub" / "jupyterhub.sqlite",
              hub.state / "hub" / "passwords.txt", other_home, secret,
              hub.state / "exchange" / workshop.COURSE_ID / "inbound",
              other_home / ".ray" / "auth_token"]
    released = hub.state / "exchange" / workshop.COURSE_ID / "outbound" / LAB / f"{LAB}.ipynb"
    opened = [ROOT / "notebooks" / LAB / f"{LAB}.ipynb", released]
    assert all(p.exists() for p in closed + opened), [str(p) for p in closed + opened if not p.exists()]
    env = {**user_environment(me, settings), "HOME": pwd.getpwnam(me).pw_dir, "USER": me}
    out = subprocess.run(
        [shutil.which("runuser") or "/usr/sbin/runuser", "-u", me, "--", settings["python"], "-c", PROBE, str(ROOT), str(hub.state),
         str(other_home), "BEGIN HIDDEN TESTS", json.dumps([str(p) for p in closed + opened])],
        capture_output=True, text=True, timeout=120, env=env, cwd="/")
    assert out.returncode == 0, out.stderr[-2000:]
    seen = json.loads(out.stdout)
    print(json.dumps(seen, indent=1))
    assert [p for p in map(str, closed) if seen["readable"][p]] == []
    assert all(seen["readable"][str(p)] for p in opened)
    assert seen["hidden_test_text_in"] == []
    # The probe's search is not blind: root finds the hidden tests in the clone and the course.
    assert "BEGIN HIDDEN TESTS" in (ROOT / "solutions" / LAB / f"{LAB}.ipynb").read_text()


def test_instructor_gets_formgrader_on_the_course(hub):
    auth = _start_server(hub, hub.instructor)
    base = f"{hub.url}/user/{hub.instructor}"
    assert requests.get(f"{base}/formgrader", headers=auth, timeout=120).status_code == 200
    listing = requests.get(f"{base}/formgrader/api/assignments", headers=auth, timeout=120)
    assert listing.status_code == 200, listing.text[:500]
    assert LAB in {a["name"] for a in listing.json()}, listing.text[:500]


def _server_process(name: str):
    for proc in _processes_of([name]):
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

    from grader.workshop_limits import LearnerGroup, Limits

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
    course = {"assignment_id": LAB, "course_id": workshop.COURSE_ID}
    fetched = requests.post(f"{base}/fetch", data=course, headers=auth, timeout=120)
    assert fetched.status_code == 200, fetched.text[:500]
    entry = pwd.getpwnam(name)
    notebook = Path(entry.pw_dir) / LAB / f"{LAB}.ipynb"
    assert notebook.stat().st_uid == entry.pw_uid
    assert "BEGIN HIDDEN TESTS" not in notebook.read_text()
    submitted = requests.post(f"{base}/submit", data=course, headers=auth, timeout=120)
    assert submitted.status_code == 200, submitted.text[:500]
    assert any(a["status"] == "submitted" for a in submitted.json()["value"]), submitted.text[:500]
    result = workshop._nbgrader_api(workshop.State(hub.state)).collect(LAB)
    assert result["success"], result
    collected = hub.state / "course" / "submitted" / name / LAB / f"{LAB}.ipynb"
    assert collected.exists(), sorted(str(p) for p in (hub.state / "course").rglob("*"))[:40]


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
            [str(workshop.VENV_BIN / "jupyterhub"), "-f", str(hub_dir / "jupyterhub_config.py")],
            cwd=hub_dir, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    _wait_for_api(hub, 120)
    assert secret.read_bytes() == before
    again = session.get(f"{hub.url}/hub/api/user", timeout=30)
    assert again.status_code == 200 and again.json()["name"] == name
