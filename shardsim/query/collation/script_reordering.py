"""Script reordering (`[reorder Cyrl]`, the collation's `reorder` codes): whole scripts moved first.

In the root collation the letters of the scripts follow the digits in DUCET's order
(Latin, Greek, Coptic, Cyrillic, ..., Arabic, ..., Devanagari, ...); a locale that
reorders names scripts to come first, in its order, and the rest keep theirs after
them (ICU's CollationData::makeReorderRanges for script codes: spaces, punctuation,
symbols, currency and digits stay where they are; "others" (Zzzz) is no reordering).

`reordering(table_primaries, codes)` maps each primary of the script area (from the
first Latin letter up to the last explicit DUCET primary below the implicit weights) to
its reordered value: a permutation of that area, so weights stay distinct and dense.  A
primary belongs to the script whose letters' names (`CYRILLIC SMALL LETTER A`) say so;
one no letter names (a mark, a sign of its own) belongs with the script before it.

Hand-written: Python's `unicodedata` has no Script property and pyuca no reordering.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from typing import Iterable

__all__ = ["reordering", "SCRIPT_NAMES"]

# ISO 15924 codes the CLDR tailorings reorder, and the word their letters' Unicode names start with
SCRIPT_NAMES = {
    "Latn": "LATIN", "Grek": "GREEK", "Copt": "COPTIC", "Cyrl": "CYRILLIC", "Glag": "GLAGOLITIC",
    "Armn": "ARMENIAN", "Hebr": "HEBREW", "Arab": "ARABIC", "Syrc": "SYRIAC", "Thaa": "THAANA",
    "Deva": "DEVANAGARI", "Beng": "BENGALI", "Guru": "GURMUKHI", "Gujr": "GUJARATI", "Orya": "ORIYA",
    "Taml": "TAMIL", "Telu": "TELUGU", "Knda": "KANNADA", "Mlym": "MALAYALAM", "Sinh": "SINHALA",
    "Thai": "THAI", "Laoo": "LAO", "Tibt": "TIBETAN", "Mymr": "MYANMAR", "Geor": "GEORGIAN",
    "Hang": "HANGUL", "Ethi": "ETHIOPIC", "Cher": "CHEROKEE", "Khmr": "KHMER", "Mong": "MONGOLIAN",
    "Hira": "HIRAGANA", "Kana": "KATAKANA", "Tfng": "TIFINAGH",
}
_NAME_TO_CODE = {name: code for code, name in SCRIPT_NAMES.items()}
_EXPLICIT_TOP = 0x8000  # DUCET's explicit primaries of letters lie below; implicit weights above


def _script_of(ch: str) -> str | None:
    name = unicodedata.name(ch, "")
    return _NAME_TO_CODE.get(name.split(" ", 1)[0])


def reordering(single: Iterable[tuple[str, int]], primaries: Iterable[int], start: int,
               codes: tuple[str, ...]) -> dict[int, int]:
    """The reordered value of every primary of the script area [start, _EXPLICIT_TOP) that moves.

    `single`: (character, its first primary) for the table's single characters;
    `primaries`: every primary of the table; `codes`: the reorder codes, in order."""
    codes = tuple(c for c in codes if c not in ("Zzzz", "others"))
    if not codes:
        return {}
    unknown = [c for c in codes if c not in SCRIPT_NAMES]
    if unknown:
        raise ValueError(f"reorder codes {unknown} are not supported")
    votes: dict[int, Counter] = {}
    for ch, p in single:
        if start <= p < _EXPLICIT_TOP:
            script = _script_of(ch)
            if script:
                votes.setdefault(p, Counter())[script] += 1
    area = sorted({p for p in primaries if start <= p < _EXPLICIT_TOP})
    script_of: dict[int, str] = {}
    current = "Latn"
    for p in area:
        if p in votes:
            current = votes[p].most_common(1)[0][0]
        script_of[p] = current
    moved = [p for code in codes for p in area if script_of[p] == code]
    moved_set = set(moved)
    order = moved + [p for p in area if p not in moved_set]
    return {p: area[i] for i, p in enumerate(order) if area[i] != p}
