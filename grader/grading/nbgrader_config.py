"""nbgrader configuration of the lab kit. The repository root's nbgrader_config.py loads this file.

Course layout: source = solutions/, release = notebooks/. Submissions, autograded copies, feedback
and the SQLite gradebook live in a git-ignored work folder (.grading/ by default; the grader and
the tests point RAYLAB_GRADING_DIR elsewhere to keep runs apart).
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from nbconvert.preprocessors import ClearMetadataPreprocessor, CSSHTMLHeaderPreprocessor  # noqa: E402
from nbgrader.preprocessors import (  # noqa: E402
    AssignLatePenalties, CheckCellMetadata, ClearHiddenTests, Execute,
    GetGrades, IgnorePattern, LimitOutput, SaveAutoGrades)

from course import AUTHOR_ONLY  # noqa: E402
from nbgrader_ext import (  # noqa: E402
    CapOutputBytes, HideGradeCellTracebacks, SentinelInject, SentinelVerify, StderrToStdout)

WORK = os.environ.get("RAYLAB_GRADING_DIR") or os.path.join(ROOT, ".grading")
os.makedirs(WORK, exist_ok=True)  # SQLite creates the gradebook file, not its folder

c = get_config()  # noqa: F821 - provided by traitlets when it loads this file

c.CourseDirectory.course_id = "ray-train-tune"
c.CourseDirectory.root = ROOT
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "notebooks"
c.CourseDirectory.submitted_directory = os.path.join(WORK, "submitted")
c.CourseDirectory.autograded_directory = os.path.join(WORK, "autograded")
c.CourseDirectory.feedback_directory = os.path.join(WORK, "feedback")
c.CourseDirectory.solution_directory = os.path.join(WORK, "solution")
c.CourseDirectory.db_url = "sqlite:///" + os.path.join(WORK, "gradebook.db")
# nbgrader copies every other file of a lab's source folder into the release and beside each
# submission it grades: the author's own files (the lab's wrong answers) must never go there.
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback", *AUTHOR_ONLY]

# Ray start-up and a Train fit each take tens of seconds on 2 cores; nbgrader's default is 30 s.
# Interrupting on timeout records the error on that cell and carries on with the rest.
c.Execute.timeout = 300
c.Execute.startup_timeout = 120
c.Execute.interrupt_on_timeout = True
# A learner who deletes a test cell must not turn it into "needs manual grading": put it back.
c.OverwriteCells.add_missing_cells = True

c.Autograde.autograde_preprocessors = [
    SentinelInject,
    Execute,
    SentinelVerify,
    StderrToStdout,
    IgnorePattern,
    ClearMetadataPreprocessor,
    LimitOutput,
    CapOutputBytes,
    SaveAutoGrades,
    AssignLatePenalties,
    CheckCellMetadata,
]
c.GenerateFeedback.preprocessors = [
    GetGrades,
    CSSHTMLHeaderPreprocessor,
    ClearHiddenTests,
    HideGradeCellTracebacks,
]
