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
    path = plan.write(plans)
    expected = plan.expected_wall_s(plans)
    if expected > args.budget:
        print(f"\nThe proof cannot fit: about {expected:.0f} s of grading against a budget of {args.budget:.0f} s. "
              "Prove the labs above with make prove and commit their ledger files.")
        return 3
    print(f"plan written to {path.relative_to(plan.course.ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
