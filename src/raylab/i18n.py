"""The language of what raylab prints and raises for the learner: English, or Japanese for the
Japanese edition.

``RAYLAB_LANG`` picks it (``ja`` or ``en``; unset or anything else means English), read at every
message, so a kernel started with it set speaks that language from its first line. ``make lab
EDITION=ja``, the workshop hub and the grader (for a Japanese submission) set it.

Messages are marked for translation where they are written: ``_("English text")`` translates now,
``N_("English text")`` only marks a text that is translated later (a constant, such as a hint of
:mod:`raylab.hint_rules`). The English text is the message id. Values go in through named
placeholders after translation, ``_("{n} workers").format(n=n)``, never an f-string inside
``_()``: the translated text must not depend on the values.

The catalogue of each language is ``raylab/locale/<lang>.po`` (gettext PO, read with Babel into
a ``gettext`` translations object in memory; there is no compiled ``.mo`` file). A message without
a current translation (missing, or marked fuzzy because its English changed) prints in English;
``tests/grader/test_raylab_catalogue.py`` keeps every message translated.

The texts a test cell hands to a check helper (``check(cond, "message")``, ``what=``, ``hint=``)
are in a second catalogue, ``<lang>-cells.po``: :func:`cell_text` translates them at run time.
"""
from __future__ import annotations

import functools
import gettext
import io
import os
from pathlib import Path

LANGUAGES = ("en", "ja")
DEFAULT = "en"
CATALOGUES = Path(__file__).resolve().parent / "locale"


def language() -> str:
    """The language raylab speaks now: ``RAYLAB_LANG`` if it names one, else English."""
    lang = os.environ.get("RAYLAB_LANG", "").strip().lower()
    return lang if lang in LANGUAGES else DEFAULT


def catalogue_path(lang: str, domain: str = "") -> Path:
    """``<lang>.po`` for raylab's own messages; ``<lang>-<domain>.po`` for another domain."""
    return CATALOGUES / (f"{lang}-{domain}.po" if domain else f"{lang}.po")


@functools.lru_cache(maxsize=None)
def translations(lang: str, domain: str = "") -> gettext.NullTranslations:
    """The translations of ``lang`` (English: the identity), built once per process."""
    path = catalogue_path(lang, domain)
    if lang == DEFAULT or not path.exists():
        return gettext.NullTranslations()
    from babel.messages.mofile import write_mo
    from babel.messages.pofile import read_po

    with open(path, "rb") as fh:
        catalog = read_po(fh, locale=lang)
    compiled = io.BytesIO()
    write_mo(compiled, catalog, use_fuzzy=False)  # a stale (fuzzy) entry stays English
    compiled.seek(0)
    return gettext.GNUTranslations(compiled)


def _(message: str) -> str:
    """``message`` in the learner's language."""
    return translations(language()).gettext(message)


def cell_text(message):
    """A message a test cell passed to a check helper, in the learner's language.

    Test cells are the same in both editions, so their texts cannot be translated in the cell:
    the helpers look each one up in the ``cells`` catalogue (``<lang>-cells.po``, built from the
    visible test code of the labs). A text not there, or not a string, comes back as given."""
    if not isinstance(message, str) or not message or language() == DEFAULT:
        return message
    return translations(language(), "cells").gettext(message)


def N_(message: str) -> str:  # noqa: N802 - gettext's name for a deferred mark
    """Mark ``message`` for translation without translating it: pass it to :func:`_` later."""
    return message
