"""The workshop hub's pieces that need no root and no running hub (fast tier): the roster file,
what stays readable in the clone, and the JupyterHub configuration `make workshop` writes."""
import json
from pathlib import Path

import pytest
from traitlets.config import Config

from grader.workshop import accounts as workshop_accounts, state as workshop_state
from grader.workshop.hub import configure

ROOT = Path(__file__).resolve().parents[2]


def test_roster_learners_instructors_comments(tmp_path):
    roster = tmp_path / "roster.txt"
    roster.write_text("# room 2\nbob\n\ninstructor: alice  # lead\n carol \nlearner: dave\n")
    got = workshop_accounts.read_roster(roster)
    assert got.learners == ["bob", "carol", "dave"]
    assert got.instructors == ["alice"]


@pytest.mark.parametrize("text", ["root\n", "Bob Smith\n", "bob\nbob\n", "teacher: alice\n", "# nobody\n",
                                  "../etc\n"])
def test_roster_refuses_bad_lines(tmp_path, text):
    roster = tmp_path / "roster.txt"
    roster.write_text(text)
    with pytest.raises(ValueError):
        workshop_accounts.read_roster(roster)


def test_answer_key_is_not_on_the_learner_visible_list():
    for name in ("solutions", "grader", "tests", ".git", ".grading", "docs", "scripts", "nbgrader_config.py"):
        assert name not in workshop_state.LEARNER_VISIBLE
    # What a learner's server needs is there.
    assert {".venv", "src", "notebooks", "workshop"} <= workshop_state.LEARNER_VISIBLE


def test_close_answer_key_touches_only_the_hidden_entries(tmp_path):
    for name in ("solutions", "notebooks", "src"):
        (tmp_path / name).mkdir(mode=0o755)
    (tmp_path / "Makefile").write_text("")
    changed = workshop_state.close_answer_key(tmp_path)
    assert list(changed) == [str(tmp_path / "solutions")]
    assert (tmp_path / "solutions").stat().st_mode & 0o777 == 0o750
    assert (tmp_path / "notebooks").stat().st_mode & 0o777 == 0o755


def test_hub_configuration(tmp_path):
    settings = {"ip": "127.0.0.1", "port": 8000, "hub_port": 8081, "proxy_api_port": 8001,
                "hub_dir": str(tmp_path), "proxy": "/x/configurable-http-proxy", "python": "/x/python",
                "venv_prefix": "/x", "course": "/s/course", "learner_config": "/s/learner-config",
                "instructor_config": "/s/instructor-config", "learners": ["bob"],
                "instructors": ["alice"], "ssl_cert": None, "ssl_key": None,
                "limits": {"cpus": 2.0, "memory_bytes": 6 << 30, "tasks": 4096, "nproc": 4096}}
    c = Config()
    configure(c, json.loads(json.dumps(settings)))
    assert c.JupyterHub.ip == "127.0.0.1" and c.JupyterHub.hub_ip == "127.0.0.1"
    assert c.JupyterHub.db_url == f"sqlite:///{tmp_path}/jupyterhub.sqlite"
    assert c.JupyterHub.cookie_secret_file == f"{tmp_path}/jupyterhub_cookie_secret"
    assert c.Authenticator.allowed_users == {"alice", "bob"}
    assert c.Authenticator.admin_users == {"alice"}
    assert c.JupyterHub.authenticator_class == "pam"
    assert "ssl_cert" not in c.JupyterHub
    assert c.Spawner.cmd == ["/x/python", "-m", "jupyterhub.singleuser"]
    # Learners' servers get the per-learner limits, instructors' do not.
    from grader.workshop.hub import WorkshopSpawner

    assert c.JupyterHub.spawner_class is WorkshopSpawner
    assert c.WorkshopSpawner.limited_users == {"bob"}
    assert c.WorkshopSpawner.learner_limits["memory_bytes"] == 6 << 30


def test_a_clone_other_users_cannot_enter_stops_the_hub_with_its_reason():
    import shutil
    import tempfile

    from grader.workshop.state import blocked_for_others, require_clone_reachable

    base = Path(tempfile.mkdtemp(prefix="rlw-clone-", dir="/tmp"))  # pytest's own folders are 0700
    try:
        base.chmod(0o755)
        closed = base / "closed"  # like the folder `mktemp -d` makes: 0700
        (closed / "clone" / "src").mkdir(parents=True)
        for folder in (closed / "clone", closed / "clone" / "src"):
            folder.chmod(0o755)
        closed.chmod(0o700)
        if blocked_for_others(base) is not None:
            pytest.skip(f"{blocked_for_others(base)} is closed to other users on this machine")
        assert blocked_for_others(closed / "clone" / "src") == closed.resolve()
        with pytest.raises(SystemExit, match=f"cannot enter {closed.resolve()}.*chmod o\\+x"):
            require_clone_reachable(closed / "clone")
        closed.chmod(0o755)
        require_clone_reachable(closed / "clone")  # reachable now: no error
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_workshop_targets_are_phony():
    """`workshop/` is a folder: without .PHONY, `make workshop` would say "is up to date"."""
    phony = next(line for line in (ROOT / "Makefile").read_text().splitlines() if line.startswith(".PHONY:"))
    assert {"workshop", "workshop-release", "workshop-collect", "workshop-feedback", "workshop-down"} <= set(phony.split())
