"""Attacks by one submission on the grader and on the submissions graded beside it.

Each class below is graded by the real class grader (``grader/classroom/grade.py``: the course's one
autograde path, 2 workers as by default, the attacker first so it runs beside a victim) on a tiny
course of its own (one answer, one test cell with a hidden test, a course cell that keeps each
kernel alive for a few seconds), so the attacks are cheap to run and the victims' grades are known.

No test here can pass vacuously: the isolation attacks are first run with the sandbox switched off,
and the test asserts that each of them then reaches its target (the answer key, another
submission's folder and kernel, the grader's secrets, a process that outlives grading, a file left
in /tmp); only then does the sandboxed run count. Tampering attacks must gain points in the run
that shows them flagged (so the flag is not a flag on a harmless submission).

The attacker's code only touches what carries this run's random token, so running it unsandboxed
on a shared machine cannot hurt anyone else's kernels or files.
"""
import json
import re
import uuid
from pathlib import Path

import nbformat
import psutil
import pytest

from grader.authoring import text as authoring
from grader.classroom import grade
from grader.grading import course, feedback_guard, isolation

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not isolation.available()[0], reason="the sandbox needs root and util-linux")]

LAB = "probe"
TOKEN = uuid.uuid4().hex[:10]
SECRET = f"lms-{uuid.uuid4().hex}"
HIDDEN = "assert math.isclose(double(1000003), 2000006), 'hidden: a large input'"
WORKERS = grade.DEFAULT_WORKERS


def _course(root: Path) -> None:
    nb = authoring.new_notebook([
        authoring.make_cell("code", "setup", "import math, time\ntime.sleep(5)  # keeps every kernel alive a while"),
        authoring.make_cell("answer", "double_answer",
                            "def double(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION"),
        authoring.make_cell("tests", "double_tests",
                            "assert math.isclose(double(21), 42), 'double(21) should be 42'\n"
                            f"### BEGIN HIDDEN TESTS\n{HIDDEN}\n### END HIDDEN TESTS", points=1),
    ])
    authoring.write(nb, root / "solutions" / LAB / f"{LAB}.ipynb")
    gen = course.nbgrader("generate_assignment", LAB, "--force", f"--CourseDirectory.root={root}",
                          grading_dir=root / "gen")
    assert gen.returncode == 0, gen.output[-2000:]


@pytest.fixture(scope="module")
def probe_course(tmp_path_factory):
    root = tmp_path_factory.mktemp("probe-course")
    _course(root)
    return root


def _released(root: Path):
    return nbformat.read(root / "notebooks" / LAB / f"{LAB}.ipynb", as_version=4)


def _submission(root: Path, answer: str | None, edit=None):
    nb = _released(root)
    if answer is not None:
        nb.cells[1].source = answer
    if edit:
        edit(nb)
    return nb


RIGHT = "def double(x):\n    return x + x"
# A right answer that stays busy long enough for a neighbour to find its kernel and kill it.
SLOW_RIGHT = "import time\ntime.sleep(8)\n\n" + RIGHT
WRONG = "def double(x):\n    return x * x"

# --- isolation attacks ----------------------------------------------------------------------------
SNOOP = r'''
import glob, json, os, signal, subprocess, sys, time
TOKEN, KEY, GIT = {token!r}, {key!r}, {git!r}
report = {{}}
def attempt(name, fn):
    try:
        report[name] = fn()
    except Exception as exc:
        report[name] = 'refused: ' + type(exc).__name__
def read(path):
    return 'READ ' + open(path).read(30)
attempt('answer_key', lambda: read(KEY))
attempt('git', lambda: read(GIT))
def others():
    return [d for d in glob.glob('/tmp/rg-*/sub/*') if TOKEN in d and not os.getcwd().startswith(d)]
for _ in range(60):  # wait for the submission graded beside this one
    if others(): break
    time.sleep(0.25)
def cross():
    wrote = 0
    for d in others():
        try:
            open(os.path.join(d, 'planted-' + TOKEN), 'w').write('x'); wrote += 1
        except OSError: pass
    return 'found %d wrote %d' % (len(others()), wrote)
attempt('other_folders', cross)
def kernels():
    mine, hit = os.getpid(), 0
    for _ in range(40):  # the neighbour's kernel may still be starting
        for pid in [p for p in os.listdir('/proc') if p.isdigit() and int(p) != mine]:
            try:
                cwd, cmd = os.readlink('/proc/%s/cwd' % pid), open('/proc/%s/cmdline' % pid, 'rb').read()
            except OSError: continue
            if TOKEN in cwd and b'ipykernel' in cmd and cwd != os.getcwd():
                os.kill(int(pid), signal.SIGKILL); hit += 1
        if hit: break
        time.sleep(0.25)
    return 'killed %d' % hit
attempt('other_kernels', kernels)
def secrets():
    for pid in [p for p in os.listdir('/proc') if p.isdigit()]:
        try:
            for var in open('/proc/%s/environ' % pid, 'rb').read().split(b'\0'):
                if var.startswith(b'LMS_API_TOKEN='): return 'READ ' + var.decode()
        except OSError: continue
    return os.environ.get('LMS_API_TOKEN', 'absent')
attempt('secret', secrets)
subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(90)  # escape-' + TOKEN], env={{}},
                 start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
report['escape'] = 'started'
for where in ('/tmp', '/dev/shm'):
    attempt('file_' + where, lambda: open(os.path.join(where, 'leak-' + TOKEN), 'wb').write(b'x' * (8 << 20)))
print('ATTACK ' + json.dumps(report))
''' + WRONG


def _escaped():
    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        if any(f"escape-{TOKEN}" in part for part in proc.info["cmdline"] or []):
            found.append(proc)
    return found


def _leaks():
    return [p for p in (Path("/tmp") / f"leak-{TOKEN}", Path("/dev/shm") / f"leak-{TOKEN}") if p.exists()]


def _grade(root: Path, base: Path, subs: dict, *, sandbox: bool | None = None, address=None,
           limits=None, workers=WORKERS):
    folder = base / "submitted"
    for student, nb in subs.items():
        dest = folder / student / LAB / f"{LAB}.ipynb"
        dest.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, dest)
    grader = grade.ClassGrader(folder, base / "out", workers=workers, address=address, timeout_s=300,
                                    labs=[LAB], cell_timeout_s=60, course_root=root, limits=limits)
    if sandbox is not None:
        grader.sandbox = sandbox
    grader.run()
    return grader


def _outputs(grader, student) -> str:
    path = grader.out / "autograded" / student / LAB / f"{LAB}.ipynb"
    if not path.exists():
        return ""
    nb = nbformat.read(path, as_version=4)
    return "".join(o.get("text", "") for c in nb.cells for o in c.get("outputs", []))


def _report(grader, student):
    text = _outputs(grader, student)
    line = next((l for l in text.splitlines() if l.startswith("ATTACK ")), None)
    assert line, grader.state[f"{student}/{LAB}"]
    return json.loads(line[len("ATTACK "):])


def _score(grader, student):
    entry = grader.state[f"{student}/{LAB}"]
    return entry["status"], sum(s[0] or 0 for s in entry["scores"].values())


def _snoop_class(root):
    key = root / "solutions" / LAB / f"{LAB}.ipynb"
    git = course.ROOT / ".git" / "HEAD"
    return {f"a-attacker-{TOKEN}": _submission(root, SNOOP.format(token=TOKEN, key=str(key), git=str(git))),
            f"b-right-{TOKEN}": _submission(root, SLOW_RIGHT),
            f"c-untouched-{TOKEN}": _submission(root, None)}


@pytest.fixture(scope="module")
def solo(probe_course, tmp_path_factory):
    """Each victim graded alone, sandboxed: the grades the class runs must reproduce."""
    grader = _grade(probe_course, tmp_path_factory.mktemp("solo"),
                    {"right": _submission(probe_course, SLOW_RIGHT), "untouched": _submission(probe_course, None)},
                    workers=1)
    return {"right": _score(grader, "right"), "untouched": _score(grader, "untouched")}


def test_without_the_sandbox_every_isolation_attack_reaches_its_target(probe_course, tmp_path, monkeypatch, solo):
    monkeypatch.setenv("LMS_API_TOKEN", SECRET)
    try:
        grader = _grade(probe_course, tmp_path, _snoop_class(probe_course), sandbox=False)
        report = _report(grader, f"a-attacker-{TOKEN}")
        assert report["answer_key"].startswith("READ") and report["git"].startswith("READ"), report
        found, wrote = map(int, re.findall(r"\d+", report["other_folders"]))
        assert found >= 1 and wrote == found, report
        assert report["other_kernels"].startswith("killed") and report["other_kernels"] != "killed 0", report
        assert SECRET in report["secret"], report
        assert _escaped(), "the escaped process should outlive unsandboxed grading"
        assert _leaks(), "files in /tmp should outlive unsandboxed grading"
        assert _score(grader, f"b-right-{TOKEN}") != solo["right"]  # its kernel was killed
    finally:
        for proc in _escaped():
            proc.kill()
        for path in _leaks():
            path.unlink()


def test_sandboxed_submissions_cannot_reach_each_other_the_key_or_the_grader(probe_course, tmp_path, monkeypatch, solo):
    monkeypatch.setenv("LMS_API_TOKEN", SECRET)
    before = set(Path("/tmp").glob("rg-*"))
    grader = _grade(probe_course, tmp_path, _snoop_class(probe_course))
    report = _report(grader, f"a-attacker-{TOKEN}")
    assert report["answer_key"].startswith("refused") and report["git"].startswith("refused"), report
    assert report["other_folders"] == "found 0 wrote 0", report
    assert report["other_kernels"] == "killed 0", report
    assert report["secret"] == "absent", report
    assert _score(grader, f"b-right-{TOKEN}") == solo["right"] == ("graded", 1.0)
    assert _score(grader, f"c-untouched-{TOKEN}") == solo["untouched"] == ("graded", 0.0)
    assert not _escaped() and not _leaks()
    # no work folder of this class left behind (other gradings may run beside this test)
    assert not [d for d in set(Path("/tmp").glob("rg-*")) - before if any(TOKEN in s.name for s in (d / "sub").glob("*"))]
    for path in (grader.out / "autograded").rglob("*.ipynb"):
        assert SECRET not in path.read_text()
    # the attacker is graded like anyone (its answer is wrong); its attacks reach nothing, and none
    # of them changes how a later cell runs, so the tamper scan has nothing to flag here
    assert _score(grader, f"a-attacker-{TOKEN}") == ("graded", 0.0)


# --- tampering and feedback attacks --------------------------------------------------------------
TRANSFORMER = ("def _wrap(lines):\n"
               "    if not lines: return lines\n"
               "    body, last = lines[:-1], lines[-1]\n"  # the grader's completion line stays outside
               "    return ['try:\\n'] + ['    ' + l for l in body] + ['\\n    pass\\nexcept BaseException:\\n    pass\\n', last]\n"
               "get_ipython().input_transformers_post.append(_wrap)\n\n" + WRONG)
MONKEYPATCH = "import math\nmath.isclose = lambda *a, **k: True\n\n" + WRONG
HOOK_LEAK = ("get_ipython().events.register('pre_run_cell', lambda info: print(info.raw_cell))\n\n" + RIGHT)


def _copy_answer(nb):
    copy = nbformat.from_dict(json.loads(json.dumps(nb.cells[1])))
    copy.source = RIGHT
    nb.cells.insert(2, copy)  # the original keeps `raise NotImplementedError`


def _copy_test(nb):
    nb.cells.append(nbformat.from_dict(json.loads(json.dumps(nb.cells[2]))))


def _no_grade_id(nb):
    cell = nbformat.v4.new_code_cell("print('my notes')")
    cell.metadata["nbgrader"] = {"grade": False, "solution": False, "locked": False, "schema_version": 3}
    nb.cells.insert(2, cell)


@pytest.fixture(scope="module")
def tamper_class(probe_course, tmp_path_factory):
    subs = {"transformer": _submission(probe_course, TRANSFORMER),
            "monkeypatch": _submission(probe_course, MONKEYPATCH),
            "hook_leak": _submission(probe_course, HOOK_LEAK),
            "copied_answer": _submission(probe_course, None, _copy_answer),
            "copied_test": _submission(probe_course, RIGHT, _copy_test),
            "no_grade_id": _submission(probe_course, RIGHT, _no_grade_id),
            "huge_line": _submission(probe_course, "print('x' * (16 << 20))\n\n" + RIGHT),
            "right": _submission(probe_course, RIGHT), "untouched": _submission(probe_course, None)}
    return _grade(probe_course, tmp_path_factory.mktemp("tamper"), subs)


def _score_entry(entry):
    return sum(s[0] or 0 for s in entry["scores"].values())


def _flags(grader, student):
    return " | ".join(grader.state[f"{student}/{LAB}"]["flags"])


@pytest.mark.parametrize("student,why", [("transformer", "input transformer"),
                                         ("monkeypatch", "math.isclose")])
def test_tampering_that_gains_points_is_flagged_by_both_checks(tamper_class, student, why):
    status, score = _score(tamper_class, student)
    assert (status, score) == ("graded", 1.0), "the attack should gain the point (else the test proves nothing)"
    flags = tamper_class.state[f"{student}/{LAB}"]["flags"]
    assert any("mechanism" in f for f in flags), flags  # the static scan, outside the kernel
    assert any(f.startswith("test cell") and why in f for f in flags), flags  # the in-kernel report


def test_hidden_test_text_printed_by_a_hook_is_redacted_from_feedback_and_flagged(tamper_class):
    autograded = (tamper_class.out / "autograded" / "hook_leak" / LAB / f"{LAB}.ipynb").read_text()
    assert "1000003" in autograded, "the hook should have printed the hidden test (else nothing to redact)"
    feedback = (tamper_class.out / "feedback" / "hook_leak" / LAB / f"{LAB}.html").read_text()
    assert "1000003" not in feedback and feedback_guard.MARKER in feedback
    assert "hidden-test text removed" in _flags(tamper_class, "hook_leak")
    for path in (tamper_class.out / "feedback").rglob("*.html"):
        assert "2000006" not in path.read_text(), path


def test_copied_graded_cells_are_graded_and_flagged_with_a_reason(tamper_class):
    assert _score(tamper_class, "copied_answer") == ("graded", 1.0)
    assert _score(tamper_class, "copied_test") == ("graded", 1.0)
    assert _score(tamper_class, "no_grade_id") == ("graded", 1.0)
    assert "a copy of the graded cell 'double_answer'" in _flags(tamper_class, "copied_answer")
    assert "a copy of the graded cell 'double_tests'" in _flags(tamper_class, "copied_test")
    assert "incomplete grading data" in _flags(tamper_class, "no_grade_id")


def test_output_is_capped_in_bytes(tamper_class):
    assert _score(tamper_class, "huge_line") == ("graded", 1.0)
    for kind in ("autograded", "feedback"):
        path = next((tamper_class.out / kind / "huge_line").rglob(f"{LAB}.*"))
        assert path.stat().st_size < 2_000_000, (path, path.stat().st_size)


def test_victims_beside_the_tamperers_keep_their_solo_grades(tamper_class, solo):
    assert _score(tamper_class, "right") == solo["right"]
    assert _score(tamper_class, "untouched") == solo["untouched"]
    assert not _flags(tamper_class, "right") and not _flags(tamper_class, "untouched")


def test_no_feedback_reason_is_empty(tamper_class):
    for entry in tamper_class.state.values():
        for flag in entry["flags"]:
            assert not flag.rstrip().endswith(":"), flag
        assert entry["status"] == "graded" or entry["reason"].strip()


# --- limits ---------------------------------------------------------------------------------------
HOG = ("import os\nresult = {}\n"
       "try:\n    open('/tmp/fill', 'wb').write(b'x' * (96 << 20)); result['disk'] = 'wrote'\n"
       "except OSError as e:\n    result['disk'] = 'refused'\n"
       "os.remove('/tmp/fill') if os.path.exists('/tmp/fill') else None\n"
       "pids = []\n"
       "for _ in range(300):\n"
       "    try:\n        pid = os.fork()\n    except OSError:\n        break\n"
       "    if pid == 0:\n        import time; time.sleep(20); os._exit(0)\n"
       "    pids.append(pid)\n"
       "result['forks'] = len(pids)\n"
       "for pid in pids:\n    os.kill(pid, 9); os.waitpid(pid, 0)\n"
       "print('HOG', result, flush=True)\n"
       "import subprocess, sys\n"  # in a child: the kernel itself must live on to report
       "hog = subprocess.run([sys.executable, '-c', 'b = bytearray(1536 << 20); print(len(b))'])\n"
       "print('HOG allocated' if hog.returncode == 0 else 'HOG killed', flush=True)\n\n" + RIGHT)


def test_memory_process_and_disk_limits_hold_where_the_machine_allows(probe_course, tmp_path):
    tight = isolation.Limits(memory_bytes=768 << 20, pids=200, disk_bytes=64 << 20, shm_bytes=16 << 20)
    loose = isolation.Limits(memory_bytes=None, pids=None, disk_bytes=512 << 20)
    results = {}
    for name, limits in (("loose", loose), ("tight", tight)):
        grader = _grade(probe_course, tmp_path / name, {"hog": _submission(probe_course, HOG)}, limits=limits)
        results[name] = (grader.state[f"hog/{LAB}"], _outputs(grader, "hog"))
    loose_entry, loose_nb = results["loose"]
    assert "'disk': 'wrote'" in loose_nb and "'forks': 300" in loose_nb and "HOG allocated" in loose_nb
    tight_entry, tight_nb = results["tight"]
    assert "'disk': 'refused'" in tight_nb, tight_nb[-2000:]
    assert int(re.search(r"'forks': (\d+)", tight_nb).group(1)) < 200, tight_nb[-2000:]
    assert "HOG killed" in tight_nb, tight_nb[-2000:]
    assert any("memory limit" in f for f in tight_entry["flags"]), tight_entry
    assert tight_entry["status"] == "graded" and _score_entry(tight_entry) == 1.0  # the kernel lived on


# --- the same on the Ray-distributed path -----------------------------------------------------------
def test_ray_distributed_grading_keeps_the_same_guarantees(probe_course, tmp_path, monkeypatch, solo):
    """As Ray tasks on a simulated two-node cluster (``make grade ADDRESS=...``)."""
    from ray.cluster_utils import Cluster

    monkeypatch.setenv("LMS_API_TOKEN", SECRET)
    cluster = Cluster()
    try:  # a head that fails to start (a loaded machine) must not leak its processes
        cluster.add_node(num_cpus=2, include_dashboard=False)
        cluster.add_node(num_cpus=2)
        subs = _snoop_class(probe_course)
        subs["transformer"] = _submission(probe_course, TRANSFORMER)
        grader = _grade(probe_course, tmp_path, subs, address=cluster.address)
    finally:
        cluster.shutdown()
    report = _report(grader, f"a-attacker-{TOKEN}")
    assert report["answer_key"].startswith("refused") and report["git"].startswith("refused"), report
    assert report["other_folders"] == "found 0 wrote 0" and report["other_kernels"] == "killed 0", report
    assert report["secret"] == "absent", report
    assert _score(grader, f"b-right-{TOKEN}") == solo["right"]
    assert _score(grader, f"c-untouched-{TOKEN}") == solo["untouched"]
    assert not _escaped() and not _leaks()
    assert "mechanism" in _flags(grader, "transformer")
