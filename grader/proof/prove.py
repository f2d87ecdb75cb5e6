"""``make prove``: grade every submission of each lab's round trip with no cache, judge it, and
record it: the raw results in the ledger (``ledger/<lab>.json``) and what Validate catches in
``grader/visible_catch.json``. The only writer of both.

It records only a full proof (every mutant and right answer) of a tree whose proof inputs are
committed, so every entry is a result of the tree as committed. ``--no-record`` grades and judges
without writing; ``--mutants N`` grades each exercise's first N mutants (never recorded).
``--misses`` grades only the gradings whose keys the ledger lacks (what ``make test`` would grade)
and records the whole lab: after a change to a few mutants, only their rounds run again.
``--address`` spreads the gradings over a running Ray cluster (each node must hold the course at
the same path with the same environment, as ``make grade ADDRESS=...`` needs); a grading that ran
on a machine of another class is keyed by that machine, so it serves only proofs made there.
"""
from __future__ import annotations

import argparse
import sys

from grader.grading import course
from grader.proof import ledger, roundtrip, roundtrip_report, roundtrip_rules


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="make prove", description=__doc__.split("\n\n")[0])
    parser.add_argument("labs", nargs="*")
    parser.add_argument("--mutants", type=int, default=None, metavar="N",
                        help="grade only each exercise's first N mutants (not recorded)")
    parser.add_argument("--only", default=None, metavar="NAME,NAME",
                        help="grade only the mutants named (and every right answer; not recorded)")
    parser.add_argument("--misses", action="store_true",
                        help="grade only what the ledger lacks (its stored gradings are judged again)")
    parser.add_argument("--no-record", action="store_true", help="grade and judge, record nothing")
    parser.add_argument("--address", help="grade on a running Ray cluster (e.g. auto or host:6379)")
    parser.add_argument("--tests", action="store_true",
                        help="prove the heavy test modules (grader/proof/suites.py) instead of labs")
    parser.add_argument("--workers", type=int, default=None,
                        help="gradings at once (default 2 here; a cluster: one per 2 CPUs it has)")
    return parser


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    if args.tests:
        return prove_modules(record=not args.no_record)
    labs = args.labs or course.labs()
    unknown = sorted(set(labs) - set(course.labs()))
    if unknown:
        print(f"no such lab: {', '.join(unknown)} (labs: {', '.join(course.labs())})")
        return 2
    only = frozenset(args.only.split(",")) if args.only else None
    record = args.mutants is None and only is None and not args.no_record
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
    try:
        bad = sum(not prove_lab(lab, args, workers=workers, only=only, record=record) for lab in labs)
    finally:
        if args.address:
            import ray

            ray.shutdown()
    if not args.labs and record:  # every lab: then the heavy test modules, whose keys read the labs' ledger
        bad += prove_modules(record=True)
    return 1 if bad else 0


def prove_lab(lab: str, args, *, workers, only, record: bool) -> bool:
    """Grade, judge and (``record``) record one lab's round trip; True when it proved right."""
    rt = roundtrip.run(lab, workers=workers, mutants_per_exercise=args.mutants, address=args.address,
                       only=only, stored=ledger.read(lab) if args.misses else None)
    print(roundtrip_report.report(rt), flush=True)
    # a recorded proof replaces the record, so it is judged against its own counts (an
    # exercise Validate shows no mutant of still fails); the record's diff shows any drop
    visible = roundtrip.validate_problems(rt, recorded=rt.visible if record else None)
    for problem in visible:
        print(f"  VISIBLE: {problem}")
    if record and rt.records:
        path = ledger.write(ledger.LabLedger(lab, rt.records, ledger.head_commit()))
        print(f"  ledger: {path.relative_to(course.ROOT)} holds its {len(rt.records)} gradings", flush=True)
        if not lab.endswith("_quiz"):
            roundtrip_rules.write_visible_record(lab, rt.visible)
            print(f"  visible catch recorded in {roundtrip_rules.VISIBLE_RECORD.relative_to(course.ROOT)}")
    return not (rt.problems or visible)


def prove_modules(record: bool) -> int:
    """Run every heavy test module with no cache and record those that passed whole in
    ``ledger/tests.json`` (their keys cover the whole tree but prose: all of it must be committed)."""
    from grader.proof import suites

    if record:
        # what this same command wrote for the labs (the ledger, the visible-catch record) may be uncommitted
        written = ("ledger/", str(roundtrip_rules.VISIBLE_RECORD.relative_to(course.ROOT)))
        dirty = [p for p in ledger.uncommitted_tree() if not p.startswith(written)]
        if dirty:
            print("make prove records the tree as committed; uncommitted changes:\n  " + "\n  ".join(dirty))
            return 2
    entries, tail = suites.prove()
    modules = suites.cached_modules()
    passed = sorted(e["module"] for e in entries.values())
    print(tail)
    print(f"heavy test modules: {len(passed)} of {len(modules)} passed whole")
    for module in sorted(set(modules) - set(passed)):
        print(f"  NOT PROVEN: {module}")
    if record:
        path = suites.write(entries, ledger.head_commit())
        print(f"  ledger: {path.relative_to(course.ROOT)} holds {len(entries)} modules")
    return 0 if len(passed) == len(modules) else 1


if __name__ == "__main__":
    sys.exit(main())
