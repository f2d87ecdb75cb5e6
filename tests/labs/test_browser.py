"""Lab 00 as a learner meets it: JupyterLab in headless Chromium, Run All, then nbgrader's Validate.

The test starts a real JupyterLab server (cwd = repository root, so the course's
``nbgrader_config.py`` drives the Validate button) on a *scratch copy* of the learner notebook,
drives Debian's Chromium with Playwright, and checks what the learner sees:

- the unsolved copy (as released): Run All stops at the first exercise with NotImplementedError,
  after the setup banner and the environment check; Validate reports failed cells;
- the solved copy (answer cells filled with the instructor solutions, as a learner would type
  them): every cell runs, the teardown line says no Ray process is left, and Validate says the
  notebook passes.

Nothing is written into ``notebooks/`` (asserted), and no JupyterLab, Chromium or Ray process of
this test survives it. Screenshots of every step land in ``<pytest tmp>/screenshots``; the path is
printed when the test fails.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import nbformat
import pytest

from grader.grading import course
from grader.proof import mutants

pytestmark = [pytest.mark.slow, pytest.mark.browser]

ROOT = Path(__file__).resolve().parents[2]
LAB = "00_lab_setup"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
# User settings for a fresh JupyterLab: no "Select Kernel" dialog, no news toast, every cell in
# the DOM (windowing would detach cells that are scrolled out of view).
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {
        "autoStartDefaultKernel": True, "windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false", "checkForUpdates": False},
}
SERVER_START_S = 60
OPEN_S = 90
RUN_ALL_S = 240      # lab 00 starts a Ray cluster (~10 s) and runs a few tasks
VALIDATE_S = 420     # nbgrader executes the whole notebook again in a new kernel

pytest.importorskip("playwright.sync_api")
if not Path(CHROMIUM).exists():
    pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium)", allow_module_level=True)


def _tree_digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _checkpoint_dirs(folder: Path) -> set[str]:
    return {str(p) for p in folder.rglob(".ipynb_checkpoints")}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _descendants(pid: int) -> list:
    import psutil

    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


class Server:
    """A JupyterLab server of this test; everything it starts carries ``RAYLAB_RUN_ID``."""

    def __init__(self, tmp: Path, root_dir: Path):
        self.tmp = tmp
        self.port = _free_port()
        self.token = uuid.uuid4().hex
        self.run_id = f"browser-{uuid.uuid4().hex[:12]}"
        self.base = f"http://127.0.0.1:{self.port}"
        settings = tmp / "lab-settings"
        for rel, values in LAB_SETTINGS.items():
            path = settings / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(values))
        env = dict(os.environ)
        env.update({
            "JUPYTERLAB_SETTINGS_DIR": str(settings),
            "JUPYTERLAB_WORKSPACES_DIR": str(tmp / "lab-workspaces"),
            "JUPYTER_RUNTIME_DIR": str(tmp / "jupyter-runtime"),
            "RAYLAB_SCRATCH": str(tmp / "raylab-scratch"),
            "RAYLAB_GRADING_DIR": str(tmp / "grading"),
            "RAYLAB_RUN_ID": self.run_id,
            # kernels must be this environment's Python
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        })
        env.pop("NBGRADER_EXECUTION", None)
        self.log_path = tmp / "jupyterlab.log"
        self.log = open(self.log_path, "w")
        jupyter = Path(sys.executable).parent / "jupyter"
        self.proc = subprocess.Popen(
            [str(jupyter), "lab", "--no-browser", "--allow-root", "--ServerApp.ip=127.0.0.1",
             f"--ServerApp.port={self.port}", "--ServerApp.port_retries=0",
             f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={root_dir}"],
            cwd=ROOT, env=env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        self._started: set[int] = set()

    def api(self, method: str, path: str, timeout: float = 10):
        req = urllib.request.Request(f"{self.base}{path}", method=method,
                                     headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            body = resp.read()
        return json.loads(body) if body else None

    def wait_ready(self) -> None:
        deadline = time.monotonic() + SERVER_START_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"JupyterLab exited early:\n{self.log_path.read_text()[-3000:]}")
            try:
                self.api("GET", "/api/status", timeout=2)
                return
            except (urllib.error.URLError, ConnectionError, OSError):
                time.sleep(0.5)
        raise AssertionError(f"JupyterLab not ready after {SERVER_START_S} s")

    def remember_children(self) -> None:
        self._started.update(p.pid for p in _descendants(self.proc.pid))

    def shutdown_kernels(self) -> None:
        """Shut every kernel down the polite way: its atexit handlers stop its Ray cluster."""
        self.remember_children()
        for kernel in self.api("GET", "/api/kernels") or []:
            try:
                self.api("DELETE", f"/api/kernels/{kernel['id']}", timeout=60)
            except (urllib.error.URLError, OSError):
                pass

    def stop(self) -> list[str]:
        """Stop the server and everything it started; return what had to be killed."""
        import psutil

        from raylab.processes import ray_processes

        killed = []
        if self.proc.poll() is None:
            try:
                self.shutdown_kernels()
            except (urllib.error.URLError, OSError, ValueError):
                pass
            self.remember_children()
            try:
                self.api("POST", "/api/shutdown", timeout=30)
            except (urllib.error.URLError, OSError, ValueError):
                self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                killed.append(f"jupyter server {self.proc.pid}")
                self.proc.wait(timeout=10)
        self.log.close()
        # Ray stops itself when its driver (the kernel) exits; give it a moment, then insist.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and ray_processes(self.run_id):
            time.sleep(0.5)
        leftovers = {p["pid"] for p in ray_processes(self.run_id)}
        leftovers |= {pid for pid in self._started if psutil.pid_exists(pid)}
        for pid in leftovers:
            try:
                proc = psutil.Process(pid)
                if proc.status() == psutil.STATUS_ZOMBIE:
                    continue
                killed.append(f"{pid} {' '.join(proc.cmdline())[:80]}")
                proc.kill()
            except psutil.NoSuchProcess:
                pass
        return killed


class Learner:
    """The browser side: one Chromium page on the JupyterLab server."""

    def __init__(self, playwright, server: Server, tmp: Path, shots: Path):
        self.server = server
        self.shots = shots
        self.context = playwright.chromium.launch_persistent_context(
            user_data_dir=str(tmp / "chromium-profile"), executable_path=CHROMIUM, headless=True,
            args=CHROMIUM_ARGS, viewport={"width": 1400, "height": 1000})
        self.page = self.context.pages[0] if self.context.pages else self.context.new_page()
        self.page.set_default_timeout(30_000)
        # accept "leave this page?" prompts when moving to the next notebook
        self.page.on("dialog", lambda dialog: dialog.accept())

    def shot(self, name: str) -> None:
        try:
            self.page.screenshot(path=str(self.shots / f"{name}.png"))
        except Exception:  # noqa: BLE001 - a screenshot must never hide the real failure
            pass

    @property
    def panel(self):
        return self.page.locator(".jp-NotebookPanel:visible").first

    def open(self, rel_path: str) -> None:
        self.page.goto(f"{self.server.base}/lab/tree/{rel_path}?reset&token={self.server.token}",
                       timeout=OPEN_S * 1000)
        self.panel.locator(".jp-Cell").first.wait_for(state="visible", timeout=OPEN_S * 1000)
        # Run All before the kernel is up does nothing: wait for the status bar's "Idle"
        deadline = time.monotonic() + OPEN_S
        while not self.kernel_idle():
            if time.monotonic() > deadline:
                raise AssertionError(f"the kernel did not become idle within {OPEN_S} s")
            self._accept_kernel_dialog()
            time.sleep(0.5)

    def kernel_idle(self) -> bool:
        return "| Idle" in (self.page.locator("#jp-main-statusbar").text_content() or "")

    def _accept_kernel_dialog(self) -> None:
        """Guard: a 'Select Kernel' dialog can still appear under load; keep the default kernel."""
        dialog = self.page.locator(".jp-Dialog")
        if dialog.count() and "Select Kernel" in (dialog.first.text_content() or ""):
            dialog.first.locator(".jp-mod-accept").click()

    def prompts(self) -> list[str]:
        return [t.strip() for t in self.panel.locator(".jp-CodeCell .jp-InputPrompt").all_text_contents()]

    def run_all(self) -> None:
        """Run → Run All Cells, as a learner does; checks that execution really started."""
        self.page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
        self.page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if any(re.search(r"\[(\*|\d+)\]", p) for p in self.prompts()):
                return
            time.sleep(0.2)
        raise AssertionError(f"Run All Cells started nothing: prompts {self.prompts()}")

    def wait_until_idle(self, expect_error: bool) -> list[str]:
        """Wait until no cell is queued or running; return the prompts."""
        deadline = time.monotonic() + RUN_ALL_S
        time.sleep(1.0)
        while time.monotonic() < deadline:
            self._accept_kernel_dialog()
            prompts = self.prompts()
            busy = any("*" in p for p in prompts)
            numbered = [p for p in prompts if re.search(r"\[\d+\]", p)]
            has_error = "Traceback (most recent call last)" in self.notebook_text()
            if not busy and numbered and (has_error if expect_error else len(numbered) == len(prompts)):
                return prompts
            time.sleep(1.0)
        raise AssertionError(f"cells still running after {RUN_ALL_S} s: prompts {self.prompts()}")

    def notebook_text(self) -> str:
        return self.panel.locator(".jp-Notebook").text_content() or ""

    def validate(self) -> tuple[str, str]:
        """Press nbgrader's Validate button; return (result class, dialog text)."""
        self.panel.locator(".jp-NotebookPanel-toolbar .validate-button").click()
        dialog = self.page.locator(".jp-Dialog", has_text="Validation Results")
        dialog.wait_for(state="visible", timeout=VALIDATE_S * 1000)
        body = dialog.locator(".validation-success, .validation-failed, .validation-changed")
        kind = "error"
        if body.count():
            classes = body.first.get_attribute("class") or ""
            kind = next(k for k in ("success", "failed", "changed") if f"validation-{k}" in classes)
        return kind, dialog.text_content() or ""

    def close_dialog(self) -> None:
        self.page.locator(".jp-Dialog .jp-mod-accept").first.click()

    def close(self) -> None:
        try:
            self.context.close()
        except Exception:  # noqa: BLE001
            pass


def _kill_leftover_browsers() -> list[str]:
    """Chromium processes of this test still alive after the browser context was closed."""
    import psutil

    left = [p for p in psutil.Process().children(recursive=True)
            if "chrom" in p.name().lower() and p.status() != psutil.STATUS_ZOMBIE]
    for proc in left:
        try:
            proc.kill()
        except psutil.NoSuchProcess:
            pass
    return [f"chromium {p.pid}" for p in left]


@contextlib.contextmanager
def learner_session(server, tmp: Path, shots: Path):
    """A learner's browser on ``server`` once it is ready. On a failure: a screenshot and where the
    logs are. Afterwards the browser, the server and everything it started are stopped, and the
    test fails if any process had to be killed."""
    from playwright.sync_api import sync_playwright

    killed: list[str] = []
    try:
        server.wait_ready()
        with sync_playwright() as pw:
            learner = Learner(pw, server, tmp, shots)
            try:
                yield learner
            except BaseException:
                learner.shot("failure")
                print(f"\nscreenshots: {shots}\nserver log: {server.log_path}")
                raise
            finally:
                learner.close()
    finally:
        killed = server.stop()
        killed += _kill_leftover_browsers()
    assert not killed, f"processes had to be killed after the test: {killed}"


def _write_copies(root_dir: Path) -> dict[str, Path]:
    """Scratch copies of the learner notebook: as released, and with the solutions filled in."""
    unsolved = root_dir / "unsolved" / LAB / f"{LAB}.ipynb"
    unsolved.parent.mkdir(parents=True)
    shutil.copyfile(course.release_path(LAB), unsolved)
    solved = root_dir / "solved" / LAB / f"{LAB}.ipynb"
    solved.parent.mkdir(parents=True)
    nbformat.write(mutants.submission(LAB, mutants.answer_sources(LAB)), solved)
    return {"unsolved": unsolved, "solved": solved}


def _check_common_outputs(text: str) -> None:
    assert f"[raylab] {LAB}: Ray 2.58.0 (learner mode)" in text, "setup banner missing"
    assert re.search(r"\[OK\] ray\s+2\.58\.0", text), "environment check did not print [OK] ray"
    assert "[FAIL]" not in text, "the environment check reported a failure"


def test_lab00_run_all_and_validate_in_jupyterlab(tmp_path):
    # This lab's learner folder must stay byte-identical (other labs' folders may be regenerated by
    # `make release` meanwhile), and no checkpoint folder may appear anywhere in notebooks/.
    lab_folder = course.release_path(LAB).parent
    before, checkpoints_before = _tree_digest(lab_folder), _checkpoint_dirs(course.NOTEBOOKS)
    shots = tmp_path / "screenshots"
    shots.mkdir()
    root_dir = tmp_path / "lab-root"
    copies = _write_copies(root_dir)
    server = Server(tmp_path, root_dir)
    with learner_session(server, tmp_path, shots) as learner:
        # --- unsolved copy: Run All stops at exercise 1, Validate reports failures
        learner.open(f"unsolved/{LAB}/{LAB}.ipynb")
        learner.shot("unsolved-1-opened")
        learner.run_all()
        prompts = learner.wait_until_idle(expect_error=True)
        learner.panel.locator(".jp-OutputArea-output", has_text="NotImplementedError").first \
            .scroll_into_view_if_needed()
        learner.shot("unsolved-2-run-all")
        text = learner.notebook_text()
        _check_common_outputs(text)
        assert "NotImplementedError" in text, "the unanswered exercise should raise"
        assert "[ ]" in "".join(prompts), f"Run All should stop at the first error: {prompts}"
        assert "Ray is stopped" not in text, "teardown cannot have run after the error"
        kind, dialog_text = learner.validate()
        learner.shot("unsolved-3-validate")
        assert kind == "failed", f"validation of the unsolved copy: {kind}\n{dialog_text[:2000]}"
        assert "The following cell failed" in dialog_text
        assert "NotImplementedError" in dialog_text
        learner.close_dialog()
        server.shutdown_kernels()

        # --- solved copy: every cell runs, Validate passes
        learner.open(f"solved/{LAB}/{LAB}.ipynb")
        learner.run_all()
        prompts = learner.wait_until_idle(expect_error=False)
        learner.shot("solved-1-run-all")
        text = learner.notebook_text()
        _check_common_outputs(text)
        assert "Traceback (most recent call last)" not in text, "a solved cell raised"
        assert "[raylab] Ray is stopped; no Ray process left." in text
        assert all(re.search(r"\[\d+\]", p) for p in prompts), prompts
        kind, dialog_text = learner.validate()
        learner.shot("solved-2-validate")
        assert kind == "success", f"validation of the solved copy: {kind}\n{dialog_text[:2000]}"
        assert "Success! Your notebook passes all the tests." in dialog_text
        learner.close_dialog()
    # the Validate button saved the scratch copies (with outputs), never the repository's notebooks
    saved = nbformat.read(copies["solved"], as_version=4)
    assert any(c.get("outputs") for c in saved.cells if c.cell_type == "code")
    assert _tree_digest(lab_folder) == before, f"{lab_folder} changed during the browser test"
    assert _checkpoint_dirs(course.NOTEBOOKS) == checkpoints_before, "JupyterLab wrote into notebooks/"
