"""nbgrader preprocessors the course adds to the stock pipeline.

- :class:`StderrToStdout` (autograde): nbgrader scores a test cell 0 if *anything* appears on
  stderr, and Ray writes log lines from background threads into whichever cell is running. Our test
  cells signal failure only by raising, so stderr text in a grade cell is relabelled as stdout:
  still visible in the feedback, no longer a zero. Error outputs are untouched.
- :class:`HideGradeCellTracebacks` (feedback): IPython tracebacks quote the source lines around the
  failing ``assert``, which would leak hidden tests. Keep only the exception type and message.
"""
from __future__ import annotations

import nbformat
from nbgrader import utils
from nbgrader.preprocessors import NbGraderPreprocessor


class StderrToStdout(NbGraderPreprocessor):
    def preprocess_cell(self, cell, resources, cell_index):
        if cell.cell_type == "code" and utils.is_grade(cell):
            for output in cell.get("outputs", []):
                if output.get("output_type") == "stream" and output.get("name") == "stderr":
                    output["name"] = "stdout"
        return cell, resources


class HideGradeCellTracebacks(NbGraderPreprocessor):
    """Feedback: a failed test cell shows its exception type and message, plus a hint.

    Course checks carry their own ``Hint:``; any other failure (``NotImplementedError``, a
    ``NameError``...) gets a pointer to the section heading above the exercise.
    """

    def preprocess(self, nb, resources):
        section = "the lab's introduction"
        for cell in nb.cells:
            if cell.cell_type == "markdown":
                headings = [l.lstrip("#").strip() for l in cell.source.splitlines() if l.startswith("#")]
                if headings:
                    section = headings[-1]
            elif utils.is_grade(cell):
                for output in cell.get("outputs", []):
                    if output.get("output_type") == "error":
                        text = f"{output.get('ename', 'Error')}: {output.get('evalue', '')}"
                        if "Hint:" not in text:
                            text += f"\nHint: reread \"{section}\" and run the visible checks again."
                        output["traceback"] = text.splitlines()
        return nb, resources


# --- Tamper evidence for test cells -------------------------------------------------------------
# The learner's code and the tests run in one kernel, so learner code can try to make a failing
# test cell look clean, e.g. with an IPython custom exception handler that swallows the error.
# Before execution each test cell gets a last line that prints a per-run random token; after
# execution a test cell that shows neither an error nor its token did not run to completion, and
# gets an error output instead (scoring 0). The token and line are removed again before saving.
_SENTINEL_PREFIX = "__raylab_test_cell_completed__"


class SentinelInject(NbGraderPreprocessor):
    def preprocess(self, nb, resources):
        import secrets

        token = f"{_SENTINEL_PREFIX}{secrets.token_hex(16)}"
        resources["raylab_sentinel"] = token
        for cell in nb.cells:
            if cell.cell_type == "code" and utils.is_grade(cell):
                cell.source = cell.source + f"\nprint({token!r}, flush=True)"
        return nb, resources


class SentinelVerify(NbGraderPreprocessor):
    def preprocess(self, nb, resources):
        token = resources.get("raylab_sentinel")
        if not token:
            return nb, resources
        suffix = f"\nprint({token!r}, flush=True)"
        for cell in nb.cells:
            if not (cell.cell_type == "code" and utils.is_grade(cell)):
                continue
            if cell.source.endswith(suffix):
                cell.source = cell.source[: -len(suffix)]
            seen, outputs = False, []
            for out in cell.get("outputs", []):
                if out.get("output_type") == "stream" and token in out.get("text", ""):
                    seen = True
                    out["text"] = out["text"].replace(token + "\n", "").replace(token, "")
                    if not out["text"]:
                        continue
                outputs.append(out)
            failed = any(o.get("output_type") == "error" for o in outputs)
            if not seen and not failed:
                outputs.append(nbformat.v4.new_output(
                    "error", ename="TestCellTampered",
                    evalue="this test cell did not run to completion, yet no error was shown "
                           "(an exception was suppressed); it scores 0 and is flagged for review",
                    traceback=["TestCellTampered: the test cell did not run to completion"]))
            cell.outputs = outputs
        return nb, resources
