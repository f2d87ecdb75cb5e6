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
are in a second catalogue, ``<lang>-cells.po``: :func:`cell_text` translates them at run time. A
text the cell builds with an f-string is there as a pattern (flag ``raylab-f-string``): its
English with each value as ``{expression}``, ``{{``/``}}`` for a literal brace; the text the
helper receives is matched against it and the values it holds go into the translation.
"""
from __future__ import annotations

import collections.abc
import functools
import gettext
import io
import os
import re
from pathlib import Path

LANGUAGES = ("en", "ja")
DEFAULT = "en"
CATALOGUES = Path(__file__).resolve().parent / "locale"
PATTERN_FLAG = "raylab-f-string"  # Babel sets and clears python-brace-format itself


def language() -> str:
    """The language raylab speaks now: ``RAYLAB_LANG`` if it names one, else English."""
    lang = os.environ.get("RAYLAB_LANG", "").strip().lower()
    return lang if lang in LANGUAGES else DEFAULT


def catalogue_path(lang: str, domain: str = "") -> Path:
    """``<lang>.po`` for raylab's own messages; ``<lang>-<domain>.po`` for another domain."""
    return CATALOGUES / (f"{lang}-{domain}.po" if domain else f"{lang}.po")


@functools.lru_cache(maxsize=None)
def _catalog(lang: str, domain: str):
    """The catalogue of ``lang`` read with Babel, or None (English, or no file): English never
    opens a catalogue."""
    if lang == DEFAULT:
        return None
    path = catalogue_path(lang, domain)
    if not path.exists():
        return None
    from babel.messages.pofile import read_po

    with open(path, "rb") as fh:
        return read_po(fh, locale=lang)


@functools.lru_cache(maxsize=None)
def translations(lang: str, domain: str = "") -> gettext.NullTranslations:
    """The translations of ``lang`` (English: the identity), built once per process."""
    catalog = _catalog(lang, domain)
    if catalog is None:
        return gettext.NullTranslations()
    from babel.messages.mofile import write_mo

    compiled = io.BytesIO()
    write_mo(compiled, catalog, use_fuzzy=False)  # a stale (fuzzy) entry stays English
    compiled.seek(0)
    return gettext.GNUTranslations(compiled)


def _(message: str) -> str:
    """``message`` in the learner's language."""
    return translations(language()).gettext(message)


def pattern_parts(text: str) -> list:
    """A pattern's pieces: literal strings and ``(expression,)`` for each ``{expression}``;
    ``{{`` and ``}}`` are literal braces, and a placeholder's own braces nest
    (``"{a}, {{b}} {d[{k}]}"`` -> ``[("a",), ", {b} ", ("d[{k}]",)]``). ValueError if unbalanced."""
    parts, literal, i = [], [], 0
    while i < len(text):
        pair = text[i:i + 2]
        if pair in ("{{", "}}"):
            literal.append(pair[0])
            i += 2
        elif text[i] == "{":
            depth, j = 1, i + 1
            while j < len(text) and depth:
                depth += {"{": 1, "}": -1}.get(text[j], 0)
                j += 1
            if depth:
                raise ValueError(f"unclosed placeholder in {text!r}")
            if literal:
                parts.append("".join(literal))
                literal = []
            parts.append((text[i + 1:j - 1],))
            i = j
        elif text[i] == "}":
            raise ValueError(f"a lone '}}' in {text!r}")
        else:
            literal.append(text[i])
            i += 1
    if literal:
        parts.append("".join(literal))
    return parts


def placeholders(text: str) -> list[str]:
    """The expressions of a pattern's placeholders, sorted (a translation must keep them all)."""
    return sorted(p[0] for p in pattern_parts(text) if isinstance(p, tuple))


@functools.lru_cache(maxsize=None)
def _patterns(lang: str, domain: str) -> list:
    """(regex, group of each expression, translated pieces) of each current pattern entry, the
    one with the most literal text first (so a pattern that says more wins over a vaguer one)."""
    catalog = _catalog(lang, domain)
    found = []
    for m in catalog or ():
        if not (m.id and m.string) or m.fuzzy or PATTERN_FLAG not in m.flags:
            continue
        try:
            english, translated = pattern_parts(m.id), pattern_parts(m.string)
        except ValueError:  # a broken entry stays English (the catalogue's check names it)
            continue
        if placeholders(m.string) != placeholders(m.id):
            continue
        regex, groups = [], {}
        for part in english:
            if isinstance(part, str):
                regex.append(re.escape(part))
            elif part[0] in groups:  # the same value twice: it must be the same text
                regex.append(f"(?P={groups[part[0]]})")
            else:
                groups[part[0]] = f"g{len(groups)}"
                regex.append(f"(?P<{groups[part[0]]}>.*?)")
        literal = sum(len(p) for p in english if isinstance(p, str))
        found.append((literal, re.compile("".join(regex), re.DOTALL), groups, translated))
    found.sort(key=lambda entry: -entry[0])
    return [entry[1:] for entry in found]


def cell_text(message):
    """A message a test cell passed to a check helper, in the learner's language.

    Test cells are the same in both editions, so their texts cannot be translated in the cell:
    the helpers look each one up in the ``cells`` catalogue (``<lang>-cells.po``, built from the
    visible test code of the labs), first as it is, then against the patterns of the texts the
    cells build with f-strings. A text not there, or not a string, comes back as given."""
    if not isinstance(message, str) or not message or language() == DEFAULT:
        return message
    translated = translations(language(), "cells").gettext(message)
    if translated != message:
        return translated
    for regex, groups, pieces in _patterns(language(), "cells"):
        match = regex.fullmatch(message)
        if match:
            return "".join(p if isinstance(p, str) else match.group(groups[p[0]]) for p in pieces)
    return message


class Texts(collections.abc.Mapping):
    """A constant mapping of keys to texts marked :func:`N_`, read in the learner's language (the
    language of the moment each value is read, as :func:`_`)."""

    def __init__(self, texts: dict):
        self._texts = dict(texts)

    def __getitem__(self, key):
        return _(self._texts[key])

    def __iter__(self):
        return iter(self._texts)

    def __len__(self) -> int:
        return len(self._texts)

    def __repr__(self) -> str:
        return repr(dict(self))


def forget_catalogues() -> None:
    """Read the catalogues again at the next message (after one of their files changed)."""
    for cached in (_catalog, translations, _patterns):
        cached.cache_clear()


def N_(message: str) -> str:  # noqa: N802 - gettext's name for a deferred mark
    """Mark ``message`` for translation without translating it: pass it to :func:`_` later."""
    return message
