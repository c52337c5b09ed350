"""CollatorInterface: one collation's string comparison, as ICU's sort keys order strings.

`comparison_key(s)` is the server's `getComparisonKey`: bytes whose byte order is the
collation's order and whose equality is the collation's equality, so one key serves for
sorting, for equality, as a dict key (`$group`, `distinct`, unique indexes) and in index
keys (the server's index keys hold exactly these keys in place of the strings).

The key is built level by level from the elements of the locale's table (the root
collation with the locale's CLDR tailoring, `tailored_collation.table_for`; UTS #10 §7 and
ICU's CollationKeys), each weight 32 bits big-endian, levels joined by 0x00000000:

1. primary weights (base letters);
2. secondary weights (accents), reversed when `backwards` (French);
   the case level (`caseLevel`): one case weight per primary element, lowercase first
   unless `caseFirst: "upper"` (ICU's case bits: upper, mixed — a tailored "Ch" — and lower);
3. tertiary weights (case and variants); with `caseLevel` the case is taken out of them,
   with `caseFirst` upper/lower the case weighs first (ICU's case bits above the tertiary);
4. quaternary (only with `alternate: "shifted"`): the primaries of the variable characters
   (spaces and punctuation, up to `maxVariable`), which weigh nothing at levels 1-3;
5. identical: the NFD code points.

`strength` says how many of the levels count.  Keys are cached per collator.

Hand-written over pyuca (see `root_collation.py`): pyuca builds the plain UCA key only.
"""

from __future__ import annotations

import functools
import struct
import unicodedata

from mongosim.shardsim.query.collation.root_collation import LOWER_SHIFT, UPPER_TO_LOWER
from mongosim.shardsim.query.collation.tailored_collation import table_for

__all__ = ["CollatorInterface"]

_SEP = b"\x00\x00\x00\x00"
_UPPER_TERTIARY_TO_LOWER = {u << LOWER_SHIFT: lo << LOWER_SHIFT for u, lo in UPPER_TO_LOWER.items()}


def _pack(weights: list[int]) -> bytes:
    return struct.pack(f">{len(weights)}I", *weights)


def _uncased(t: int) -> int:
    """A tertiary weight without its case: an uppercase DUCET tertiary (and what a tailoring inserted
    after one) as its lowercase form."""
    low = t & ((1 << LOWER_SHIFT) - 1)
    return _UPPER_TERTIARY_TO_LOWER.get(t - low, t - low) | low


class CollatorInterface:
    """A non-simple collation (`spec`: the normalised collation document)."""

    __slots__ = ("spec", "strength", "case_level", "case_first", "numeric", "shifted", "var_top", "backwards",
                 "comparison_key", "_frozen", "_table")

    def __init__(self, spec: dict) -> None:
        self.spec = spec
        self.strength = spec["strength"]
        self.case_level = spec["caseLevel"]
        self.case_first = spec["caseFirst"]
        self.numeric = spec["numericOrdering"]
        self.shifted = spec["alternate"] == "shifted"
        self._table = table_for(spec["locale"])
        self.var_top = self._table.punct_top if spec["maxVariable"] == "punct" else self._table.space_top
        self.backwards = spec["backwards"]
        self._frozen = tuple(spec.items())
        self.comparison_key = functools.lru_cache(maxsize=1 << 16)(self._key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CollatorInterface) and other._frozen == self._frozen

    def __hash__(self) -> int:
        return hash(self._frozen)

    def __repr__(self) -> str:
        return f"CollatorInterface({self.spec!r})"

    def compare(self, a: str, b: str) -> int:
        ka, kb = self.comparison_key(a), self.comparison_key(b)
        return -1 if ka < kb else (1 if ka > kb else 0)

    def _key(self, s: str) -> bytes:
        nfd = unicodedata.normalize("NFD", s)
        table = self._table
        ces = table.numeric_elements(nfd) if self.numeric else table.elements(nfd)
        strength, shifted, var_top = self.strength, self.shifted, self.var_top
        case_level, case_first = self.case_level, self.case_first
        # the case weight of each case (ICU's case bits): uppercase first with caseFirst "upper"
        ranks = (3, 2, 1) if case_first == "upper" else (1, 2, 3)
        l1: list[int] = []
        l2: list[int] = []
        lc: list[int] = []
        l3: list[int] = []
        l4: list[int] = []
        after_variable = False
        for p, sec, ter, case in ces:
            if shifted:
                if p:
                    if p <= var_top:
                        after_variable = True
                        l4.append(p)
                        continue
                    after_variable = False
                elif after_variable or not (sec or ter):
                    continue  # an ignorable after a variable weighs nothing
                l4.append(0xFFFFFFFF)
            if p:
                l1.append(p)
            if sec:
                l2.append(sec)
            if ter:
                if case_level:
                    if p:
                        lc.append(ranks[case])
                    l3.append(_uncased(ter))
                elif case_first != "off":
                    l3.append((ranks[case] << 24) | _uncased(ter))
                else:
                    l3.append(ter)
        levels = [_pack(l1)]
        if strength >= 2:
            if self.backwards:
                l2.reverse()
            levels.append(_pack(l2))
        if case_level:
            levels.append(_pack(lc))
        if strength >= 3:
            levels.append(_pack(l3))
        if strength >= 4 and shifted:
            levels.append(_pack(l4))
        if strength == 5:
            levels.append(nfd.encode("utf-32-be"))
        return _SEP.join(levels)
