"""What the class grader prints while and after it grades: a line per graded submission (with
tqdm's estimate of the time left) and the summary table (graded / failed with reason / needs review)."""
from __future__ import annotations

import sys
import time
from pathlib import Path


class Progress:
    """tqdm's bar on a terminal (stderr), and one line per graded submission on stdout, with tqdm's
    estimate of the time left (also in logs and pipes, where the bar is off)."""

    def __init__(self, total: int):
        from tqdm import tqdm

        self.bar = tqdm(total=total, unit="submission", file=sys.stderr, disable=not sys.stderr.isatty(),
                        dynamic_ncols=True)
        self.total, self.count, self.start = total, 0, time.monotonic()

    def step(self, unit, result: dict) -> None:
        from tqdm import tqdm

        self.count += 1
        self.bar.update(1)
        rate = self.count / max(time.monotonic() - self.start, 1e-9)
        eta = tqdm.format_interval((self.total - self.count) / rate)
        got = sum((s[0] or 0) for s in result.get("scores", {}).values())
        top = sum((s[1] or 0) for s in result.get("scores", {}).values())
        what = f"{got:g}/{top:g}" if result["status"] == "graded" else f"FAILED: {result['reason'][:60]}"
        tqdm.write(f"[{self.count}/{self.total}] {unit.key:<36} {what:<28} "
                   f"({result.get('seconds', 0):.0f} s)  left: {eta}", file=sys.stdout)
        sys.stdout.flush()
        if self.count == self.total:
            self.bar.close()


def print_summary(units: list, state: dict, exports: Path) -> dict:
    """Print the class's outcome (each failure with its reason, each submission to review with
    its flags); return the rows by outcome."""
    rows = {"graded": [], "failed": [], "review": []}
    for unit in units:
        entry = state.get(unit.key)
        if entry is None:
            continue
        if entry["status"] == "graded":
            rows["graded"].append(unit.key)
            manual = any(s[2] for s in (entry.get("scores") or {}).values())
            if manual or entry.get("flags"):
                rows["review"].append((unit.key, "; ".join(entry.get("flags") or []) or "needs manual grading"))
        else:
            rows["failed"].append((unit.key, entry["reason"]))
    print("\n[grader] summary")
    print(f"  graded: {len(rows['graded'])}   failed: {len(rows['failed'])}   "
          f"needs review: {len(rows['review'])}   not graded (interrupted): "
          f"{len(units) - len(rows['graded']) - len(rows['failed'])}")
    for key, reason in rows["failed"]:
        print(f"  FAILED  {key:<40} {reason}")
    for key, reason in rows["review"]:
        print(f"  REVIEW  {key:<40} {reason}")
    print(f"  exports: {exports}")
    return rows
