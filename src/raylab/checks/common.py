"""Readable checks for test cells: they say what is wrong and where to look.

A failed check raises ``AssertionError`` with a message written for the learner, so nbgrader's
feedback and the Validate button show a sentence instead of a bare ``assert`` line. The sentences
raylab writes are in the learner's language (``RAYLAB_LANG``, :mod:`raylab.i18n`); a ``message``,
``what`` or ``hint`` passed in is shown in it too when the test-cell catalogue has that exact text
(:func:`raylab.i18n.cell_text`), else as given.
"""
from __future__ import annotations

import math

from raylab.i18n import _, cell_text


class CheckFailed(AssertionError):
    """A course check failed; the message says what to fix."""


def check(condition, message: str, *, hint: str | None = None) -> None:
    """Fail with ``message`` (and an optional pointer to the section to reread) unless true."""
    if not condition:
        message, hint = cell_text(message), cell_text(hint)
        text = message if hint is None else message + "\n" + _("Hint: {hint}").format(hint=hint)
        raise CheckFailed(text)


def checked(what: str) -> None:
    """Print the line that ends a visible test cell, saying what it verified."""
    print(_("Checked: {what}").format(what=cell_text(what)))


def check_equal(actual, expected, what: str, *, hint: str | None = None) -> None:
    what = cell_text(what)
    check(actual == expected, _("{what}: expected {expected!r}, got {actual!r}.").format(
        what=what, expected=expected, actual=actual), hint=hint)


def check_close(actual, expected, what: str, *, rel: float = 1e-6, abs_tol: float = 1e-9,
                hint: str | None = None) -> None:
    what = cell_text(what)
    check(isinstance(actual, (int, float)) and not isinstance(actual, bool),
          _("{what}: expected a number, got {type} ({actual!r}).").format(
              what=what, type=type(actual).__name__, actual=actual), hint=hint)
    check(math.isclose(actual, expected, rel_tol=rel, abs_tol=abs_tol),
          _("{what}: expected about {expected!r}, got {actual!r}.").format(
              what=what, expected=expected, actual=actual), hint=hint)


def check_type(value, types, what: str, *, hint: str | None = None) -> None:
    what = cell_text(what)
    names = _(" or ").join(t.__name__ for t in (types if isinstance(types, tuple) else (types,)))
    check(isinstance(value, types), _("{what} should be a {names}, got {type}.").format(
        what=what, names=names, type=type(value).__name__), hint=hint)


def check_keys(mapping, keys, what: str, *, hint: str | None = None) -> None:
    what = cell_text(what)
    check_type(mapping, dict, what, hint=hint)
    missing = [k for k in keys if k not in mapping]
    check(not missing, _("{what} is missing the key(s) {missing}.").format(what=what, missing=missing), hint=hint)


def check_raises(exc_types, fn, what: str, *, hint: str | None = None):
    """Call ``fn()`` and require it to raise one of ``exc_types``; return the exception."""
    what = cell_text(what)
    try:
        fn()
    except exc_types as exc:  # the expected failure
        return exc
    except Exception as exc:  # noqa: BLE001 - report what was raised instead
        raise CheckFailed(_("{what}: expected {expected!r}, got {type}: {exc}").format(
            what=what, expected=exc_types, type=type(exc).__name__, exc=exc)) from exc
    raise CheckFailed(_("{what}: expected {expected!r} to be raised, but nothing was raised.").format(
        what=what, expected=exc_types) + ("\n" + _("Hint: {hint}").format(hint=cell_text(hint)) if hint else ""))
