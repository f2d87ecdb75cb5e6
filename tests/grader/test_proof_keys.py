"""A grading's key (grader/proof/keys.py) changes with every input that can change the grading,
and with nothing else: over a copy of the course tree, one byte of each kind of input is changed
and the keys of gradings of two labs are compared before and after."""
import dataclasses
import shutil
from pathlib import Path

import nbformat
import pytest

from grader.grading import autograde, edition
from grader.proof import environment, keys

ROOT = Path(__file__).resolve().parents[2]
LABS = ("00_lab_setup", "03_checkpoints_and_report")
# No sandbox probe: these tests compare keys of one tree, not what this machine can do.
OPTIONS = autograde.Options(feedback=False, sandbox=False)


@pytest.fixture
def tree(tmp_path):
    """A copy of what a key reads: two labs' solutions, src/raylab, grader/, nbgrader_config.py and
    the environment files."""
    for lab in LABS:
        shutil.copytree(ROOT / "solutions" / lab, tmp_path / "solutions" / lab)
    shutil.copytree(ROOT / "src" / "raylab", tmp_path / "src" / "raylab",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "grader", tmp_path / "grader", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("nbgrader_config.py", "requirements.txt", "requirements-dev.txt", "constraints.txt"):
        shutil.copy(ROOT / name, tmp_path / name)
    return tmp_path


def _submissions(root: Path) -> dict:
    """(lab, name) -> (notebook bytes, cells left out): each lab's solution graded whole and
    with its first answer cell left out, and a copy with one answer changed."""
    subs = {}
    for lab in LABS:
        nb = nbformat.read(root / "solutions" / lab / f"{lab}.ipynb", as_version=4)
        answers = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")]
        subs[(lab, "whole")] = (nbformat.writes(nb).encode(), [])
        subs[(lab, "trimmed")] = (nbformat.writes(nb).encode(), [answers[0].metadata.nbgrader.grade_id])
        answers[0].source += "\nx = 1"
        subs[(lab, "other answer")] = (nbformat.writes(nb).encode(), [])
    return subs


def _keys(root: Path, subs: dict | None = None, options=OPTIONS) -> dict:
    environment.environment_parts.cache_clear()
    builder = keys.KeyBuilder(options, root)
    return {name: builder.parts(name[0], nb, left_out).key
            for name, (nb, left_out) in (subs or _submissions(root)).items()}


def _changed(before: dict, after: dict) -> set:
    return {name for name in before if before[name] != after[name]}


ALL = {(lab, kind) for lab in LABS for kind in ("whole", "trimmed", "other answer")}


def _edit_cell(path: Path, pick, change) -> None:
    nb = nbformat.read(path, as_version=4)
    cell = next(c for c in nb.cells if pick(c))
    change(cell)
    nbformat.write(nb, path)


def test_the_parts_differ_only_where_the_inputs_do(tree):
    before = _keys(tree)
    assert len(set(before.values())) == len(before)  # every grading its own key
    assert _keys(tree) == before  # and the same key from the same tree


def test_a_lab_s_solution_code_changes_that_lab_s_keys_only(tree):
    before = _keys(tree)
    path = tree / "solutions" / LABS[1] / f"{LABS[1]}.ipynb"
    _edit_cell(path, lambda c: c.cell_type == "code" and "grade_id" in c.metadata.get("nbgrader", {})
               and c.metadata.nbgrader.get("locked"), lambda c: setattr(c, "source", c.source + " "))
    assert _changed(before, _keys(tree, _submissions(ROOT))) == {(LABS[1], k) for k in ("whole", "trimmed", "other answer")}


def test_a_lab_s_nbgrader_metadata_and_other_files_change_its_keys(tree):
    before = _keys(tree, _submissions(ROOT))
    path = tree / "solutions" / LABS[0] / f"{LABS[0]}.ipynb"
    _edit_cell(path, lambda c: c.metadata.get("nbgrader", {}).get("points"),
               lambda c: c.metadata.nbgrader.update(points=c.metadata.nbgrader.points + 1))
    after = _keys(tree, _submissions(ROOT))
    assert _changed(before, after) == {(LABS[0], k) for k in ("whole", "trimmed", "other answer")}
    (tree / "solutions" / LABS[1] / "data.csv").write_text("a,b\n1,2\n")  # a file the lab could read
    assert _changed(after, _keys(tree, _submissions(ROOT))) == {(LABS[1], k) for k in ("whole", "trimmed", "other answer")}


def test_the_labs_own_mutants_file_changes_no_key(tree):
    """nbgrader never copies a lab's mutants.yaml (the author's file): editing a mutant changes that
    mutant's submission, not the template every other grading of the lab shares."""
    before = _keys(tree, _submissions(ROOT))
    with open(tree / "solutions" / LABS[0] / "mutants.yaml", "a") as fh:
        fh.write("\n# a new mutant would go here\n")
    assert _keys(tree, _submissions(ROOT)) == before


def test_markdown_and_outputs_change_no_key(tree):
    subs = _submissions(ROOT)
    before = _keys(tree, subs)
    for lab in LABS:
        _edit_cell(tree / "solutions" / lab / f"{lab}.ipynb", lambda c: c.cell_type == "markdown",
                   lambda c: setattr(c, "source", c.source + "\n\nA new sentence for learners."))
    edited = {}
    for name, (data, left_out) in subs.items():
        nb = nbformat.reads(data.decode(), as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "markdown":
                cell.source = "Rewritten prose."
            else:
                cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="old output")]
        edited[name] = (nbformat.writes(nb).encode(), left_out)
    assert _keys(tree, edited) == before


def test_a_released_copy_s_prose_and_its_checksums_change_no_key():
    """A learner copy carries nbgrader's checksum of every locked cell; a locked prose cell's
    checksum is a digest of its text, so a prose edit that `make release` carries into every
    submission built from the learner copy changes no key."""
    nb = nbformat.read(ROOT / "notebooks" / LABS[0] / f"{LABS[0]}.ipynb", as_version=4)
    prose = next(c for c in nb.cells if c.cell_type == "markdown" and "checksum" in c.metadata.get("nbgrader", {}))
    before = keys.notebook_digest(nbformat.writes(nb).encode())
    prose.source += "\n\nA new sentence."
    prose.metadata.nbgrader.checksum = "0" * 32
    assert keys.notebook_digest(nbformat.writes(nb).encode()) == before
    code = next(c for c in nb.cells if c.cell_type == "code" and "checksum" in c.metadata.get("nbgrader", {}))
    code.metadata.nbgrader.checksum = "0" * 32
    assert keys.notebook_digest(nbformat.writes(nb).encode()) != before


def test_a_submission_s_code_and_its_cells_left_out_change_that_grading_only(tree):
    subs = _submissions(ROOT)
    before = _keys(tree, subs)
    assert before[(LABS[0], "whole")] != before[(LABS[0], "other answer")]  # one answer differs
    assert before[(LABS[0], "whole")] != before[(LABS[0], "trimmed")]  # the same notebook, cells left out
    nb, left_out = subs[(LABS[1], "trimmed")]
    changed = dict(subs)
    changed[(LABS[1], "trimmed")] = (nb.replace(b"import", b"import ", 1), left_out)
    assert _changed(before, _keys(tree, changed)) == {(LABS[1], "trimmed")}


@pytest.mark.parametrize("path", ["grader/grading/autograde.py", "grader/grading/trim.py", "grader/grading/nbgrader_ext.py",
                                  "grader/grading/isolation.py", "grader/grading/nbgrader_config.py", "nbgrader_config.py",
                                  "grader/grading/sandbox/enter.sh", "src/raylab/checks/common.py",
                                  "src/raylab/kuberay_crds/README.md", "src/raylab/i18n.py",
                                  "grader/grading/edition.py"])
def test_a_byte_of_the_recipe_or_of_raylab_changes_every_key(tree, path):
    subs = _submissions(ROOT)
    before = _keys(tree, subs)
    with open(tree / path, "a") as fh:
        fh.write("\n")
    assert _changed(before, _keys(tree, subs)) == ALL


@pytest.mark.parametrize("catalogue", ["src/raylab/locale/ja.po", "src/raylab/locale/ja-cells.po"])
def test_a_japanese_catalogue_changes_the_keys_of_japanese_copies_only(tree, catalogue):
    """An English kernel opens no catalogue (raylab.i18n): a translation re-keys its own edition."""
    subs = _submissions(ROOT)
    for (lab, kind), (nb, left_out) in list(subs.items()):
        japanese = edition.marked(nbformat.reads(nb.decode(), as_version=4), "ja")
        subs[(lab, kind + " ja")] = (nbformat.writes(japanese).encode(), left_out)
    before = _keys(tree, subs)
    with open(tree / catalogue, "a") as fh:
        fh.write("\n")
    assert _changed(before, _keys(tree, subs)) == {(lab, kind + " ja") for lab, kind in ALL}


@pytest.mark.parametrize("path", ["grader/bench/labs.py", "grader/proof/roundtrip_rules.py", "grader/visible_catch.json",
                                  "grader/proof/plan.py", "requirements-dev.txt"])
def test_what_a_grading_never_runs_changes_no_key(tree, path):
    """The judging rules, the tools around the grader and the developers' pins are not inputs."""
    subs = _submissions(ROOT)
    before = _keys(tree, subs)
    with open(tree / path, "a") as fh:
        fh.write("\n")
    assert _keys(tree, subs) == before


def test_a_module_the_grading_starts_to_import_joins_the_recipe(tree):
    helper = tree / "grader" / "grading" / "new_helper.py"
    assert "grader/grading/new_helper.py" not in keys.recipe_modules(tree)
    helper.write_text("LIMIT = 1\n")
    with open(tree / "grader" / "grading" / "tamper_scan.py", "a") as fh:
        fh.write("\nfrom grader.grading import new_helper  # noqa\n")
    assert "grader/grading/new_helper.py" in keys.recipe_modules(tree)
    subs = _submissions(ROOT)
    before = _keys(tree, subs)
    helper.write_text("LIMIT = 2\n")
    assert _changed(before, _keys(tree, subs)) == ALL


def test_a_bare_import_beside_nbgraders_configuration_joins_the_recipe(tree):
    """nbgrader_config.py puts its own folder on sys.path: a bare import there is a sibling module."""
    (tree / "grader" / "grading" / "bare_helper.py").write_text("LIMIT = 1\n")
    assert "grader/grading/bare_helper.py" not in keys.recipe_modules(tree)
    with open(tree / "grader" / "grading" / "nbgrader_ext.py", "a") as fh:
        fh.write("\nimport bare_helper  # noqa\n")
    assert "grader/grading/bare_helper.py" in keys.recipe_modules(tree)


def test_the_kernel_environment_and_the_grading_options_are_in_the_recipe(tree, monkeypatch):
    subs = _submissions(ROOT)
    before = _keys(tree, subs)
    monkeypatch.setenv("SOMETHING_A_KERNEL_NEVER_SEES", "1")
    assert _keys(tree, subs) == before  # not on the sandbox's allow-list
    monkeypatch.setenv("RAY_TRAIN_COLLECTIVE_TIMEOUT_S", "7")  # passed to the kernel (isolation.PASSED_PREFIXES)
    assert _changed(before, _keys(tree, subs)) == ALL
    monkeypatch.delenv("RAY_TRAIN_COLLECTIVE_TIMEOUT_S")
    assert _changed(before, _keys(tree, subs, dataclasses.replace(OPTIONS, cell_timeout_s=30))) == ALL
    assert _keys(tree, subs) == before


def test_the_course_environment_is_its_requirements_and_what_they_require(tree):
    names = {environment.canonical(d.metadata["Name"]) for d in environment.course_distributions(tree)}
    assert {"ray", "torch", "nbgrader", "jupyterlab", "numpy", "nbformat", "nbclient"} <= names
    assert not {"pytest", "pytest-xdist", "playwright", "pyflakes", "jupyterhub"} & names  # other environments
    subs = _submissions(ROOT)
    before = _keys(tree, subs)
    with open(tree / "requirements.txt", "a") as fh:  # a test tool joins the course environment
        fh.write("pytest==9.2.0\n")
    assert _changed(before, _keys(tree, subs)) == ALL


def test_a_distribution_is_keyed_by_its_recorded_files_not_by_where_the_environment_is():
    class Dist:
        def __init__(self, record):
            self.record, self.metadata, self.version = record, {"Name": "demo"}, "1.0"

        def read_text(self, name):
            return self.record if name == "RECORD" else None

    record = ("demo/__init__.py,sha256=AAA,10\ndemo/__pycache__/x.pyc,,\n"
              "../../../bin/demo,sha256=BBB,50\ndemo-1.0.dist-info/INSTALLER,sha256=CCC,4\n")
    base = environment.distribution_digest(Dist(record))
    assert environment.distribution_digest(Dist(record.replace("BBB", "XXX").replace("CCC", "YYY"))) == base
    assert environment.distribution_digest(Dist(record.replace("AAA", "AAB"))) != base


def test_the_machine_class_and_the_schema_are_in_every_key(tree, monkeypatch):
    subs = _submissions(ROOT)
    before = _keys(tree, subs)
    machine = dict(keys.machine_class())
    monkeypatch.setattr(keys, "machine_class", lambda: {**machine, "gpus": ["GPU 0: NVIDIA H100"]})
    assert _changed(before, _keys(tree, subs)) == ALL
    monkeypatch.undo()
    parts = keys.KeyBuilder(OPTIONS, tree).parts(LABS[0], *subs[(LABS[0], "whole")])
    assert dataclasses.replace(parts, schema=keys.SCHEMA + 1).key != parts.key
    assert {f.name for f in dataclasses.fields(keys.Parts)} == {
        "submission", "template", "recipe", "raylab", "environment", "machine", "schema"}


def test_the_machine_class_names_no_speed():
    machine = keys.machine_class()
    assert set(machine) == {"os", "kernel", "libc", "cgroup", "arch", "cores", "gpus"}
