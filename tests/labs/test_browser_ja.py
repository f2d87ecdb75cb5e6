"""The Japanese edition as a learner meets it: JupyterLab started by the Makefile's own
`make lab EDITION=ja` recipe (on a scratch copy of ``notebooks-ja/``, so nothing is written into
it), lab 00 opened in Debian's Chromium. JupyterLab's menus are Japanese (the language pack, locale
set by the learner configuration's ``ja/`` layer), the lab's first cell, ``raylab.setup``,
prints its banner in Japanese (``RAYLAB_LANG=ja``), not the English one, and nbgrader's Validate
on a copy with one wrong answer (a core mistake of exercise 1) explains the failed check in
Japanese: the test cell's own label and hint come back from the cell catalogue. Screenshots land in
``<pytest tmp>/screenshots``.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import nbformat
import pytest

import test_browser as tb
from grader.proof import mutants

pytestmark = [pytest.mark.slow, pytest.mark.browser]

ROOT = Path(__file__).resolve().parents[2]
LAB = tb.LAB
JAPANESE = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")  # kana and kanji
ENGLISH_BANNER = f"[raylab] {LAB}: Ray 2.58.0 (learner mode)"
WRONG = ("environment_report_answer", "reports_documented_python_not_installed")
ENGLISH_HINT = "describe the running interpreter, not the course docs"  # the hint its check gives


def _japanese_copy_with_one_wrong_answer(root_dir: Path) -> Path:
    """The Japanese notebook with every answer filled in and exercise 1's core mistake in it."""
    answers = mutants.answer_sources(LAB)
    answer, name = WRONG
    wrong = next(m for m in mutants.load(LAB)[answer].mutants if m.name == name)
    answers[answer] = mutants.apply(answers[answer], wrong)
    path = root_dir / "wrong" / LAB / f"{LAB}.ipynb"
    path.parent.mkdir(parents=True)
    nbformat.write(mutants.submission(LAB, answers, release=ROOT / "notebooks-ja" / LAB / f"{LAB}.ipynb"), path)
    return path


def _japanese_hint() -> str:
    import os

    from raylab import i18n

    before = os.environ.get("RAYLAB_LANG")
    os.environ["RAYLAB_LANG"] = "ja"
    try:
        return i18n.cell_text(ENGLISH_HINT)
    finally:
        os.environ.pop("RAYLAB_LANG") if before is None else os.environ.__setitem__("RAYLAB_LANG", before)


class MakeLab(tb.Server):
    """``make lab EDITION=ja`` with this test's port, token, settings folder and a scratch root
    folder (``EDITION_DIR``); everything else is the Makefile's recipe."""

    def __init__(self, tmp: Path, root_dir: Path):  # noqa: super().__init__ would start its own server
        self.tmp, self.port, self.token = tmp, tb._free_port(), uuid.uuid4().hex
        self.run_id = f"browser-ja-{uuid.uuid4().hex[:12]}"
        self.base = f"http://127.0.0.1:{self.port}"
        settings = tmp / "lab-settings"
        for rel, values in tb.LAB_SETTINGS.items():
            (settings / rel).parent.mkdir(parents=True, exist_ok=True)
            (settings / rel).write_text(json.dumps(values))
        env = {**tb.os.environ, "JUPYTER_TOKEN": self.token, "JUPYTERLAB_SETTINGS_DIR": str(settings),
               "JUPYTERLAB_WORKSPACES_DIR": str(tmp / "lab-workspaces"),
               "JUPYTER_RUNTIME_DIR": str(tmp / "jupyter-runtime"), "RAYLAB_RUN_ID": self.run_id,
               "RAYLAB_SCRATCH": str(tmp / "raylab-scratch"),
               "PATH": f"{Path(sys.executable).parent}:{tb.os.environ.get('PATH', '')}"}
        for name in ("RAYLAB_LANG", "JUPYTER_CONFIG_PATH", "NBGRADER_EXECUTION"):
            env.pop(name, None)  # what make lab sets must come from make lab
        venv = Path(sys.executable).parent.parent
        self.log_path = tmp / "jupyterlab.log"
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            ["make", "-s", "-o", f"{venv}/.installed", "lab", "EDITION=ja", f"VENV={venv}",
             f"PORT={self.port}", f"EDITION_DIR={root_dir}"],
            cwd=ROOT, env=env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        self._started: set[int] = set()

    def kernel_idle(self) -> bool:
        kernels = self.api("GET", "/api/kernels") or []
        return bool(kernels) and all(k["execution_state"] == "idle" for k in kernels)


def _open(page, learner, server: MakeLab, rel_path: str) -> None:
    """Open a notebook and wait for its kernel through the server's API (the status bar's words
    are Japanese here, so the English test's wait cannot read them)."""
    page.goto(f"{server.base}/lab/tree/{rel_path}?reset&token={server.token}", timeout=tb.OPEN_S * 1000)
    learner.panel.locator(".jp-Cell").first.wait_for(state="visible", timeout=tb.OPEN_S * 1000)
    deadline = time.monotonic() + tb.OPEN_S
    while not server.kernel_idle():
        assert time.monotonic() < deadline, f"no idle kernel within {tb.OPEN_S} s"
        time.sleep(0.5)


def _validate(page, learner) -> tuple[str, str]:
    """Press nbgrader's Validate button; return (result class, dialog text). The dialog is found
    by nbgrader's result classes, not by its title, whatever language the title is in."""
    learner.panel.locator(".jp-NotebookPanel-toolbar .validate-button").click()
    results = ".validation-success, .validation-failed, .validation-changed"
    body = page.locator(f".jp-Dialog {results.replace(', ', ', .jp-Dialog ')}").first
    body.wait_for(state="visible", timeout=tb.VALIDATE_S * 1000)
    classes = body.get_attribute("class") or ""
    kind = next(k for k in ("success", "failed", "changed") if f"validation-{k}" in classes)
    return kind, page.locator(".jp-Dialog").first.text_content() or ""


def test_make_lab_edition_ja_shows_japanese_menus_and_messages(tmp_path):
    root_dir = tmp_path / "notebooks-ja"
    shutil.copytree(ROOT / "notebooks-ja" / LAB, root_dir / LAB)
    _japanese_copy_with_one_wrong_answer(root_dir)
    japanese_hint = _japanese_hint()
    assert japanese_hint != ENGLISH_HINT and JAPANESE.search(japanese_hint), japanese_hint
    shots = tmp_path / "screenshots"
    shots.mkdir()
    server = MakeLab(tmp_path, root_dir)
    with tb.learner_session(server, tmp_path, shots) as learner:
        page = learner.page
        page.goto(f"{server.base}/lab/tree/{LAB}/{LAB}.ipynb?reset&token={server.token}",
                  timeout=tb.OPEN_S * 1000)
        learner.panel.locator(".jp-Cell").first.wait_for(state="visible", timeout=tb.OPEN_S * 1000)
        menus = [t.strip() for t in page.locator(".lm-MenuBar-itemLabel").all_inner_texts()]
        learner.shot("1-opened")
        assert "ファイル" in menus and "File" not in menus, menus  # the language pack's "File"
        deadline = time.monotonic() + tb.OPEN_S
        while not server.kernel_idle():
            assert time.monotonic() < deadline, f"no idle kernel within {tb.OPEN_S} s"
            time.sleep(0.5)
        cell = learner.panel.locator(".jp-CodeCell").first
        cell.locator(".jp-InputArea-editor").click()
        page.keyboard.press("Shift+Enter")
        deadline = time.monotonic() + tb.RUN_ALL_S
        while not re.search(r"\[\d+\]", cell.locator(".jp-InputPrompt").text_content() or ""):
            assert time.monotonic() < deadline, f"the setup cell did not finish in {tb.RUN_ALL_S} s"
            time.sleep(0.5)
        output = cell.locator(".jp-OutputArea").text_content() or ""
        learner.shot("2-setup-cell")
        print(f"setup cell output:\n{output}")
        assert "Traceback" not in output, output
        assert JAPANESE.search(output), f"raylab's setup printed no Japanese:\n{output}"
        assert ENGLISH_BANNER not in output, output
        server.shutdown_kernels()

        # Validate on the copy with a wrong answer: the failed check speaks Japanese
        _open(page, learner, server, f"wrong/{LAB}/{LAB}.ipynb")
        kind, dialog_text = _validate(page, learner)
        learner.shot("3-validate-wrong-answer")
        print(f"validate dialog:\n{dialog_text[:3000]}")
        assert kind == "failed", f"validation of the wrong answer: {kind}\n{dialog_text[:2000]}"
        assert japanese_hint in dialog_text, dialog_text[-3000:]
        # the dialog shows the failed cell's code and traceback (where the hint is written
        # in English, as code) and ends with the error's message: Japanese only
        message = dialog_text[dialog_text.rindex("CheckFailed:"):]
        print(f"the error's message:\n{message}")
        assert japanese_hint in message and ENGLISH_HINT not in message, message
        learner.close_dialog()
