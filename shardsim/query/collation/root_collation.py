"""The root collation: the Unicode Collation Algorithm's default table, regrouped as ICU's root.

MongoDB 8.0 still ships ICU 57.1 (the `version: "57.1"` every normalised collation
carries), whose root collation is CLDR's: the Default Unicode Collation Element Table
(DUCET) of Unicode 8.0.0 with its variable characters regrouped.  The collation
elements come from `pyuca` (a maintained, pure-Python UCA that carries the DUCET files;
`Collator_8_0_0` is the table of ICU 57's Unicode version): for a string in NFD it
yields the `[primary, secondary, tertiary]` weights, contractions and implicit weights
(CJK, unassigned) included.

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

__all__ = ["RootCollation", "root"]

_ENTRY = re.compile(r"^([0-9A-F]{4,6})\s*;\s*\[([*.])([0-9A-F]{4})\.", re.M)
_NUMERIC_COUNT = 0x8000  # numeric runs: the digit count and each digit weigh above every variable primary


def _group_of(ch: str) -> int:
    cat = unicodedata.category(ch)
    if cat[0] == "Z" or cat == "Cc":
        return 0  # space
    if cat[0] == "P":
        return 1  # punct
    return 2  # symbol (and the odd number or letter DUCET made variable)


class RootCollation:
    """DUCET 8.0.0 through pyuca, with CLDR's variable groups."""

    def __init__(self) -> None:
        self._uca = Collator_8_0_0()
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
        self._remap = {p: base + i for i, p in enumerate(ordered)}
        self.space_top = base + sum(1 for g in groups.values() if g == 0) - 1
        self.punct_top = base + sum(1 for g in groups.values() if g <= 1) - 1
        self.zero_primary = self.elements("0")[0][0]

    def elements(self, nfd: str) -> list[tuple[int, int, int]]:
        """The collation elements `(primary, secondary, tertiary)` of an NFD string."""
        remap = self._remap
        out = []
        for ce in self._uca.collation_elements(nfd):
            p = ce[0]
            out.append((remap.get(p, p), ce[1], ce[2]))
        return out

    def numeric_elements(self, nfd: str) -> list[tuple[int, int, int]]:
        """`elements` with every run of decimal digits weighed as one number."""
        out: list[tuple[int, int, int]] = []
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
            out.append((self.zero_primary, 0x20, 0x02))
            out.append((_NUMERIC_COUNT + min(len(significant), 0x7FFF), 0, 0))
            out.extend((_NUMERIC_COUNT + d, 0, 0) for d in significant)
            i = start = j
        if start < n:
            out.extend(self.elements(nfd[start:]))
        return out


_ROOT: RootCollation | None = None


def root() -> RootCollation:
    """The root collation, loaded on first use (about 0.2 s: pyuca parses the DUCET)."""
    global _ROOT
    if _ROOT is None:
        _ROOT = RootCollation()
    return _ROOT
