"""Fast tests of the grader's guards on in-memory notebooks (no kernel, no nbgrader run):
copied cells, the tampering scan, feedback redaction, the byte cap, the in-kernel report."""
import json
import subprocess
import sys

import nbformat

from grader.authoring import text as authoring
from grader.grading import feedback_guard, nbgrader_ext, submission_check, tamper_scan


def _nb(answer: str, *extra):
    return authoring.new_notebook([
        authoring.make_cell("code", "setup", "import math\nfrom raylab.checks.common import check_thing"),
        authoring.make_cell("answer", "double_answer", answer),
        authoring.make_cell("tests", "double_tests", "assert math.isclose(double(2), 4)\ncheck_thing(double)", points=1),
        *extra,
    ])


def _bytes(nb) -> bytes:
    return nbformat.writes(nb).encode()


def test_invalid_files_get_a_reason():
    assert "not valid JSON" in submission_check.check(b'{"cells": [').problem
    assert "no 'cells'" in submission_check.check(b'{"a": 1}').problem


def test_a_copied_graded_cell_becomes_an_ordinary_cell_and_is_flagged():
    nb = _nb("def double(x):\n    return 2 * x")
    nb.cells.append(nbformat.from_dict(json.loads(json.dumps(nb.cells[1]))))
    broken = nbformat.v4.new_code_cell("x = 1")
    broken.metadata["nbgrader"] = {"grade": False, "solution": True}
    nb.cells.append(broken)
    checked = submission_check.check(_bytes(nb))
    assert checked.problem is None
    assert len(checked.flags) == 2 and "a copy of the graded cell 'double_answer'" in checked.flags[0]
    assert "incomplete grading data" in checked.flags[1]
    graded = nbformat.reads(checked.data.decode(), as_version=4)
    ids = [c.metadata.get("nbgrader", {}).get("grade_id") for c in graded.cells]
    assert ids == ["setup", "double_answer", "double_tests", None, None]


def test_a_plain_answer_is_not_flagged():
    assert tamper_scan.flags(_nb("import math\nimport numpy as np\n%time y = 1\n"
                                 "def double(x):\n    return 2 * x")) == []


def test_every_tampering_mechanism_is_flagged():
    attacks = {
        "get_ipython().input_transformers_post.append(f)": "get_ipython",
        "get_ipython().events.register('pre_run_cell', print)": "events",
        "import builtins\nbuiltins.print = None": "builtins",
        "math.isclose = lambda *a, **k: True": "math.isclose",
        "check_thing = lambda *a: None": "check_thing",
        "def isinstance(*a):\n    return True": "isinstance",
        "exec('x = 1')": "exec",
        "getattr(__builtins__, 'print')": "__builtins__",
        "import sys\nsys.settrace(None)": "settrace",
        "print(In[-1])": "In",
        "print(_ii)": "_ii",
        "print(_i12[::-1])": "_i12",
        "import linecache\nprint(linecache.cache)": "linecache",
        "f = double.__globals__": "__globals__",
    }
    for code, why in attacks.items():
        found = tamper_scan.flags(_nb(code + "\ndef double(x):\n    return 2 * x"))
        assert found and why in found[0], (code, found)


def test_toolbox_imports_are_flagged_for_their_risky_members_only():
    """An environment report's sys, inspect or importlib.metadata cannot change a later cell; a
    frame, a dynamic import, sys.modules or the module handed around (out of the scan's sight) can."""
    honest = ["import sys\nprint(sys.version, sys.executable, sys.version_info.major)",
              "import importlib\nprint(importlib.metadata.version('ray'))",
              "from importlib.metadata import version\nprint(version('ray'))",
              "import inspect\nprint(inspect.signature(print))",
              "import types\nns = types.SimpleNamespace(a=1)",
              "import traceback\ntry:\n    1 / 0\nexcept ZeroDivisionError:\n    traceback.print_exc()"]
    for code in honest:
        assert tamper_scan.flags(_nb(code + "\ndef double(x):\n    return 2 * x")) == [], code
    risky = {"import inspect as i\nf = i.currentframe()": "inspect.currentframe",
             "from sys import modules\nmodules.clear()": "modules from sys",
             "import importlib\nb = importlib.import_module('builtins')": "importlib.import_module",
             "import importlib.util": "importlib.util",
             "from inspect import *": "* from inspect",
             "import sys as s\nhook = s.monitoring": "sys.monitoring",
             "import sys\nm = sys": "hands the module sys around",
             "import sys\nf = getattr(sys, 'set' + 'trace')": "hands the module sys around",
             "import types\nf = types.FunctionType(double.__code__, {})": "types.FunctionType"}
    for code, why in risky.items():
        found = tamper_scan.flags(_nb(code + "\ndef double(x):\n    return 2 * x"))
        assert found and why in found[0], (code, found)


def test_course_cells_and_re_imports_are_not_the_learners():
    nb = _nb("import math\nfrom raylab.checks.common import check_thing\ndef double(x):\n    return 2 * x")
    assert tamper_scan.flags(nb) == []


def test_hidden_test_lines_are_redacted_plain_and_escaped():
    source = "x = 1\n### BEGIN HIDDEN TESTS\nassert double(1000003) == 2000006, \"big\"\n### END HIDDEN TESTS"
    lines = feedback_guard.hidden_lines_of([source])
    html = ('<pre>assert double(1000003) == 2000006, &quot;big&quot;</pre>'
            '<pre>assert double(1000003) == 2000006, "big"</pre>')
    text, count = feedback_guard.redact(html, lines)
    assert count == 2 and "1000003" not in text and feedback_guard.MARKER in text
    assert feedback_guard.redact("nothing here", lines) == ("nothing here", 0)


def test_every_lab_has_hidden_lines_to_look_for():
    assert len(feedback_guard.course_hidden_lines()) > 20


def test_text_the_learner_copies_already_show_is_never_redacted():
    # a hidden test may repeat a common line (`import torch as _torch`): no leak, no review flag
    # (every learner copy: a lab in progress has none yet)
    from grader.authoring import lab_status
    from grader.grading import course
    for lab in lab_status.finished_labs():
        released = nbformat.read(course.release_path(lab), as_version=4)
        text = "\n".join(c.source for c in released.cells)
        assert feedback_guard.redact(text) == (text, 0), lab


def test_outputs_are_capped_in_bytes():
    cell = nbformat.v4.new_code_cell("print(...)")
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="x" * 1_000_000),
                    nbformat.v4.new_output("display_data", data={"text/html": "<b>" + "y" * 500_000}),
                    nbformat.v4.new_output("error", ename="E", evalue="z" * 10_000, traceback=["t"] * 500)]
    capped, _ = nbgrader_ext.CapOutputBytes().preprocess_cell(cell, {}, 0)
    assert len(json.dumps(capped.outputs)) < 260_000
    assert "[output cut:" in capped.outputs[0]["text"]
    assert "left out" in capped.outputs[1]["data"]["text/plain"]
    assert len(capped.outputs[2]["evalue"]) == 4000 and len(capped.outputs[2]["traceback"]) == 100


def test_stderr_in_a_test_cell_becomes_stdout_and_nowhere_else():
    """nbgrader zeroes a test cell with any stderr text; Ray logs from background threads into the
    running cell. Only grade cells are relabelled, and an error output stays an error."""
    nb = _nb("def double(x):\n    return 2 * x")
    answer, test = nb.cells[1], nb.cells[2]
    for cell in (answer, test):
        cell.outputs = [nbformat.v4.new_output("stream", name="stderr", text="(raylet) a log line\n"),
                        nbformat.v4.new_output("error", ename="AssertionError", evalue="", traceback=[])]
    nb, _ = nbgrader_ext.StderrToStdout().preprocess(nb, {})
    assert [o.get("name") for o in test.outputs] == ["stdout", None]
    assert test.outputs[1].output_type == "error"
    assert answer.outputs[0].name == "stderr"  # not a grade cell: left as it was


def test_feedback_shows_a_failed_test_cells_error_without_its_source_lines():
    """A traceback quotes the lines around the failing assert, hidden tests included: feedback keeps
    the exception and message, and points at the section above the exercise when the error has no
    hint of its own."""
    nb = _nb("def double(x):\n    return 2 * x")
    nb.cells.insert(1, nbformat.v4.new_markdown_cell("# Lab\n## Exercise 1: doubling"))
    test = nb.cells[3]
    secret = "assert double(1000003) == 2000006  # hidden"
    test.outputs = [nbformat.v4.new_output("error", ename="AssertionError", evalue="double(3) should be 6",
                                           traceback=["----> 5 " + secret, "AssertionError: double(3) should be 6"])]
    nb, _ = nbgrader_ext.HideGradeCellTracebacks().preprocess(nb, {})
    shown = "\n".join(test.outputs[0].traceback)
    assert secret not in shown
    assert shown == 'AssertionError: double(3) should be 6\nHint: reread "Exercise 1: doubling" and run the visible checks again.'
    test.outputs[0].update(evalue="Hint: use 2 * x", traceback=["----> 5 " + secret])
    nb, _ = nbgrader_ext.HideGradeCellTracebacks().preprocess(nb, {})
    assert test.outputs[0].traceback == ["AssertionError: Hint: use 2 * x"]  # its own hint, no second


def test_sentinel_verify_reads_the_report_and_flags_a_cell_that_stopped_early():
    nb = _nb("def double(x):\n    return 2 * x")
    resources = {}
    nb, resources = nbgrader_ext.SentinelInject().preprocess(nb, resources)
    token = resources["raylab_sentinel"]
    test = nb.cells[2]
    assert test.source.startswith("__import__('builtins').exec(")
    test.outputs = [nbformat.v4.new_output("stream", name="stdout",
                                           text=token + 'state["an input transformer"]\nvisible\n')]
    nb, _ = nbgrader_ext.SentinelVerify().preprocess(nb, resources)
    assert test.source == "assert math.isclose(double(2), 4)\ncheck_thing(double)"
    kinds = [(o.output_type, o.get("ename"), o.get("text")) for o in test.outputs]
    assert kinds[0] == ("stream", None, tamper_scan.STATE_LINE + "an input transformer\n")
    assert kinds[1] == ("stream", None, "visible\n")
    assert kinds[2][1] == "TestCellTampered"  # no completion token: the cell stopped early
    flags = tamper_scan.output_flags(nbformat.writes(nb))
    assert any("tampered" in f for f in flags) and any("an input transformer" in f for f in flags)


def _probe_report(setup: str) -> list:
    """Run the in-kernel report in a real IPython shell after `setup`; return what it found."""
    code = ("import json\nfrom IPython.core.interactiveshell import InteractiveShell\n"
            "ip = InteractiveShell.instance()\n"
            f"ip.run_cell({setup!r})\n"
            f"ip.run_cell({nbgrader_ext._probe_line('T')!r})\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120).stdout
    line = next(l for l in out.splitlines() if l.startswith("Tstate"))
    return json.loads(line[len("Tstate"):])


def test_in_kernel_report_accepts_rays_own_print_and_flags_a_learners():
    # Ray swaps print for tqdm_ray.safe_print in the driver as soon as worker logs arrive.
    assert _probe_report("from ray.experimental import tqdm_ray\ntqdm_ray.instance()") == []
    assert "a replaced builtin (print)" in _probe_report("import builtins\nbuiltins.print = lambda *a, **k: None")
    forged = ("import builtins\nfrom ray.experimental import tqdm_ray\n"
              "tqdm_ray.safe_print = lambda *a, **k: None\nbuiltins.print = tqdm_ray.safe_print")
    assert "a module function replaced by notebook code (ray.experimental.tqdm_ray.safe_print)" in _probe_report(forged)
