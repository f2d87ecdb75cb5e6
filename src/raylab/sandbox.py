"""The former name of :mod:`raylab.child_process`, kept for notebooks that import it."""
from raylab.child_process import SnippetResult, run_snippet  # noqa: F401
