"""notebooks/ is exactly what `nbgrader generate_assignment` makes from solutions/. A lab in
progress (grader.authoring.lab_status) must generate too, and must not be in notebooks/ yet."""
import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from grader.authoring import lab_status
from grader.grading import course

LABS = course.labs()


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """Every lab released afresh into a scratch folder, two nbgrader processes at a time (each is
    mostly interpreter start-up, so two share the 2 cores well)."""
    base = tmp_path_factory.mktemp("release")

    def one(lab):
        run = course.generate(lab, base / lab / "grading", release_dir=base / lab / "release")
        return lab, (run, base / lab / "release" / lab)

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(pool.map(one, LABS))


@pytest.mark.parametrize("lab", LABS)
def test_learner_notebook_is_generated_from_solution(lab, generated):
    run, folder = generated[lab]
    assert run.returncode == 0, run.output[-2000:]
    if lab_status.in_progress(lab):
        assert not course.release_path(lab).parent.exists(), f"{lab} is in progress: learners must not get it"
        pytest.skip(f"{lab} is in progress: generated, not released yet")
    fresh = json.loads((folder / f"{lab}.ipynb").read_text())
    committed = json.loads(course.release_path(lab).read_text())
    assert committed == fresh, f"notebooks/{lab} is out of date or hand-edited: run `make release`"
    extra = sorted(p.name for p in folder.iterdir())
    assert extra == sorted(p.name for p in course.release_path(lab).parent.iterdir()), \
        "the learner folder should hold exactly what generate_assignment releases"
