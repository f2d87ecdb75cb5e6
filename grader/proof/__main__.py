"""``python -m grader.proof status|check``: what the proof must grade for this tree.

``status`` prints what is stale (and which inputs changed), what CI will regrade and about how
long. ``check`` (the first step of ``make test``) writes the plan the round-trip tests follow and
fails at once when the misses cannot fit CI's time, naming them and the command that proves them.
"""
from __future__ import annotations

import argparse
import sys

from grader.proof import plan


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader.proof", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["status", "check"])
    parser.add_argument("labs", nargs="*")
    parser.add_argument("--budget", type=float, default=plan.CI_BUDGET_S,
                        help=f"seconds of grading the misses may take (check; default {plan.CI_BUDGET_S:.0f})")
    args = parser.parse_args(argv)
    plans = plan.make_plan(args.labs or None)
    print(plan.describe(plans), flush=True)
    if args.command == "status":
        return 0
    refused = plan.over_budget(plans, args.budget)
    if refused:
        print("\n" + refused)
        return 3
    path = plan.write(plans)
    print(f"plan written to {path.relative_to(plan.course.ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
