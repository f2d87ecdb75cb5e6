"""Grading noise out of the feedback a learner fetches (grader.workshop.noise), on lines copied from
a real class-grader feedback page of lab 00 (6 Dec 2026): the IP probe, the sandbox's scratch path
and torch's FutureWarning go; the learner's own output and the score stay."""
from __future__ import annotations

from grader.workshop import noise as workshop_noise


def _stream(text: str) -> str:
    return ('<div class="output_area">\n<div class="prompt"></div>\n<div class="output_subarea output_stream '
            f'output_stdout output_text">\n<pre>{text}</pre>\n</div>\n</div>\n')


PAGE = ("<h1>Score: 3 / 7</h1>\n"
        + _stream("[2026-12-06 05:50:26,447 W 1 1] network_util.cc:330: Failed to determine local IP via external "
                  "connectivity to: 8.8.8.8:53, [2001:4860:4860::8888]:53, falling back to hostname resolution\n")
        + _stream("[raylab] 00_lab_setup: Ray 2.58.0 (grading mode), 2 logical CPUs, scratch at "
                  "/home/learner/scratch/00_lab_setup\n")
        + _stream("&lt;string&gt;:37: FutureWarning: `torch.distributed.reduce_op` is deprecated, please use "
                  "`torch.distributed.ReduceOp` instead\n")
        + _stream("my own line\n"))


def test_noise_goes_the_learners_output_and_score_stay():
    page, count = workshop_noise.scrub(PAGE)
    assert count == 3
    for noise in ("network_util", "FutureWarning", "/home/learner"):
        assert noise not in page
    assert "Score: 3 / 7" in page and "my own line" in page
    assert "[raylab] 00_lab_setup: Ray 2.58.0 (grading mode), 2 logical CPUs\n" in page
    assert page.count("output_area") == 2  # the emptied streams are gone, the others kept
