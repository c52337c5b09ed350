"""The root collation: the Unicode Collation Algorithm's default table, regrouped as ICU's root.

MongoDB 8.0 still ships ICU 57.1 (the `version: "57.1"` every normalised collation
carries), whose root collation is CLDR's: the Default Unicode Collation Element Table
(DUCET) of Unicode 8.0.0 with its variable characters regrouped.  The collation
elements come from `pyuca` (a maintained, pure-Python UCA that carries the DUCET files;
`Collator_8_0_0` is the table of ICU 57's Unicode version): for a string in NFD it
yields the `[primary, secondary, tertiary]` weights, contractions and implicit weights
(CJK, unassigned) included.  `elements` gives them as `(primary, secondary, tertiary, case)`,
the weights shifted left to leave room for a tailoring's (`tailored_collation`).

Hand-written on top, because pyuca offers the plain UCA only:

* CLDR's grouping.  DUCET marks spaces, punctuation and many symbols "variable" and
  interleaves them; CLDR's root puts every variable character in one of three groups —
  space (whitespace and controls), punct (punctuation), symbol (the rest) — in that order,
  DUCET's order kept within a group, and only space and punct are variable (ICU's
  maxVariable "punct"; "space" leaves only whitespace variable).  The variable primaries
  are renumbered once, at load, to follow that order; `space_top` and `punct_top` are the
  last primary of each group.  The variable flags are read from pyuca's own allkeys file
  (its parser keeps the weights, not the `*` flag).
* Numeric ordering (`numeric_elements`): a run of decimal digits (any script's `Nd`)
  becomes one number, as ICU's CODAN does: the primary of digit zero, then the count
  of significant digits, then the digits — so "2" < "10" and "01" == "1" (leading zeros
  carry no weight at any level but the identical one).
"""

from __future__ import annotations

import os
import re
import unicodedata

from pyuca.collator import Collator_8_0_0

__all__ = ["CollationTable", "RootCollation", "root", "PRIMARY_SHIFT", "LOWER_SHIFT", "UPPER_TO_LOWER",
           "LOWER", "MIXED", "UPPER"]

_ENTRY = re.compile(r"^([0-9A-F]{4,6})\s*;\s*\[([*.])([0-9A-F]{4})\.", re.M)
# Collation elements are `(primary, secondary, tertiary, case)`: the DUCET's 16-bit weights shifted
# left (primaries by 16 bits, the others by 8), which leaves room between two root weights for the
# weights a tailoring inserts (`tailored_collation.py`); case is ICU's case bits (LOWER, MIXED, UPPER).
PRIMARY_SHIFT = 16
LOWER_SHIFT = 8
LOWER, MIXED, UPPER = 0, 1, 2
# DUCET tertiary weights of uppercase forms (UTS #10 §7.3), and the lowercase form of each
UPPER_TO_LOWER = {0x08: 0x02, 0x09: 0x03, 0x0A: 0x04, 0x0B: 0x05, 0x0C: 0x06, 0x1D: 0x1C}
_NUMERIC_COUNT = 0x8000 << PRIMARY_SHIFT  # numeric runs: the digit count and each digit weigh above every
_DIGIT_SECONDARY = 0x20 << LOWER_SHIFT     # variable primary
_DIGIT_TERTIARY = 0x02 << LOWER_SHIFT


def _group_of(ch: str) -> int:
    cat = unicodedata.category(ch)
    if cat[0] == "Z" or cat == "Cc":
        return 0  # space
    if cat[0] == "P":
        return 1  # punct
    return 2  # symbol (and the odd number or letter DUCET made variable)


class CollationTable:
    """What a collator reads of a collation: the elements of a string, the variable tops, digit zero.

    `uca` is a pyuca collator whose trie maps strings to DUCET elements (lists of three 16-bit
    weights, converted here) or to a tailoring's elements (tuples of four, already in this form).
    """

    def __init__(self, uca, remap: dict[int, int], space_top: int, punct_top: int) -> None:
        self.uca = uca
        self._remap = remap
        self.space_top = space_top
        self.punct_top = punct_top
        self.zero_primary = self.elements("0")[0][0]

    def elements(self, nfd: str) -> list[tuple[int, int, int, int]]:
        """The collation elements `(primary, secondary, tertiary, case)` of an NFD string."""
        remap = self._remap
        out = []
        for ce in self.uca.collation_elements(nfd):
            if type(ce) is tuple:
                out.append(ce)
                continue
            p, t = ce[0], ce[2]
            out.append(((remap.get(p, p)) << PRIMARY_SHIFT, ce[1] << LOWER_SHIFT, t << LOWER_SHIFT,
                        UPPER if t in UPPER_TO_LOWER else LOWER))
        return out

    def numeric_elements(self, nfd: str) -> list[tuple[int, int, int, int]]:
        """`elements` with every run of decimal digits weighed as one number."""
        out: list[tuple[int, int, int, int]] = []
        i = 0
        n = len(nfd)
        start = 0
        while i < n:
            if unicodedata.decimal(nfd[i], None) is None:
                i += 1
                continue
            if start < i:
                out.extend(self.elements(nfd[start:i]))
            j = i
            digits = []
            while j < n:
                d = unicodedata.decimal(nfd[j], None)
                if d is None:
                    break
                digits.append(d)
                j += 1
            k = 0
            while k < len(digits) - 1 and digits[k] == 0:
                k += 1  # leading zeros are not significant ("0" keeps its one zero)
            significant = digits[k:]
            out.append((self.zero_primary, _DIGIT_SECONDARY, _DIGIT_TERTIARY, LOWER))
            out.append((_NUMERIC_COUNT + (min(len(significant), 0x7FFF) << PRIMARY_SHIFT), 0, 0, LOWER))
            out.extend((_NUMERIC_COUNT + (d << PRIMARY_SHIFT), 0, 0, LOWER) for d in significant)
            i = start = j
        if start < n:
            out.extend(self.elements(nfd[start:]))
        return out


class RootCollation(CollationTable):
    """DUCET 8.0.0 through pyuca, with CLDR's variable groups."""

    def __init__(self) -> None:
        uca = Collator_8_0_0()
        path = os.path.join(os.path.dirname(__import__("pyuca").__file__), "allkeys-8.0.0.txt")
        with open(path, encoding="utf-8") as f:
            text = f.read()
        groups: dict[int, int] = {}
        for m in _ENTRY.finditer(text):
            if m.group(2) != "*":
                continue
            p = int(m.group(3), 16)
            if p and p not in groups:
                groups[p] = _group_of(chr(int(m.group(1), 16)))
        ordered = sorted(groups, key=lambda p: (groups[p], p))
        base = min(groups)
        remap = {p: base + i for i, p in enumerate(ordered)}
        space_top = base + sum(1 for g in groups.values() if g == 0) - 1
        punct_top = base + sum(1 for g in groups.values() if g <= 1) - 1
        super().__init__(uca, remap, ((space_top + 1) << PRIMARY_SHIFT) - 1, ((punct_top + 1) << PRIMARY_SHIFT) - 1)

    def remapped(self, p: int) -> int:
        """The primary (16-bit, unshifted) a DUCET primary weighs as here."""
        return self._remap.get(p, p)


_ROOT: RootCollation | None = None


def root() -> RootCollation:
    """The root collation, loaded on first use (about 0.2 s: pyuca parses the DUCET)."""
    global _ROOT
    if _ROOT is None:
        _ROOT = RootCollation()
    return _ROOT
