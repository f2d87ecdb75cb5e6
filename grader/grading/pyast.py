"""``ast.parse`` that is safe in the class grader's worker threads.

CPython 3.11 keeps the AST constructor's recursion counter in interpreter-wide state, not per
thread: when two threads build syntax trees at once (the tamper scan and the demo trimming of two
submissions graded side by side), one of them can fail with ``SystemError: AST constructor
recursion depth mismatch`` (python/cpython#106905; seen in CI, where it failed a submission as
"grading worker crashed"). Every parse the grader makes goes through one lock.
"""
from __future__ import annotations

import ast
import threading

_LOCK = threading.Lock()


def parse(source: str, filename: str = "<cell>") -> ast.Module:
    """``ast.parse(source)``, one thread at a time."""
    with _LOCK:
        return ast.parse(source, filename=filename)
