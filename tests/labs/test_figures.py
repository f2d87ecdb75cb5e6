"""Every lab that produces a curve or a table shows it as a labelled matplotlib figure.

Reads the solution notebooks only (fast). A lab passes when one of its code cells other than a
test cell draws a figure, either with ``raylab.plots`` (whose helpers take a title and both axis
labels) or with matplotlib directly, then with a title and at least one axis label in the same
cell. The quiz produces neither curves nor tables and is not listed; a lab in progress joins the
list when it is finished (grader.authoring.lab_status).
"""
import ast

import nbformat
import pytest

from grader.authoring import lab_status
from grader.grading import course

RAYLAB_PLOTS = {"curves", "bars", "stacked_bars"}
MPL_DRAWING = {"plot", "bar", "barh", "scatter", "hist", "step", "stairs", "imshow", "fill_between",
               "errorbar", "boxplot", "violinplot", "pie", "stackplot", "semilogy", "loglog", "axvspan"}
LABELS_X_OR_Y = {"set_xlabel", "set_ylabel", "xlabel", "ylabel", "set_yticks", "set_xticks"}
TITLE = {"set_title", "title", "suptitle"}

LABS_WITH_CURVES_OR_TABLES = [
    "00_lab_setup",
    "01_train_v2_responsibilities",
    "02_scaling_config_and_resources",
    "03_checkpoints_and_report",
    "05_failures_and_retries",
    "06_tune_searchers_and_schedulers",
    "07_train_tune_integration",
    "08_operating_on_kuberay",
    "04_pytorch_ddp",
]


def _dotted(node) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _strip_magics(source: str) -> str:
    return "\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!")))


def figure_problem(source: str):
    """None when the cell draws a labelled figure; otherwise why not (``"no figure"`` if it draws
    nothing at all)."""
    try:
        tree = ast.parse(_strip_magics(source))
    except SyntaxError:
        return "no figure"
    plots_names = {"raylab.plots"}  # how this cell can name the raylab.plots module
    uses_matplotlib = False
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "raylab":
            plots_names |= {a.asname or a.name for a in node.names if a.name == "plots"}
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "raylab.plots" and alias.asname:
                    plots_names.add(alias.asname)
                uses_matplotlib |= alias.name.startswith("matplotlib")
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("matplotlib"):
            uses_matplotlib = True
    calls = [_dotted(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)]
    for call in ast.walk(tree):
        if isinstance(call, ast.Call):
            module, _, name = _dotted(call.func).rpartition(".")
            if module in plots_names and name in RAYLAB_PLOTS:
                given = {kw.arg for kw in call.keywords}
                missing = {"title", "xlabel", "ylabel"} - given
                if not missing:
                    return None
                return f"{_dotted(call.func)}(...) without {sorted(missing)}"
    last = {c.rpartition(".")[2] for c in calls}
    if uses_matplotlib and last & MPL_DRAWING:
        if not last & TITLE:
            return "a matplotlib figure without a title"
        if not last & LABELS_X_OR_Y:
            return "a matplotlib figure without axis labels"
        return None
    return "no figure"


@pytest.mark.parametrize("lab", LABS_WITH_CURVES_OR_TABLES)
def test_lab_shows_a_labelled_figure(lab):
    nb = nbformat.read(course.solution_path(lab), as_version=4)
    problems = []
    for cell in nb.cells:
        if cell.cell_type != "code" or cell.metadata.get("nbgrader", {}).get("grade"):
            continue
        problem = figure_problem(cell.source)
        if problem is None:
            return
        if problem != "no figure":
            problems.append(f"{cell.metadata.get('nbgrader', {}).get('grade_id', cell.get('id'))}: {problem}")
    pytest.fail(f"{lab} draws no labelled figure (raylab.plots.curves/bars/stacked_bars, or matplotlib "
                f"with a title and axis labels) in any non-test code cell"
                + ("; found: " + "; ".join(problems) if problems else ""))


def test_the_list_covers_every_lab_but_the_quiz():
    finished = lab_status.finished_labs()
    assert set(LABS_WITH_CURVES_OR_TABLES) == {lab for lab in finished if not lab.endswith(("_quiz", "_capstone"))}


@pytest.mark.parametrize("source, problem", [
    ("import raylab.plots\nraylab.plots.bars({1: 2}, title='t', xlabel='x', ylabel='y')", None),
    ("from raylab import plots\nplots.curves({}, title='t', xlabel='x', ylabel='y');", None),
    ("import raylab.plots\nraylab.plots.bars({1: 2}, title='t', xlabel='x', ylabel='y', ax=ax)", None),
    ("import raylab.plots\nraylab.plots.bars(values, **labels)", "without"),
    ("import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nax.plot([1, 2])\nax.set_title('t')\n"
     "ax.set_xlabel('x')", None),
    ("import matplotlib.pyplot as plt\nplt.plot([1, 2])", "without a title"),
    ("import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.title('t')", "without axis labels"),
    ("print('a table of numbers')", "no figure"),
    ("df.plot()", "no figure"),
    ("%matplotlib inline\nimport matplotlib.pyplot as plt\nplt.bar([1], [2]); plt.title('t'); plt.ylabel('y')",
     None),
])
def test_figure_detection(source, problem):
    found = figure_problem(source)
    if problem is None:
        assert found is None
    else:
        assert found is not None and problem in found
