"""nbgrader preprocessors the course adds to the stock pipeline.

- :class:`StderrToStdout` (autograde): nbgrader scores a test cell 0 if *anything* appears on
  stderr, and Ray writes log lines from background threads into whichever cell is running. Our test
  cells signal failure only by raising, so stderr text in a grade cell is relabelled as stdout:
  still visible in the feedback, no longer a zero. Error outputs are untouched.
- :class:`HideGradeCellTracebacks` (feedback): IPython tracebacks quote the source lines around the
  failing ``assert``, which would leak hidden tests. Keep only the exception type and message.
"""
from __future__ import annotations

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
    def preprocess_cell(self, cell, resources, cell_index):
        if cell.cell_type == "code" and utils.is_grade(cell):
            for output in cell.get("outputs", []):
                if output.get("output_type") == "error":
                    output["traceback"] = [f"{output.get('ename', 'Error')}: {output.get('evalue', '')}"]
        return cell, resources
