"""Grading noise out of a feedback page before a learner reads it.

The class grader runs each submission in a sandbox with a loopback-only network and its own home
(``grader.grading.isolation.HOME``), so its feedback pages carry lines a learner never saw in their own
run and reads as failures: Ray's probe for the machine's address ("Failed to determine local IP
via external connectivity ... falling back to hostname resolution", a C++ warning logged once per
cluster start), the sandbox's scratch paths ("scratch at /home/learner/scratch/..."), and
FutureWarnings that libraries print while the tests import them (torch's
``torch.distributed.reduce_op``). Only stream outputs' lines that match are touched; scores, test
cells, errors and hints stay as the grader wrote them.
"""
from __future__ import annotations

import re

from grader.grading.isolation import HOME

SCRATCH = f"{HOME}/scratch"
_LINES = [
    # Ray 2.58.0's network_util.cc in a network namespace without a route out.
    re.compile(r"(?:^|(?<=<pre>))\[[^\]\n]*\] network_util\.cc:\d+: Failed to determine local IP[^\n]*\n", re.M),
    # warnings.warn's two-line form: "<file>:<line>: FutureWarning: ..." and the source line, indented.
    re.compile(r"(?:^|(?<=<pre>))(?:&lt;[^&\n]*&gt;|[^\s:<>]+\.py):\d+: FutureWarning: [^\n]*\n(?:[ \t]+[^\n]*\n)?", re.M),
]
_SETUP_SCRATCH = re.compile(rf", scratch at {re.escape(SCRATCH)}[^\s<]*")
_EMPTY_STREAM = re.compile(r'<div class="output_area">\s*<div class="prompt"></div>\s*'
                           r'<div class="output_subarea output_stream [^"]*">\s*<pre></pre>\s*</div>\s*</div>')


def scrub(page: str) -> tuple[str, int]:
    """``page`` without the grading noise; and how many pieces were removed or shortened."""
    count = 0
    for pattern in _LINES:
        page, n = pattern.subn("", page)
        count += n
    page, n = _SETUP_SCRATCH.subn("", page)
    count += n
    page, n = re.subn(re.escape(SCRATCH), "your lab's scratch folder", page)
    count += n
    page = _EMPTY_STREAM.sub("", page)
    return page, count
