"""A flagged grade is held out of the LMS export until an instructor has reviewed that very
notebook (grader/classroom/exports.py, grader/classroom/review.py), on an in-memory class state."""
import csv
import json

from grader.classroom import exports, review

LAB = "05_failures_and_retries"


def _state():
    return {
        f"ada/{LAB}": {"status": "graded", "flags": [], "digest": "a1", "scores": {"t": [7.0, 7.0]}},
        f"dee/{LAB}": {"status": "graded", "flags": ["cell 3 uses a mechanism ..."], "digest": "d1",
                       "scores": {"t": [7.0, 7.0]}},
    }


def _rows(out):
    with (out / "exports" / "lms_grades.csv").open() as fh:
        return {r["student_id"]: r for r in csv.DictReader(fh)}


def _write(out, state, reviewed=None):
    exports.write_lms(out / "exports" / "lms_grades.csv", state, [LAB], reviewed)
    return _rows(out)


def test_a_flagged_full_mark_is_held_until_reviewed(tmp_path):
    rows = _write(tmp_path, _state())
    assert rows["ada"][LAB] == "7" and rows["ada"]["held_for_review"] == ""
    assert rows["dee"][LAB] == "" and rows["dee"]["total"] == "0" and rows["dee"]["max_total"] == "0"
    assert rows["dee"]["held_for_review"] == LAB and rows["dee"]["needs_review"] == LAB


def test_a_review_releases_the_grade_it_saw_and_no_later_submission(tmp_path):
    state = _state()
    (tmp_path / "state.json").write_text(json.dumps(state))
    assert review.record(tmp_path, [f"dee/{LAB}"]) == []
    rows = _write(tmp_path, state, exports.reviews(tmp_path))
    assert rows["dee"][LAB] == "7" and rows["dee"]["held_for_review"] == ""
    state[f"dee/{LAB}"]["digest"] = "d2"  # dee submitted again after the review
    rows = _write(tmp_path, state, exports.reviews(tmp_path))
    assert rows["dee"][LAB] == "" and rows["dee"]["held_for_review"] == LAB


def test_reviewing_what_is_not_flagged_or_not_there_is_refused(tmp_path):
    (tmp_path / "state.json").write_text(json.dumps(_state()))
    problems = review.record(tmp_path, [f"ada/{LAB}", f"zed/{LAB}"])
    assert [p.split(":")[0] for p in problems] == [f"ada/{LAB}", f"zed/{LAB}"]
    assert exports.reviews(tmp_path) == {}


def test_the_command_rewrites_the_export(tmp_path, capsys):
    (tmp_path / "state.json").write_text(json.dumps(_state()))
    assert review.main([f"dee/{LAB}", "--out", str(tmp_path)]) == 0
    assert _rows(tmp_path)["dee"][LAB] == "7"
