"""grader.grading.pyast: syntax trees built from several grading threads at once.

CPython 3.11 counts the AST constructor's recursion per interpreter; when a thread switch happens
inside ``ast.parse`` (here forced by a garbage-collector callback that yields the GIL, as any
finalizer doing I/O does), the other thread's parse corrupts the count and one of them raises
``SystemError: AST constructor recursion depth mismatch``. This failed a submission in CI.
"""
import ast
import gc
import sys
import threading
import time

import pytest

from grader.grading import pyast

SOURCE = "\n".join(f"def f{i}(a, b=[1, 2, {{3: 4}}]):\n    return [(a + b) * (a - b) for a in range(3) if a]"
                   for i in range(20))


def _parse_in_threads(parse, per_thread: int, stop_at_first_error: bool, threads: int = 4) -> tuple[int, int]:
    """(SystemErrors, parses made) with every garbage collection yielding the GIL."""
    errors, made = [], [0]
    done = threading.Event()

    def work():
        for _ in range(per_thread):
            if done.is_set():
                return
            try:
                parse(SOURCE)
            except SystemError as exc:
                errors.append(exc)
                if stop_at_first_error:
                    done.set()
            made[0] += 1

    def yield_gil(phase, info):
        time.sleep(0)

    old = gc.get_threshold()
    gc.callbacks.append(yield_gil)
    gc.set_threshold(100)
    try:
        workers = [threading.Thread(target=work) for _ in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
    finally:
        gc.callbacks.remove(yield_gil)
        gc.set_threshold(*old)
    return len(errors), made[0]


def test_parsing_from_several_threads_raises_no_systemerror_through_the_lock():
    raw_errors, parses = _parse_in_threads(ast.parse, per_thread=300, stop_at_first_error=True)
    if not raw_errors:
        pytest.skip(f"{sys.version.split()[0]}: {parses} parallel ast.parse calls raised nothing, "
                    "so this Python does not show the race the lock is for")
    locked_errors, _ = _parse_in_threads(pyast.parse, per_thread=max(parses // 4, 25), stop_at_first_error=False)
    assert locked_errors == 0


def test_parse_returns_the_same_tree_as_ast_parse():
    assert ast.dump(pyast.parse(SOURCE)) == ast.dump(ast.parse(SOURCE))
    with pytest.raises(SyntaxError):
        pyast.parse("def broken(:\n")
