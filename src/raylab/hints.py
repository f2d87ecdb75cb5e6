"""Friendly hints for the Ray Train V2 / Tune mistakes learners actually make (Ray 2.58.0).

When a notebook cell fails, Ray's own traceback is shown first, exactly as without this module;
then, if the error or any error wrapped inside it matches a known mistake, a short note on
**stdout** names the mistake, the fix, and the lab to reread. stdout, never stderr: nbgrader
scores a test cell 0 as soon as anything appears on stderr.

Ray Train reports failures inside wrappers, so matching looks through the whole chain:
``__cause__`` / ``__context__``, ``WorkerGroupError.worker_failures``,
``ControllerError.controller_failure`` and ``RayTaskError.cause``. Matching uses class names
and message texts observed on Ray 2.58.0 (``tests/helpers/test_hints.py`` triggers the errors for real,
or builds the expensive ones from Ray's own exception classes), so importing this module never
imports Ray.

``raylab.setup()`` calls :func:`install`. :func:`explain` prints the hints for an exception, a
Train ``Result`` or a Tune ``ResultGrid`` (Tune records a failed trial instead of raising).
Set ``RAYLAB_HINTS=0`` to switch the hints off.
"""
from __future__ import annotations

import os
import sys

from raylab.hint_rules import RULES, Hint, chain


def hints_for(exc: BaseException) -> list[Hint]:
    """The hints whose mistake appears anywhere in ``exc``'s chain, most specific first, no repeats."""
    found: list[Hint] = []
    links = chain(exc)
    for rule in RULES:
        try:
            if any(rule.match(link) for link in links) and rule.hint not in found:
                found.append(rule.hint)
        except Exception:  # noqa: BLE001 - a matcher must never break the traceback display
            continue
    return found


def _errors_of(obj) -> list[BaseException]:
    if isinstance(obj, BaseException):
        return [obj]
    errors = getattr(obj, "errors", None)  # tune.ResultGrid
    if isinstance(errors, list):
        return [e for e in errors if isinstance(e, BaseException)]
    error = getattr(obj, "error", None)  # train.Result / tune.Result
    return [error] if isinstance(error, BaseException) else []


def explain(obj, file=None) -> list[Hint]:
    """Print the hints for an exception, a Train ``Result`` or a Tune ``ResultGrid``; return them.

    Tune does not raise when a trial fails, it records the error: ``explain(results)`` looks at
    every failed trial.
    """
    hints: list[Hint] = []
    for error in _errors_of(obj):
        for hint in hints_for(error):
            if hint not in hints:
                hints.append(hint)
    out = file or sys.stdout
    for hint in hints:
        print(hint.render(), file=out, flush=True)
    return hints


def _enabled() -> bool:
    return os.environ.get("RAYLAB_HINTS", "1").strip().lower() not in ("0", "false", "no", "off")


def _print_hints(value: BaseException) -> None:
    try:
        if _enabled():
            explain(value, file=sys.stdout)
    except Exception:  # noqa: BLE001 - never let the hint hide the real error
        pass


def _ipython_handler(shell, etype, value, tb, tb_offset=None):
    """IPython custom-exception handler: the normal traceback first, then the hint on stdout."""
    if issubclass(etype, SyntaxError):  # also reaches us when the cell does not even parse
        shell.showsyntaxerror()
        return None
    shell.showtraceback((etype, value, tb), tb_offset=tb_offset, running_compiled_code=True)
    _print_hints(value)
    return None


_previous_excepthook = None


def _excepthook(etype, value, tb):
    hook = _previous_excepthook or sys.__excepthook__
    hook(etype, value, tb)
    if isinstance(value, Exception):
        sys.stderr.flush()
        _print_hints(value)


def install() -> str:
    """Show hints after failing cells (IPython) or uncaught errors (plain Python). Idempotent.

    Returns where it installed: ``"ipython"``, ``"excepthook"`` or ``"skipped"`` (another custom
    exception handler is already active in IPython, and it is left alone).
    """
    global _previous_excepthook
    try:
        from IPython import get_ipython

        shell = get_ipython()
    except ImportError:
        shell = None
    if shell is not None:
        current = getattr(shell, "custom_exceptions", ())
        if current and not getattr(shell, "_raylab_hints", False):
            return "skipped"
        shell.set_custom_exc((Exception,), _ipython_handler)
        shell._raylab_hints = True
        return "ipython"
    if sys.excepthook is not _excepthook:
        _previous_excepthook = sys.excepthook
        sys.excepthook = _excepthook
    return "excepthook"


def uninstall() -> None:
    """Undo :func:`install`."""
    global _previous_excepthook
    try:
        from IPython import get_ipython

        shell = get_ipython()
    except ImportError:
        shell = None
    if shell is not None and getattr(shell, "_raylab_hints", False):
        shell.set_custom_exc((), None)
        shell._raylab_hints = False
    if sys.excepthook is _excepthook:
        sys.excepthook = _previous_excepthook or sys.__excepthook__
        _previous_excepthook = None


def format_hints(exc: BaseException) -> str:
    """The hint text for ``exc`` ("" when no known mistake matches)."""
    return "\n".join(h.render() for h in hints_for(exc))

