"""``make stability LAB=NN_topic RUNS=10``: does every answer get the same grade every time?

Runs the lab's round trip (``grader.proof.roundtrip``: the solution, the untouched copy and every mutant
round, through the class grader's path) ``RUNS`` times and compares each submission's score on
each graded cell across the runs. A score that changes between runs is a flaky test: a right
answer that sometimes loses points, or a wrong one that sometimes keeps them. Prints the cells
that varied and exits 1 when any did (or when a round trip found a problem). Slow: one round trip
per run. A benchmark-style check for a quiet machine, not part of ``make test``.
"""
from __future__ import annotations

import argparse
import sys

from grader.proof import roundtrip


def varying(runs: list[dict]) -> list[str]:
    """``runs``: one ``{student: {grade_id: (score, max)}}`` per run. The cells whose score was not
    the same in every run, as ``student grade_id: [score per run]`` lines."""
    lines = []
    students = sorted({s for run in runs for s in run})
    for student in students:
        cells = sorted({g for run in runs for g in run.get(student, {})})
        for cell in cells:
            seen = [run.get(student, {}).get(cell, (None, None))[0] for run in runs]
            if len(set(seen)) > 1:
                lines.append(f"{student} {cell}: {seen}")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("lab")
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args(argv)
    runs, problems = [], []
    for k in range(args.runs):
        rt = roundtrip.run(args.lab)
        runs.append({student: g.scores for student, g in rt.graded.items()})
        problems += [f"run {k + 1}: {p}" for p in rt.problems]
        print(f"run {k + 1}/{args.runs}: {rt.seconds:.0f} s, {len(rt.graded)} submissions, "
              f"{len(rt.problems)} problem(s)", flush=True)
    changed = varying(runs)
    cells = sum(len(scores) for scores in runs[0].values()) if runs else 0
    print(f"{args.lab}: {args.runs} runs, {cells} graded cells per run; "
          f"{len(changed)} changed between runs")
    for line in changed + problems:
        print("  " + line)
    return 1 if changed or problems else 0


if __name__ == "__main__":
    sys.exit(main())
