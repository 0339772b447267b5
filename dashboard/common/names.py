"""The one rule for names people give things: experiments, sweeps, searches, analyses, uploads, maps, teams, tokens.

A name is shown in lists, titles, links and downloads beside other people's
names, so it must display as what it is. Unicode *format* characters
(category Cf) are invisible, and some reorder the text around them: the
bidirectional embeddings, overrides and isolates (U+202A-U+202E,
U+2066-U+2069) make "report", U+202E, "fdp.exe" display as "reportexe.pdf";
the zero-width ones (U+200B-U+200F, U+2060, U+FEFF) make two different names
look the same. Control characters (Cc) and the line and paragraph separators
(Zl, Zp) break a name's line. Such a name is refused, not silently cleaned,
naming the code point and its position, so the user sees what was there.

This refuses U+200C and U+200D too, which Persian and Indic spellings and
emoji sequences use: for a label that others must be able to trust, a name
that looks the same without them is the price.

:func:`validate_name` is a Django validator: the models' name fields carry
it (so admin forms and ``full_clean`` apply it), and every form and API
serializer field that takes a name lists it (Django and DRF run it after
trimming surrounding whitespace). ``tests/dashboard/test_names.py`` finds
every form and serializer field called like a name and checks that it does.
Uploaded file names need no such rule: ``safe_filename`` keeps only
``[A-Za-z0-9._-]``.
"""

from __future__ import annotations

import unicodedata

from django.core.exceptions import ValidationError

#: Unicode general categories refused in a name: format (invisible, direction-changing), control, separators.
HIDDEN_CATEGORIES = frozenset({"Cf", "Cc", "Zl", "Zp"})


def hidden_character(text: str) -> tuple[int, str] | None:
    """The first refused character of ``text`` as (0-based index, character), or None."""
    for i, ch in enumerate(text):
        if unicodedata.category(ch) in HIDDEN_CATEGORIES:
            return i, ch
    return None


def describe(ch: str) -> str:
    """``U+202E RIGHT-TO-LEFT OVERRIDE`` (controls have no Unicode name: ``U+0009``)."""
    name = unicodedata.name(ch, "")
    return f"U+{ord(ch):04X}" + (f" {name}" if name else "")


def validate_name(value: object) -> None:
    """Refuse a name holding an invisible or direction-changing character, saying which and where (1-based)."""
    if not isinstance(value, str):
        return  # the field's own type check speaks
    found = hidden_character(value)
    if found is not None:
        i, ch = found
        raise ValidationError(
            "contains an invisible or direction-changing character (%(char)s) at position %(position)d; remove it",
            code="hidden_character",
            params={"char": describe(ch), "position": i + 1},
        )
