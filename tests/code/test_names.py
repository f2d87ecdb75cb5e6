"""Every name the course's Python code uses is defined (pyflakes, the undefined-name checks only).

A missing import in a module split in two (``raylab.hint_rules`` lost ``import os``) raised
``NameError`` inside a hint matcher, which the hint display swallows by design, so a hint quietly
never matched and only a slow test on a real cluster noticed. This finds such slips in seconds.
Unused imports are not reported: several modules re-export names for released notebooks.
"""
from pathlib import Path

import pytest
from pyflakes import api, messages, reporter

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("grader", "src/raylab", "scripts", "tests")
# nbgrader reads its config files with get_config() already defined in their namespace.
CONFIG_FILES = {"nbgrader_config.py"}
NAME_ERRORS = (messages.UndefinedName, messages.UndefinedLocal, messages.UndefinedExport)


class _Collect(reporter.Reporter):
    def __init__(self):
        super().__init__(None, None)
        self.found = []

    def flake(self, message):
        if isinstance(message, NAME_ERRORS):
            self.found.append(str(message))

    def syntaxError(self, filename, msg, lineno, offset, text):  # noqa: N802 - pyflakes' API
        self.found.append(f"{filename}:{lineno}: syntax error: {msg}")

    def unexpectedError(self, filename, msg):  # noqa: N802
        self.found.append(f"{filename}: {msg}")


@pytest.mark.parametrize("folder", FOLDERS)
def test_no_undefined_names(folder):
    report = _Collect()
    for path in sorted((ROOT / folder).rglob("*.py")):
        if path.name not in CONFIG_FILES:
            api.checkPath(str(path), report)
    assert not report.found, "\n".join(report.found)
