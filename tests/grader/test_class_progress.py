"""The class grader's progress output (fast): one line per graded submission, with the time left."""
import re
from pathlib import Path

from grader.classroom import grade, units


def test_one_line_per_submission_with_score_or_reason_and_time_left(capsys):
    progress = grade.Progress(2)
    progress.step(units.Unit("ada", "00_lab_setup", Path("x")),
                  {"status": "graded", "scores": {"a": [2.0, 2.0, False], "b": [1.0, 4.0, False]}, "seconds": 12})
    progress.step(units.Unit("bob", "00_lab_setup", Path("y")),
                  {"status": "failed", "reason": "the kernel died", "scores": {}, "seconds": 3})
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    assert re.match(r"\[1/2\] ada/00_lab_setup +3/6 +\(12 s\)  left: \d\d:\d\d$", lines[0]), lines[0]
    assert re.match(r"\[2/2\] bob/00_lab_setup +FAILED: the kernel died +\(3 s\)  left: 00:00$", lines[1]), lines[1]
