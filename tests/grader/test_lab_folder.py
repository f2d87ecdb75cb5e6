"""A lab is one folder of solutions/: its notebook and its mutants file. nbgrader copies the notebook
and never the author's files: not into the learner's release, not beside a graded submission."""
from pathlib import Path

from nbgrader import utils
from nbgrader.coursedir import CourseDirectory
from traitlets.config.loader import PyFileConfigLoader

from grader.grading import course

ROOT = Path(__file__).resolve().parents[2]


def _coursedir() -> CourseDirectory:
    config = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()
    return CourseDirectory(config=config)


def test_every_lab_folder_holds_its_notebook_and_its_mutants():
    for lab in course.labs():
        assert sorted(p.name for p in (ROOT / "solutions" / lab).iterdir()
                      if p.name != ".ipynb_checkpoints") == sorted([f"{lab}.ipynb", "mutants.yaml"])


def test_nbgrader_copies_no_author_file_anywhere():
    """The files autograde copies beside a submission (every non-notebook file of the source folder
    but the ignored ones: nbgrader's converters/autograde.py) and those generate_assignment
    releases are found by the same rule: with the course's configuration, none is an author file."""
    coursedir = _coursedir()
    assert set(course.AUTHOR_ONLY) <= set(coursedir.ignore)
    for lab in course.labs():
        source = str(ROOT / "solutions" / lab)
        assert utils.find_all_files(source, coursedir.ignore + ["*.ipynb"]) == [], lab
        assert [Path(f).name for f in utils.find_all_files(source, coursedir.ignore)] == [f"{lab}.ipynb"]


def test_the_rule_would_see_an_author_file_without_the_ignore_list():
    coursedir = _coursedir()
    kept = [p for p in coursedir.ignore if p not in course.AUTHOR_ONLY]
    found = utils.find_all_files(str(ROOT / "solutions" / "00_lab_setup"), kept + ["*.ipynb"])
    assert [Path(f).name for f in found] == ["mutants.yaml"]


def test_released_lab_folders_hold_only_the_notebook():
    for lab in course.labs():
        folder = ROOT / "notebooks" / lab
        if folder.exists():
            assert [p.name for p in folder.iterdir()] == [f"{lab}.ipynb"], lab
