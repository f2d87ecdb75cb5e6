"""notebooks/ is exactly what `nbgrader generate_assignment` makes from solutions/."""
import json

import pytest

from grader import course

LABS = course.labs()


@pytest.mark.parametrize("lab", LABS)
def test_learner_notebook_is_generated_from_solution(lab, tmp_path):
    run = course.generate(lab, tmp_path / "grading", release_dir=tmp_path / "release")
    assert run.returncode == 0, run.output[-2000:]
    fresh = json.loads((tmp_path / "release" / lab / f"{lab}.ipynb").read_text())
    committed = json.loads(course.release_path(lab).read_text())
    assert committed == fresh, f"notebooks/{lab} is out of date or hand-edited: run `make release`"
    extra = sorted(p.name for p in (tmp_path / "release" / lab).iterdir()) 
    assert extra == sorted(p.name for p in course.release_path(lab).parent.iterdir()), \
        "the learner folder should hold exactly what generate_assignment releases"
