"""`make lab` is the learners' JupyterLab: nbgrader's instructor tools are switched off in it.

Started with the configuration `make lab` uses (workshop/learner-jupyter-config on
JUPYTER_CONFIG_PATH), the server must not serve the formgrader, and the page must tell JupyterLab
to leave the Create Assignment, formgrader and course list plugins inactive; the learner's
Assignments list and Validate stay.
"""
from __future__ import annotations

import re
import socket
import subprocess
import time
import urllib.error
import urllib.request

import pytest

from conftest import ROOT

pytestmark = pytest.mark.slow

CONFIG = ROOT / "workshop" / "learner-jupyter-config"
INSTRUCTOR_PLUGINS = {"@jupyter/nbgrader:create-assignment", "@jupyter/nbgrader:formgrader",
                      "@jupyter/nbgrader:course-list"}


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _status(url):
    try:
        with urllib.request.urlopen(url, timeout=20) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, ""


def test_make_lab_uses_the_learner_config():
    dry = subprocess.run(["make", "-n", "lab"], cwd=ROOT, capture_output=True, text=True,
                         timeout=60).stdout
    assert f"JUPYTER_CONFIG_PATH={CONFIG}" in dry, dry


def test_learner_lab_hides_instructor_tools(tmp_path):
    port = _free_port()
    env = {"JUPYTER_CONFIG_PATH": str(CONFIG), "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    server = subprocess.Popen(
        [str(ROOT / ".venv" / "bin" / "jupyter"), "lab", f"--ServerApp.root_dir={ROOT / 'notebooks'}",
         "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--no-browser", "--allow-root",
         "--IdentityProvider.token=learner"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        code, page = 0, ""
        while time.monotonic() < deadline:
            try:
                code, page = _status(f"{base}/lab?token=learner")
                if code == 200:
                    break
            except OSError:
                pass
            time.sleep(1)
        assert code == 200, "JupyterLab did not answer within 180 s"
        found = re.search(r'"disabledExtensions":\s*\[([^\]]*)\]', page)
        assert found, "no page config in /lab"
        disabled = set(re.findall(r'"([^"]+)"', found.group(1)))
        assert INSTRUCTOR_PLUGINS <= disabled, disabled
        assert "@jupyter/nbgrader:validate-assignment" not in disabled
        assert "@jupyter/nbgrader:assignment-list" not in disabled
        assert _status(f"{base}/formgrader?token=learner")[0] == 404
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
