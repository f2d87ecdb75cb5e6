"""The workshop hub in a real browser (issue 17, first part of the round trip): a learner logs in
through the hub's login page in Debian's Chromium (Playwright), lands in the learner JupyterLab
(nbgrader's menu without Formgrader or Create assignment), opens the Assignment List, fetches the
released lab and submits it; the submission reaches the exchange. Screenshots of each step land in
``<pytest tmp>/screenshots``. Uses test_workshop_hub's hub (its own hub in this module)."""
from __future__ import annotations

import pwd
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


def test_learner_fetches_and_submits_in_the_browser(hub, tmp_path):
    from playwright.sync_api import sync_playwright

    name = hub.learners[1]
    shots = tmp_path / "screenshots"
    shots.mkdir()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                    args=["--no-sandbox", "--disable-gpu", "--no-first-run"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.set_default_timeout(90_000)

        def shot(step):
            try:
                page.screenshot(path=str(shots / f"{step}.png"))
            except Exception:  # noqa: BLE001 - a screenshot never hides the real failure
                pass

        try:
            page.goto(f"{hub.url}/hub/login")
            page.fill("#username_input", name)
            page.fill("#password_input", wh.PASSWORD)
            shot("1-login")
            page.click("#login_submit")
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
