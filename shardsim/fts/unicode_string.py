"""Text search's Unicode operations (the server's src/mongo/db/fts/unicode/): delimiters, case folding,
diacritic removal, and the substring match phrases use.

* A *delimiter* ends a word: white space, dashes, hyphens, quotation marks, terminal
  punctuation, pattern syntax (ASCII punctuation and symbols but `_`), sentence
  terminators; in English the apostrophe is not one, so "don't" stays one word.
* *Case folding* maps each code point to its simple case folding (one code point
  for one: "ß" stays "ß"); in Turkish "I" folds to dotless "ı" and "İ" to "i".
* *Diacritic removal* drops pure diacritics (combining marks, `^`, `` ` ``) and
  maps a letter to its base letter ("é" -> "e") when that is one code point.

The tables come from the Unicode Character Database (`unicode_tables.py`, generated);
Python's `str.translate` applies them.
"""

from __future__ import annotations

import re

from mongosim.shardsim.fts.unicode_tables import ASCII_DELIMITERS, DELIMITER_RANGES, LOWER, REMOVE_DIACRITICS

_TURKISH_LOWER = {0x49: 0x131, 0x130: 0x69}


def _class(ascii_chars: str) -> str:
    parts = [re.escape(c) for c in ascii_chars]
    parts += [f"{re.escape(chr(a))}-{re.escape(chr(b))}" if a != b else re.escape(chr(a)) for a, b in DELIMITER_RANGES]
    return "[" + "".join(parts) + "]+"


_ENGLISH_SPLIT = re.compile(_class(ASCII_DELIMITERS.replace("'", ""))).split
_OTHER_SPLIT = re.compile(_class(ASCII_DELIMITERS)).split

# str.translate tables: lower-casing (ASCII A-Z and the non-ASCII simple foldings), diacritics
_LOWER_TABLE = {**{c: c | 0x20 for c in range(0x41, 0x5B)}, **LOWER}
_LOWER_TABLE_TR = {**_LOWER_TABLE, **_TURKISH_LOWER}
_STRIP_TABLE = {cp: (chr(v) if v else None) for cp, v in REMOVE_DIACRITICS.items()}


def words(text: str, english: bool) -> list[str]:
    """The words of `text`: the runs of non-delimiters (UnicodeFTSTokenizer's boundaries)."""
    return [w for w in (_ENGLISH_SPLIT if english else _OTHER_SPLIT)(text) if w]


def to_lower(text: str, turkish: bool = False) -> str:
    """codepointToLower applied to every code point."""
    return text.translate(_LOWER_TABLE_TR if turkish else _LOWER_TABLE)


def strip_diacritics(text: str) -> str:
    return text.translate(_STRIP_TABLE)


def case_fold_and_strip_diacritics(text: str, case_sensitive: bool, diacritic_sensitive: bool,
                                   turkish: bool = False) -> str:
    """String::caseFoldAndStripDiacritics: lower-case unless case sensitive, then remove diacritics unless
    diacritic sensitive."""
    if not case_sensitive:
        text = to_lower(text, turkish)
    if not diacritic_sensitive:
        text = strip_diacritics(text)
    return text


def substr_match(haystack: str, needle: str, case_sensitive: bool, diacritic_sensitive: bool,
                 turkish: bool = False) -> bool:
    """String::substrMatch: `needle` occurs in `haystack` once both are folded alike (Turkish is always
    case insensitive)."""
    if turkish:
        case_sensitive = False
    return case_fold_and_strip_diacritics(needle, case_sensitive, diacritic_sensitive, turkish) in \
        case_fold_and_strip_diacritics(haystack, case_sensitive, diacritic_sensitive, turkish)
