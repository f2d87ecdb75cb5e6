"""`make workshop ROSTER=path`: set up and start the room's JupyterHub (issue 17).

Run as root on the machine the room connects to. From a roster file it:

- creates one system user per learner and instructor (``useradd``, home folder 0700), each with
  their own random password, written once to ``<state>/hub/passwords.txt`` (root only) for the
  instructor to hand out; users that already exist keep theirs. Login is PAM (JupyterHub's
  default authenticator) against those system passwords: no shared password. For tests only,
  ``RAYLAB_WORKSHOP_TEST_PASSWORD`` gives every *new* user that password;
- closes the answer key of this clone to other users: every top-level entry of the repository but
  the learner's part (the virtual environment, ``src/``, ``notebooks/``, ``workshop/`` and the
  environment files) loses its "others" permissions (``solutions/``, ``grader/``, ``tests/``,
  ``docs/``, ``.git/``, ``.grading/``...). Non-recursive: modes inside are kept;
- lays out the state folder (survives a restart of the hub):
  ``hub/`` (root 0700: the hub's sqlite database, cookie secret, config, passwords),
  ``course/`` (root 0700: nbgrader's course folder: source, release, gradebook, submissions),
  ``exchange/`` (nbgrader's exchange: root 1777, the course's inbound 3733: learners drop
  submissions but cannot list or remove anyone's), ``learner-config/`` (the learner JupyterLab
  configuration of ``workshop/learner-jupyter-config`` plus nbgrader's course id and exchange);
- copies the released notebooks (``notebooks/<lab>``) and their sources into the course folder
  and releases them to the exchange with ``nbgrader release_assignment`` (every finished lab by
  default; a lab in progress, ``grader.authoring.lab_status``, is never offered), and the Japanese
  edition's copies (``notebooks-ja/<lab>``) to ``exchange-ja/`` (:mod:`grader.workshop.editions`);
- writes ``hub/jupyterhub_config.py`` (:mod:`grader.workshop.hub` holds what it configures) and
  starts ``jupyterhub`` on 127.0.0.1 (``--ip``/``HUB_IP`` to listen elsewhere) with the
  configurable-http-proxy pinned in ``workshop/hub/package.json`` (``npm ci --prefix workshop/hub``).
"""
from __future__ import annotations

import argparse
import grp
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

from grader.workshop import confine, editions
from grader.workshop.accounts import Roster, ensure_group, ensure_user, group_exists, read_roster
from grader.workshop.limits import GIB, LearnerGroup, Limits, describe
from grader.workshop.state import (
    COURSE_ID, DEFAULT_STATE, INSTRUCTOR_GROUP, VENV_BIN, State, close_answer_key, free_port, lay_out,
    learner_python, record_created, require_clone_reachable)

ROOT = Path(__file__).resolve().parents[2]
HUB_NODE_DIR = ROOT / "workshop" / "hub"
PROXY = HUB_NODE_DIR / "node_modules" / ".bin" / "configurable-http-proxy"


def _nbgrader_api(state: State, exchange: Path | None = None, **coursedir):
    """nbgrader's own API (what formgrader calls) on the course folder's configuration, in this
    process: each ``nbgrader`` command would import nbgrader again (seconds each on 2 cores)."""
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(state.course)).load_config()
    for key, value in coursedir.items():
        setattr(config.CourseDirectory, key, value)
    config.ExchangeReleaseAssignment.force = True  # releasing again replaces the lab's release
    if exchange is not None:
        config.Exchange.root = str(exchange)
    return NbGraderAPI(CourseDirectory(config=config), config=config)


def _check(result: dict, what: str) -> None:
    if not result.get("success"):
        raise RuntimeError(f"{what} failed: {result.get('error') or result.get('log')}")


def release(state: State, labs: list[str], learners: list[str]) -> None:
    """Fill the course folder's gradebook (learners; each lab's cells, from ``nbgrader
    generate_assignment`` of the lab's source into a throw-away folder), put the course's learner
    notebooks (``notebooks/<lab>``, what ``grader.authoring.release`` published) in its release folder and
    release them to the exchange (``nbgrader release_assignment``)."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{state.course}/gradebook.db") as gradebook:
        for name in learners:
            gradebook.update_or_create_student(name)
    generator = _nbgrader_api(state, release_directory=".generated")
    releaser = _nbgrader_api(state)
    # The Japanese edition: same lab names and grade ids, its own release folder and exchange.
    releaser_ja = _nbgrader_api(state, state.exchange_ja, release_directory="release-ja")
    for lab in labs:
        for sub, origin in (("source", ROOT / "solutions" / lab), ("release", ROOT / "notebooks" / lab)):
            dest = state.course / sub / lab
            if dest.exists():
                shutil.rmtree(dest)
            shutil.copytree(origin, dest)
        _check(generator.generate_assignment(lab, force=True), f"generate_assignment {lab}")
        _check(releaser.release_assignment(lab), f"release_assignment {lab}")
        editions.stage_release(state.course, ROOT, lab)
        _check(releaser_ja.release_assignment(lab), f"release_assignment {lab} (Japanese)")
    shutil.rmtree(state.course / ".generated", ignore_errors=True)
    editions.close_release(state.exchange_ja, COURSE_ID)
    # nbgrader makes the exchange root 0777 and inbound 2733: add the sticky bit so that nobody
    # removes or renames what somebody else put there.
    os.chmod(state.exchange, 0o1777)
    inbound = state.exchange / COURSE_ID / "inbound"
    if inbound.exists():
        os.chmod(inbound, 0o3733)
    # The course folder belongs to the instructors' group (formgrader writes there as them).
    gid = grp.getgrnam(state.instructor_group).gr_gid
    for path in [state.course, *state.course.rglob("*")]:
        os.chown(path, 0, gid, follow_symlinks=False)
        mode = stat.S_IMODE(path.lstat().st_mode)
        os.chmod(path, (mode | 0o2070) & 0o2770 if path.is_dir() else (mode | 0o060) & 0o770)


def write_hub_config(state: State, roster: Roster, ip: str, port: int,
                     ssl_cert: str | None = None, ssl_key: str | None = None,
                     limits: Limits | None = None, confined: bool = False) -> Path:
    """``confined``: each server in its own mount namespace (grader.workshop.confine), running the
    course venv's own interpreter; else the servers run :func:`learner_python`."""
    shown = confine_shown(state) if confined else {}
    settings = {
        "root": str(ROOT), "python": str(VENV_BIN / "python") if confined else str(learner_python(state)),
        "confine_shown": shown, "proxy": str(PROXY),
        "venv_prefix": sys.prefix,
        "state": str(state.root), "hub_dir": str(state.hub), "course": str(state.course),
        "learner_config": str(state.learner_config),
        "instructor_config": str(state.instructor_config),
        "ip": ip, "port": port, "hub_port": free_port(), "proxy_api_port": free_port(),
        "learners": roster.learners, "instructors": roster.instructors, "course_id": COURSE_ID,
        "instructor_group": state.instructor_group,
        "ssl_cert": ssl_cert, "ssl_key": ssl_key,
        "limits": (limits or Limits()).as_dict(),
    }
    (state.hub / "workshop.json").write_text(json.dumps(settings, indent=2))
    config = state.hub / "jupyterhub_config.py"
    config.write_text(
        "# Written by `make workshop` (grader/workshop/up.py); rewritten at every start.\n"
        "import json\n"
        "from grader.workshop.hub import configure\n"
        f"configure(get_config(), json.load(open({str(state.hub / 'workshop.json')!r})))  # noqa: F821\n")
    return config


def confine_shown(state: State) -> dict[str, list[str]]:
    """What each side's servers see of the machine besides the system and their home."""
    python = confine.python_paths(ROOT)
    return {"learner": python + [str(state.exchange), str(state.exchange_ja), str(state.learner_config)],
            "instructor": python}


def install_proxy() -> None:
    if not PROXY.exists():
        subprocess.run(["npm", "ci", "--prefix", str(HUB_NODE_DIR), "--no-audit", "--no-fund"],
                       check=True, timeout=600)


def probe_limits(limits: Limits) -> str:
    """Which per-learner limits this machine enforces: a throw-away group, described."""
    group = LearnerGroup("probe", limits).create()
    for folder in group.folders:
        try:
            folder.rmdir()
        except OSError:
            pass
    return describe(group).split(": ", 1)[1]


def set_up(roster: Roster, state: State, *, ip: str, port: int, labs: list[str],
           ssl_cert: str | None = None, ssl_key: str | None = None,
           limits: Limits | None = None) -> Path:
    if os.geteuid() != 0:
        raise SystemExit("make workshop creates system users and runs the hub as root: run it as root")
    require_clone_reachable()
    install_proxy()
    # nbgrader runs console scripts of its environment (alembic) by name.
    os.environ["PATH"] = f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}"
    group_is_new = not group_exists(state.instructor_group)
    ensure_group(state.instructor_group)
    new_passwords = {}
    for name in roster.everyone:
        groups = (state.instructor_group,) if name in roster.instructors else ()
        if (password := ensure_user(name, groups)):
            new_passwords[name] = password
    closed = close_answer_key()
    lay_out(state, roster)
    # What `make workshop-down` undoes: only what this set-up created or changed.
    record_created(state, users=list(new_passwords), group=state.instructor_group if group_is_new else None,
                   closed=closed)
    if new_passwords:
        passwords = state.hub / "passwords.txt"
        fd = os.open(passwords, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(fd, "a") as handle:
            handle.writelines(f"{name} {pw}\n" for name, pw in new_passwords.items())
        print(f"[workshop] {len(new_passwords)} new account(s); passwords in {passwords} (root only)")
    if closed:
        print(f"[workshop] closed to other users: {', '.join(Path(p).name for p in closed)}")
    release(state, labs, roster.learners)
    print(f"[workshop] released {len(labs)} lab(s) to the exchange {state.exchange}")
    limits = limits or Limits()
    print(f"[workshop] per-learner limits: {probe_limits(limits)}")
    problem = confine.probe(confine_shown(state)["learner"])
    print("[workshop] learners' servers: " + (
        "own mount namespace (only their home, the course's Python and the exchange; private /tmp; "
        "hidepid=2 /proc), the grader's Python" if problem is None else
        f"NOT confined here ({problem}): other checkouts, processes and /tmp are visible to learners, "
        f"and they run {learner_python(state)}"))
    return write_hub_config(state, roster, ip, port, ssl_cert, ssl_key, limits, confined=problem is None)


def offered_labs(named: list[str]) -> list[str]:
    """The labs a room gets: those named (default: every finished lab); SystemExit for an unknown
    lab or one in progress, before anything is set up."""
    from grader.authoring import lab_status
    from grader.grading.course import labs as course_labs

    unknown = sorted(set(named) - set(course_labs()))
    if unknown:
        raise SystemExit(f"no such lab: {' '.join(unknown)} (labs: {' '.join(lab_status.finished_labs())})")
    lab_status.refuse_in_progress(named, "offered to learners")
    return list(named) or lab_status.finished_labs()


def release_more(state: State, labs: list[str]) -> int:
    """``make workshop-release LABS=..``: release more labs while the room runs, into the course's
    gradebook too (a lab released by hand with ``nbgrader release_assignment`` is not there, and
    the formgrader then never shows it)."""
    from grader.authoring import lab_status

    settings_path = state.hub / "workshop.json"
    if not settings_path.exists():
        raise SystemExit(f"no workshop in {state.root} ({settings_path} is missing): start it with make workshop")
    if not labs:
        raise SystemExit(f"name the labs to release: LABS=\"..\" from {' '.join(lab_status.finished_labs())}")
    labs = offered_labs(labs)
    settings = json.loads(settings_path.read_text())
    state.instructor_group = settings.get("instructor_group", state.instructor_group)
    os.environ["PATH"] = f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}"
    release(state, labs, settings["learners"])
    print(f"[workshop] released {' '.join(labs)} to the exchange {state.exchange} and the course gradebook")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--roster", help="one learner a line; 'instructor: login' lines")
    parser.add_argument("--state", default=str(DEFAULT_STATE), help="state folder (default %(default)s)")
    parser.add_argument("--ip", default=os.environ.get("HUB_IP") or "127.0.0.1")
    parser.add_argument("--port", type=int, default=int(os.environ.get("HUB_PORT") or 8000))
    parser.add_argument("--labs", nargs="*", help="labs to release (default: every finished lab)")
    parser.add_argument("--instructor-group", default=INSTRUCTOR_GROUP)
    parser.add_argument("--ssl-cert", default=os.environ.get("HUB_SSL_CERT"), help="TLS certificate (PEM)")
    parser.add_argument("--ssl-key", default=os.environ.get("HUB_SSL_KEY"), help="its private key")
    parser.add_argument("--learner-cpus", type=float, default=float(os.environ.get("LEARNER_CPUS") or 2),
                        help="CPU time per learner, in cores (cgroup quota; 0: none)")
    parser.add_argument("--learner-memory-gib", type=float,
                        default=float(os.environ.get("LEARNER_MEMORY_GIB") or 6),
                        help="memory per learner, all their processes (cgroup; 0: none)")
    parser.add_argument("--learner-tasks", type=int, default=int(os.environ.get("LEARNER_TASKS") or 4096),
                        help="processes + threads per learner (cgroup pids.max and RLIMIT_NPROC; 0: none)")
    parser.add_argument("--no-start", action="store_true", help="set up only")
    parser.add_argument("--release-only", action="store_true",
                        help="release --labs on the running room's state folder (gradebook, exchange) and stop")
    args = parser.parse_args(argv)
    if args.release_only:
        return release_more(State(Path(args.state).resolve()), args.labs or [])
    if not args.roster:
        parser.error("--roster is required (one learner login a line, 'instructor: login' lines)")
    config = set_up(read_roster(args.roster), State(Path(args.state).resolve(), args.instructor_group), ip=args.ip,
                    port=args.port, labs=offered_labs(args.labs or []), ssl_cert=args.ssl_cert,
                    ssl_key=args.ssl_key,
                    limits=Limits(cpus=args.learner_cpus or None,
                                  memory_bytes=int(args.learner_memory_gib * GIB) or None,
                                  tasks=args.learner_tasks or None, nproc=args.learner_tasks or None))
    if args.no_start:
        return 0
    scheme = "https" if args.ssl_cert else "http"
    print(f"[workshop] JupyterHub on {scheme}://{args.ip}:{args.port}", flush=True)
    os.chdir(config.parent)
    os.execv(str(VENV_BIN / "jupyterhub"), [str(VENV_BIN / "jupyterhub"), "-f", str(config)])


if __name__ == "__main__":
    sys.exit(main())
