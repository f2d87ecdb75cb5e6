"""The room's collect (grader.workshop.exchange.CheckedCollect) on a real nbgrader exchange folder,
with real Unix owners (fast; needs root to give files to two system accounts): a submission folder
named as one learner's but written by another account is refused and reported, and the named
learner's own latest submission is the one collected. nbgrader's own collect, on the same inbound,
takes the forged one: the test that shows the refusal is ours."""
from __future__ import annotations

import os
import pwd
import sys
from pathlib import Path

import pytest

from grader.workshop import exchange as workshop_exchange

LAB = "lab1"
if os.geteuid() != 0:
    pytest.skip("giving files to other accounts needs root", allow_module_level=True)
try:
    VICTIM, FORGER = pwd.getpwnam("daemon"), pwd.getpwnam("nobody")
except KeyError:
    pytest.skip("the system accounts daemon and nobody are needed", allow_module_level=True)


def _submission(inbound: Path, named: str, stamp: str, owner, text: str) -> Path:
    folder = inbound / f"{named}+{LAB}+{stamp}+{os.urandom(4).hex()}"
    folder.mkdir()
    (folder / f"{LAB}.ipynb").write_text(text)
    (folder / "timestamp.txt").write_text(stamp)
    for path in (folder, *folder.iterdir()):
        os.chown(path, owner.pw_uid, owner.pw_gid)
    return folder


def _collect(tmp_path: Path, klass) -> Path:
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config

    course = tmp_path / "course"
    course.mkdir(exist_ok=True)
    config = Config()
    config.CourseDirectory.root = str(course)
    config.CourseDirectory.course_id = "c"
    config.Exchange.root = str(tmp_path / "exchange")
    config.ExchangeFactory.collect = klass
    result = NbGraderAPI(CourseDirectory(config=config), config=config).collect(LAB)
    assert result["success"], result
    return course


@pytest.fixture
def inbound(tmp_path, monkeypatch):
    # nbgrader creates the course's gradebook with alembic, which it runs by name.
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    inbound = tmp_path / "exchange" / "c" / "inbound"
    inbound.mkdir(parents=True)
    _submission(inbound, VICTIM.pw_name, "2026-12-06 09:00:00.000000 UTC", VICTIM, "victim's own work")
    forged = _submission(inbound, VICTIM.pw_name, "2026-12-06 09:05:00.000000 UTC", FORGER, "forged")
    return inbound, forged


def test_a_forged_submission_is_refused_reported_and_the_learners_own_is_collected(tmp_path, inbound):
    _, forged = inbound
    course = _collect(tmp_path, workshop_exchange.CheckedCollect)
    collected = course / "submitted" / VICTIM.pw_name / LAB / f"{LAB}.ipynb"
    assert collected.read_text() == "victim's own work"
    refused = workshop_exchange.read_refusals(course)
    assert [(r["folder"], r["named_learner"], r["lab"]) for r in refused] == [(forged.name, VICTIM.pw_name, LAB)]
    assert f"owned by {FORGER.pw_name}, not by {VICTIM.pw_name}" in refused[0]["reason"]
    # Collecting again reports the same refusal once, and keeps the learner's own work.
    _collect(tmp_path, workshop_exchange.CheckedCollect)
    assert len(workshop_exchange.read_refusals(course)) == 1
    assert collected.read_text() == "victim's own work"


def test_nbgraders_own_collect_takes_the_forgery(tmp_path, inbound):
    """Without the check: what the issue saw (the forged, later folder replaces the learner's work)."""
    from nbgrader.exchange.default.collect import ExchangeCollect

    course = _collect(tmp_path, ExchangeCollect)
    assert (course / "submitted" / VICTIM.pw_name / LAB / f"{LAB}.ipynb").read_text() == "forged"


def test_a_foreign_file_or_a_link_inside_a_submission_refuses_it(tmp_path):
    folder = tmp_path / "sub"
    folder.mkdir()
    os.chown(folder, VICTIM.pw_uid, VICTIM.pw_gid)
    assert workshop_exchange.owner_problem(str(folder), VICTIM.pw_name) is None
    planted = folder / "extra.py"
    planted.write_text("x")
    os.chown(planted, FORGER.pw_uid, FORGER.pw_gid)
    assert "extra.py is owned by" in workshop_exchange.owner_problem(str(folder), VICTIM.pw_name)
    planted.unlink()
    (folder / "link").symlink_to("/etc/passwd")
    assert "link is a link" in workshop_exchange.owner_problem(str(folder), VICTIM.pw_name)
    assert "no account" in workshop_exchange.owner_problem(str(folder), "rlw-no-such-login")


def test_autograde_through_the_course_configuration_points_to_make_grade():
    with pytest.raises(RuntimeError, match="make grade"):
        workshop_exchange.RefuseAutograde()(None, {})


def test_generate_feedback_through_the_course_configuration_points_to_workshop_feedback():
    with pytest.raises(RuntimeError, match="make workshop-feedback"):
        workshop_exchange.RefuseGenerateFeedback()(None, {})
