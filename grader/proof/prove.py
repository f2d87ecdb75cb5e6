"""``make prove``: grade every submission of each lab's round trip with no cache, judge it, and
record it: the raw results in the ledger (``ledger/<lab>.json``) and what Validate catches in
``grader/visible_catch.json``. The only writer of both.

It records only a full proof (every mutant and right answer) of a tree whose proof inputs are
committed, so every entry is a result of the tree as committed. ``--no-record`` grades and judges
without writing; ``--mutants N`` grades each exercise's first N mutants (never recorded).
``--address`` spreads the gradings over a running Ray cluster (each node must hold the course at
the same path with the same environment, as ``make grade ADDRESS=...`` needs); a grading that ran
on a machine of another class is keyed by that machine, so it serves only proofs made there.
"""
from __future__ import annotations

import argparse
import sys

from grader import course, roundtrip, roundtrip_rules
from grader.proof import ledger


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="make prove", description=__doc__.split("\n\n")[0])
    parser.add_argument("labs", nargs="*")
    parser.add_argument("--mutants", type=int, default=None, metavar="N",
                        help="grade only each exercise's first N mutants (not recorded)")
    parser.add_argument("--no-record", action="store_true", help="grade and judge, record nothing")
    parser.add_argument("--address", help="grade on a running Ray cluster (e.g. auto or host:6379)")
    parser.add_argument("--workers", type=int, default=None,
                        help="gradings at once (default 2 here; a cluster: one per 2 CPUs it has)")
    args = parser.parse_args(argv)
    labs = args.labs or course.labs()
    unknown = sorted(set(labs) - set(course.labs()))
    if unknown:
        print(f"no such lab: {', '.join(unknown)} (labs: {', '.join(course.labs())})")
        return 2
    record = args.mutants is None and not args.no_record
    if record:
        dirty = sorted({p for lab in labs for p in ledger.uncommitted_inputs(lab)})
        if dirty:
            print("make prove records the tree as committed; these proof inputs have uncommitted changes:\n  "
                  + "\n  ".join(dirty) + "\ncommit them first (or grade without recording: --no-record)")
            return 2
    workers = args.workers
    if args.address:
        import ray

        ray.init(address=args.address, log_to_driver=False)
        workers = workers or max(1, int(ray.cluster_resources().get("CPU", 2) // 2))
    bad = 0
    try:
        for lab in labs:
            rt = roundtrip.run(lab, workers=workers, mutants_per_exercise=args.mutants, address=args.address)
            print(roundtrip.report(rt), flush=True)
            # a recorded proof replaces the record, so it is judged against its own counts (an
            # exercise Validate shows no mutant of still fails); the record's diff shows any drop
            visible = roundtrip.validate_problems(rt, recorded=rt.visible if record else None)
            for problem in visible:
                print(f"  VISIBLE: {problem}")
            bad += bool(rt.problems or visible)
            if record and rt.records:
                path = ledger.write(ledger.LabLedger(lab, rt.records, ledger.head_commit()))
                print(f"  ledger: {path.relative_to(course.ROOT)} holds its {len(rt.records)} gradings", flush=True)
                if not lab.endswith("_quiz"):
                    roundtrip_rules.write_visible_record(lab, rt.visible)
                    print(f"  visible catch recorded in {roundtrip_rules.VISIBLE_RECORD.relative_to(course.ROOT)}")
    finally:
        if args.address:
            import ray

            ray.shutdown()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
