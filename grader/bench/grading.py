"""``make bench-grading``: stock sequential ``nbgrader autograde`` vs the class grader.

Both grade the same N synthetic submissions of one lab (solutions and mutants) on this machine:
stock nbgrader in one ``autograde`` run (sequential, no sandbox, the course's nbgrader config), the
class grader with ``--workers`` parallel sandboxed workers. Also times one bare execution of the
solution notebook (nbclient, grading mode) to show what grading adds per submission. Prints
submissions per minute for both, their ratio, and per-submission cost relative to bare execution.
A benchmark, not a test: numbers vary with the machine and its load.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from grader.authoring import run_solutions
from grader.classroom import grade
from grader.grading import autograde, course
from grader.proof import mutants, synthetic


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lab", default="00_lab_setup")
    parser.add_argument("-n", type=int, default=6, help="number of synthetic submissions")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--sandbox-cost", action="store_true",
                        help="instead: the class grader with and without the sandbox, one worker each")
    args = parser.parse_args(argv)
    if args.sandbox_cost:
        return sandbox_cost(args.lab, args.n)
    base = Path(tempfile.mkdtemp(prefix="bench-grading-"))
    kinds = ["solution"] + [f"mutants{k}" for k in range(len(mutants.rounds(args.lab)))]
    students = {f"s{i:03d}": kinds[i % len(kinds)] for i in range(args.n)}

    start = time.monotonic()
    status, _, _ = run_solutions.run_notebook(course.solution_path(args.lab), grading=True)
    bare = time.monotonic() - start
    print(f"bare execution of {args.lab} (grading mode): {bare:.1f} s ({status})", flush=True)

    stock_dir = base / "stock"
    synthetic.build(stock_dir / "submitted", args.lab, students)
    course.generate(args.lab, stock_dir, release_dir=stock_dir / "release")
    start = time.monotonic()
    run = autograde.stock_autograde(args.lab, stock_dir)
    stock = time.monotonic() - start
    print(f"stock nbgrader autograde (sequential): {stock:.1f} s, rc={run.returncode}", flush=True)

    ours_dir = base / "ours"
    synthetic.build(ours_dir / "submitted", args.lab, students)
    grader = grade.ClassGrader(ours_dir / "submitted", ours_dir / "out", workers=args.workers,
                                    address=None, timeout_s=900, labs=[args.lab])
    start = time.monotonic()
    grader.run()
    ours = time.monotonic() - start

    rate = lambda seconds: 60.0 * args.n / seconds  # noqa: E731
    rows = {
        "submissions": args.n, "lab": args.lab, "workers": args.workers, "bare_s": round(bare, 1),
        "stock_s": round(stock, 1), "ours_s": round(ours, 1),
        "stock_per_min": round(rate(stock), 2), "ours_per_min": round(rate(ours), 2),
        "speedup": round(stock / ours, 2),
        "stock_cost_vs_bare": round(stock / args.n / bare, 2),
        "ours_cost_vs_bare": round(ours * args.workers / args.n / bare, 2),
        "sandbox": grader.sandbox_note,
    }
    print("\n| | stock nbgrader | class grader |\n|---|---|---|")
    print(f"| wall time for {args.n} submissions | {stock:.0f} s | {ours:.0f} s ({args.workers} workers) |")
    print(f"| submissions per minute | {rows['stock_per_min']} | {rows['ours_per_min']} |")
    print(f"| per-submission cost / bare execution | {rows['stock_cost_vs_bare']}x | "
          f"{rows['ours_cost_vs_bare']}x (worker-seconds) |")
    print(f"\nspeed-up: {rows['speedup']}x")
    out = course.ROOT / ".scratch" / "bench_grading.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(rows, indent=1))
    print(f"written to {out}")
    return 0


def sandbox_cost(lab: str, n: int) -> int:
    """What the per-submission sandbox costs: the same submissions through the class grader, one
    worker, sandboxed and not, alternating so that drifting load hits both alike."""
    base = Path(tempfile.mkdtemp(prefix="bench-sandbox-"))
    kinds = ["solution"] + [f"mutants{k}" for k in range(len(mutants.rounds(lab)))]
    seconds = {True: [], False: []}
    for i in range(n):
        for sandbox in (i % 2 == 0, i % 2 != 0):  # alternate which goes first
            where = base / f"{i}-{'box' if sandbox else 'plain'}"
            synthetic.build(where / "submitted", lab, {f"s{i:03d}": kinds[i % len(kinds)]})
            grader = grade.ClassGrader(where / "submitted", where / "out", workers=1, address=None,
                                            timeout_s=900, labs=[lab])
            grader.sandbox = sandbox
            grader.run()
            seconds[sandbox] += [e["seconds"] for e in grader.state.values()]
    box, plain = (sum(seconds[k]) / len(seconds[k]) for k in (True, False))
    rows = {"lab": lab, "submissions": n, "sandboxed_s": round(box, 1), "plain_s": round(plain, 1),
            "overhead": round(box / plain - 1, 3), "each": {str(k): v for k, v in seconds.items()}}
    print(f"{lab}: {n} submissions each way, mean seconds per submission: sandboxed {box:.1f}, "
          f"plain {plain:.1f}: the sandbox adds {100 * (box / plain - 1):.1f} %")
    out = course.ROOT / ".scratch" / "bench_sandbox.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
