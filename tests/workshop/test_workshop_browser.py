"""The workshop hub in a real browser (issue 17): a learner logs in through the hub's login page
in Debian's Chromium (Playwright), lands in the learner JupyterLab (nbgrader's menu without
Formgrader or Create assignment), opens the Assignment List, fetches the released lab and submits
it; the submission reaches the exchange. Then a second learner submits the lab answered right,
the instructor collects, grades with the course's class grader and releases the feedback, and
each learner fetches their feedback and sees their own score, not the other's (lab 00 only: the
grading part adds about 80 s). Screenshots of each step land in ``<pytest tmp>/screenshots``.
Uses test_workshop_hub's hub (its own hub in this module)."""
from __future__ import annotations

import pwd
import re
import secrets
import time
from pathlib import Path

import pytest

import test_workshop_hub as wh

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.timeout(300)]

CHROMIUM = "/usr/bin/chromium"
pytest.importorskip("playwright.sync_api")
if not Path(CHROMIUM).exists():
    pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium)", allow_module_level=True)

hub = wh.hub  # the module-scoped fixture: a 2-learner hub on a free port, users removed after


def _chromium_page(playwright):
    """Debian's Chromium, headless, and one page with the viewport and patience of these tests."""
    browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                         args=["--no-sandbox", "--disable-gpu", "--no-first-run"])
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(90_000)
    return browser, page


def _log_in(page, hub, name: str, edition: str = "en") -> None:
    """The hub's login page; a learner whose server is not running then gets the spawn page's
    choice of edition (English or Japanese) and starts their server with ``edition``."""
    page.goto(f"{hub.url}/hub/login")
    page.fill("#username_input", name)
    page.fill("#password_input", wh.PASSWORD)
    page.click("#login_submit")
    page.wait_for_url(re.compile(rf"/user/{re.escape(name)}/|/hub/spawn"), timeout=150_000)
    if "/hub/spawn" in page.url:
        page.check(f"input[name=edition][value={edition}]")
        page.locator("form [type=submit]").first.click()


def test_learner_fetches_and_submits_in_the_browser(hub, tmp_path):
    from playwright.sync_api import sync_playwright

    name = hub.learners[1]
    shots = tmp_path / "screenshots"
    shots.mkdir()
    with sync_playwright() as p:
        browser, page = _chromium_page(p)

        def shot(step):
            try:
                page.screenshot(path=str(shots / f"{step}.png"))
            except Exception:  # noqa: BLE001 - a screenshot never hides the real failure
                pass

        try:
            _log_in(page, hub, name)
            shot("1-login")
            page.wait_for_url(f"**/user/{name}/lab**", timeout=150_000)
            page.wait_for_selector("#jp-main-dock-panel", timeout=120_000)
            shot("2-jupyterlab")
            page.get_by_role("menuitem", name="Nbgrader").click()
            items = page.locator(".lm-Menu-itemLabel").all_inner_texts()
            assert "Assignment List" in items, items
            assert not {"Formgrader", "Create assignment", "Course List"} & set(items), items
            shot("3-nbgrader-menu")
            page.locator(".lm-Menu-itemLabel", has_text="Assignment List").click()
            fetch = page.get_by_role("button", name="Fetch")
            fetch.wait_for()
            shot("4-assignment-list")
            fetch.click()
            notebook = Path(pwd.getpwnam(name).pw_dir) / wh.LAB / f"{wh.LAB}.ipynb"
            deadline = time.monotonic() + 60
            while not notebook.exists() and time.monotonic() < deadline:
                time.sleep(0.5)
            assert notebook.exists(), "Fetch did not put the lab in the learner's home"
            submit = page.get_by_role("button", name="Submit")
            submit.wait_for()
            shot("5-fetched")
            submit.click()
            inbound = hub.state / "exchange" / wh.workshop.COURSE_ID / "inbound"
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                mine = [d for d in inbound.iterdir() if d.name.startswith(f"{name}+{wh.LAB}+")]
                if mine:
                    break
                time.sleep(0.5)
            shot("6-submitted")
            assert mine, "the submission did not reach the exchange"
        except Exception:
            shot("failure")
            print(f"\nscreenshots: {shots}")
            raise
        finally:
            browser.close()


def _api_token(hub, name: str) -> dict:
    """API headers for ``name`` whose server is already running (started by its browser login)."""
    session, reply = wh._login(hub, name)
    assert reply.status_code == 302, reply.text[:500]
    token = session.post(f"{hub.url}/hub/api/users/{name}/tokens", timeout=30, json={"expires_in": 900},
                         headers={"X-XSRFToken": session.cookies.get("_xsrf")})
    assert token.status_code == 201, token.text[:500]
    return {"Authorization": f"token {token.json()['token']}"}


FORGE = r"""
import os, shutil, sys
folder, released = sys.argv[1:3]
os.mkdir(folder)
shutil.copy(released, os.path.join(folder, os.path.basename(released)))
with open(os.path.join(folder, "timestamp.txt"), "w") as handle:
    handle.write(os.path.basename(folder).split("+")[2])
"""

FEEDBACK_PROBE = r"""
import json, os, sys
feedback = sys.argv[1]
try:
    os.listdir(feedback)
    listed = True
except OSError:
    listed = False
print(json.dumps({"listed": listed}))
"""


@pytest.mark.timeout(600)  # two lab 00 gradings: 62 s alone, over 180 s on the shared 2-core machine
def test_graded_with_the_class_grader_and_each_learner_sees_only_their_feedback(hub, tmp_path):
    """After the browser submission above (the lab as released: wrong), the other learner submits
    the lab answered with the solution's code (through the Assignments tab's calls); the
    instructor collects, grades with the course's class grader (`make grade`'s grader.classroom.grade)
    and releases the feedback (nbgrader's release_feedback); each learner fetches their feedback
    and, in the browser, sees their own score; the other's feedback is not theirs to open."""
    import json
    import os
    import re
    import shutil
    import subprocess
    import sys

    import nbformat
    import requests
    from playwright.sync_api import sync_playwright

    from grader.proof import mutants

    right, wrong = hub.learners[0], hub.learners[1]
    lab, course_id = wh.LAB, wh.workshop.COURSE_ID
    form = {"assignment_id": lab, "course_id": course_id}
    auth = (hub.auth or {}).get(right) or wh._start_server(hub, right)
    base = f"{hub.url}/user/{right}/assignments"
    assert requests.post(f"{base}/fetch", data=form, headers=auth, timeout=120).status_code == 200
    entry = pwd.getpwnam(right)
    notebook = Path(entry.pw_dir) / lab / f"{lab}.ipynb"
    nbformat.write(mutants.submission(lab, mutants.answer_sources(lab), release=notebook), notebook)
    os.chown(notebook, entry.pw_uid, entry.pw_gid)
    assert requests.post(f"{base}/submit", data=form, headers=auth, timeout=120).status_code == 200

    # The other learner forges a later submission in the right learner's name, from their own
    # server (what a terminal there can do): the released notebook, unanswered.
    inbound = hub.state / "exchange" / course_id / "inbound"
    forged = inbound / f"{right}+{lab}+2099-01-01 00:00:00.000000 UTC+{secrets.token_hex(4)}"
    wrote = wh._in_server(wrong, ["/usr/bin/python3", "-c", FORGE, str(forged),
                                  str(hub.state / "exchange" / course_id / "outbound" / lab / f"{lab}.ipynb")])
    assert wrote.returncode == 0, wrote.stderr[-1000:]
    assert forged.stat().st_uid == pwd.getpwnam(wrong).pw_uid

    # The instructor: collect, grade with the class grader (`make grade`), release the feedback.
    from grader.workshop import exchange as workshop_exchange, feedback as workshop_feedback

    state = wh.workshop.State(hub.state)
    assert workshop_feedback.collect(state, lab) == sorted([right, wrong])
    refused = workshop_exchange.read_refusals(state.course)
    assert [(r["folder"], r["named_learner"]) for r in refused] == [(forged.name, right)], refused
    assert f"owned by {wrong}, not by {right}" in refused[0]["reason"]
    submitted = hub.state / "course" / "submitted"
    out = tmp_path / "class"
    started = time.monotonic()
    graded = subprocess.run([sys.executable, "-m", "grader.classroom.grade", str(submitted), "--out", str(out),
                             "--labs", lab, "--workers", "2"], cwd=wh.ROOT, capture_output=True, text=True, timeout=600)
    print(f"class grader: {time.monotonic() - started:.1f} s\n{graded.stdout[-1500:]}")
    assert graded.returncode == 0, graded.stderr[-2000:]
    assert f"REFUSED {right}/{lab}" in graded.stdout, graded.stdout[-2000:]
    assert forged.name in (out / "exports" / "refused_submissions.csv").read_text()
    scores = {}
    for student in (right, wrong):
        html = (out / "feedback" / student / lab / f"{lab}.html").read_text()
        scores[student] = tuple(map(float, re.search(r"Score: ([0-9.]+) / ([0-9.]+)", html).groups()))
    assert scores[right][0] == scores[right][1] > 0, scores  # the forgery did not replace it
    assert scores[wrong][0] < scores[wrong][1], scores
    assert workshop_feedback.release(state, lab, out) == sorted([right, wrong])
    hub.graded = scores  # for the formgrader test below

    # Each learner fetches their feedback (the Assignments tab's call) and opens it in the browser.
    shots = tmp_path / "screenshots"
    shots.mkdir()
    seen = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                    args=["--no-sandbox", "--disable-gpu", "--no-first-run"])
        try:
            for student in (right, wrong):
                learner_auth = (hub.auth or {}).get(student) or _api_token(hub, student)
                fetched = requests.post(f"{hub.url}/user/{student}/assignments/fetch_feedback", data=form,
                                        headers=learner_auth, timeout=120)
                assert fetched.status_code == 200, fetched.text[:500]
                home = Path(pwd.getpwnam(student).pw_dir)
                mine = sorted((home / lab / "feedback").glob(f"*/{lab}.html"))
                assert len(mine) == 1, mine
                # Without the grading sandbox's noise (its IP probe, its scratch paths, FutureWarnings).
                released_text = mine[0].read_text()
                for noise in ("network_util.cc", "/home/learner/scratch", "FutureWarning"):
                    assert noise not in released_text, noise
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                page.set_default_timeout(90_000)
                _log_in(page, hub, student)
                page.wait_for_url(f"**/user/{student}/**", timeout=150_000)
                relative = mine[0].relative_to(home)
                page.goto(f"{hub.url}/user/{student}/files/{relative}")
                page.wait_for_selector("text=Score:")
                page.screenshot(path=str(shots / f"feedback-{'right' if student == right else 'wrong'}.png"),
                                full_page=False)
                text = page.inner_text("body")
                seen[student] = re.search(r"Score: ([0-9.]+) / ([0-9.]+)", text).groups()
                # The other learner's copy is not reachable from this learner's server.
                other = wrong if student == right else right
                there = page.goto(f"{hub.url}/user/{student}/files/../../{other}/{relative}")
                assert there is None or there.status in (403, 404) or "Score:" not in page.inner_text("body")
                page.close()
        finally:
            browser.close()
    assert {s: tuple(map(float, v)) for s, v in seen.items()} == scores, (seen, scores)
    # Released feedback in the exchange is named by a per-submission secret: a learner cannot list it.
    env = {"HOME": pwd.getpwnam(wrong).pw_dir, "PATH": "/usr/bin:/bin"}
    probe = subprocess.run([shutil.which("runuser") or "/usr/sbin/runuser", "-u", wrong, "--", "/usr/bin/python3",
                            "-c", FEEDBACK_PROBE, str(hub.state / "exchange" / course_id / "feedback")],
                           capture_output=True, text=True, timeout=60, env=env, cwd="/")
    assert json.loads(probe.stdout) == {"listed": False}, probe.stderr[-500:]
    print(f"screenshots: {shots}; scores {scores}")


def test_instructor_sees_the_class_graders_scores_in_the_formgrader_tab(hub, tmp_path):
    """After the grading above: the formgrader (the course's gradebook) holds what `make grade`
    gave each learner, marked autograded; the instructor opens it from JupyterLab's Nbgrader menu
    and it loads inside JupyterLab (its frame is allowed), down to the lab's submissions."""
    import re

    import requests
    from playwright.sync_api import sync_playwright

    scores = getattr(hub, "graded", None)
    if not scores:
        pytest.skip("needs the class grading of the test before")
    lab, teacher = wh.LAB, hub.instructor
    auth = (hub.auth or {}).get(teacher) or wh._start_server(hub, teacher)
    listing = requests.get(f"{hub.url}/user/{teacher}/formgrader/api/submissions/{lab}", headers=auth, timeout=120)
    assert listing.status_code == 200, listing.text[:500]
    got = {row["student"]: (row["score"], row["max_score"], row["autograded"]) for row in listing.json()}
    assert {name: got.get(name) for name in scores} == {name: (*score, True) for name, score in scores.items()}, got
    # Generate Feedback would render the graded notebook with its hidden tests: refused, with a pointer.
    student = sorted(scores)[0]
    generated = requests.post(f"{hub.url}/user/{teacher}/formgrader/api/assignment/{lab}/{student}/generate_feedback",
                              headers=auth, timeout=300)
    assert generated.status_code == 200, generated.text[:500]
    result = generated.json()
    assert result["success"] is False and "make workshop-feedback" in str(result), result
    made = hub.state / "course" / "feedback" / student / lab / f"{lab}.html"
    assert not made.exists() or "BEGIN HIDDEN TESTS" not in made.read_text()
    shots = tmp_path / "screenshots"
    shots.mkdir()
    with sync_playwright() as p:
        browser, page = _chromium_page(p)
        try:
            page.goto(f"{hub.url}/hub/login")
            page.fill("#username_input", teacher)
            page.fill("#password_input", wh.PASSWORD)
            page.click("#login_submit")
            page.wait_for_url(f"**/user/{teacher}/lab**", timeout=150_000)
            page.wait_for_selector("#jp-main-dock-panel", timeout=120_000)
            page.get_by_role("menuitem", name="Nbgrader").click()
            page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Formgrader$")).click()
            frame = page.frame_locator("iframe[src*='formgrader']")
            # A JupyterLab notification may cover the link: click it in the page, not at a point.
            frame.locator(f"a[href*='manage_submissions/{lab}']").first.dispatch_event("click")
            for name in scores:
                frame.locator(f"text={name}").first.wait_for(timeout=90_000)
            page.screenshot(path=str(shots / "formgrader-tab.png"))
        except Exception:
            page.screenshot(path=str(shots / "failure.png"))
            print(f"screenshots: {shots}")
            raise
        finally:
            browser.close()
    print(f"formgrader scores {got}; screenshots: {shots}")
