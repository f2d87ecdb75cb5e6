"""`make workshop-down`: take the room down, undoing what ``make workshop`` set up (as root).

In this order: stop the hub (its pid file; JupyterHub stops the servers it spawned) and its proxy;
kill every process still running as an account the set-up created (kernels, Ray clusters,
terminals); remove those accounts with their homes (``userdel --remove``), the instructors' group
if the set-up created it, and each learner's control group; give this clone's top-level entries
back the permissions they had before (``close_answer_key``); remove the state folder.

The course folder (``<state>/course``: submissions, the gradebook, feedback) holds the only copy
of the class's work and grades, so it is kept, moved next to the state folder as
``<state>-course-<date>`` and closed to everyone but root, unless ``--purge``. Accounts that
existed before ``make workshop`` (the roster may name real users) are left alone: only those
listed in ``<state>/hub/created.json`` are removed.
"""
from __future__ import annotations

import argparse
import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from grader.workshop.limits import LearnerGroup, Limits
from grader.workshop.state import CREATED, DEFAULT_STATE, State


def _stop_pid_file(path: Path, wait_s: float = 30.0) -> int | None:
    """SIGTERM the process of ``path``'s pid and wait for it; SIGKILL after ``wait_s``."""
    try:
        pid = int(path.read_text().strip())
        os.kill(pid, signal.SIGTERM)
    except (OSError, ValueError):
        return None
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return pid
        time.sleep(0.3)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    return pid


def users_processes(names: list[str]) -> list:
    """The live processes whose real uid is one of ``names``' accounts (names without one: none)."""
    import psutil

    uids = set()
    for name in names:
        try:
            uids.add(pwd.getpwnam(name).pw_uid)
        except KeyError:
            continue
    found = []
    for proc in psutil.process_iter(["uids"]):
        try:
            if proc.info["uids"] and proc.info["uids"].real in uids:
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


def kill_users_processes(names: list[str]) -> int:
    """Kill every process whose real uid is one of ``names``' accounts; return how many."""
    import psutil

    found = users_processes(names)
    for proc in found:
        try:
            proc.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(found, timeout=15)
    return len(found)


def take_down(state: State, purge: bool = False) -> dict:
    """Undo the set-up recorded in ``state``; return what was done (the tests read it)."""
    settings_path, created_path = state.hub / "workshop.json", state.hub / CREATED
    if not created_path.exists():
        raise SystemExit(f"{state.root} holds no workshop set-up ({created_path} is missing): nothing to "
                         "take down. Pass the STATE= folder `make workshop` used.")
    created = json.loads(created_path.read_text())
    settings = json.loads(settings_path.read_text()) if settings_path.exists() else {}
    done = {"hub": _stop_pid_file(state.hub / "jupyterhub.pid"),
            "proxy": _stop_pid_file(state.hub / "proxy.pid", wait_s=5)}
    done["killed"] = kill_users_processes(created["users"])
    for name in settings.get("learners", []):
        LearnerGroup(name, Limits()).remove()
    done["users"] = [name for name in created["users"]
                     if subprocess.run(["userdel", "--remove", name], capture_output=True, timeout=60).returncode == 0]
    done["groups"] = [group for group in created["groups"]
                      if subprocess.run(["groupdel", group], capture_output=True, timeout=60).returncode == 0]
    for entry, mode in created["closed"].items():
        if os.path.exists(entry):
            os.chmod(entry, mode)
    done["kept"] = None
    if state.course.exists() and not purge:
        kept = state.root.with_name(f"{state.root.name}-course-{time.strftime('%Y%m%d-%H%M%S')}")
        shutil.move(str(state.course), kept)
        for path in [kept, *kept.rglob("*")]:  # its group is gone: root only
            os.chown(path, 0, 0, follow_symlinks=False)
        os.chmod(kept, 0o700)
        done["kept"] = str(kept)
    shutil.rmtree(state.root)
    return done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--state", default=str(DEFAULT_STATE), help="the state folder (default %(default)s)")
    parser.add_argument("--purge", action="store_true", help="also delete the course folder (grades, submissions)")
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        raise SystemExit("make workshop-down removes system users: run it as root")
    done = take_down(State(Path(args.state).resolve()), purge=args.purge)
    print(f"[workshop] hub stopped ({done['hub'] or 'was not running'}); {done['killed']} process(es) of "
          f"the room's accounts killed; removed accounts: {' '.join(done['users']) or 'none'}; groups: "
          f"{' '.join(done['groups']) or 'none'}; state folder {args.state} removed")
    print(f"[workshop] the course folder (submissions, gradebook, feedback) is kept in {done['kept']}"
          if done["kept"] else "[workshop] the course folder was deleted (--purge)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
