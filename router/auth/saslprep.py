"""SASLprep (RFC 4013), the stringprep profile SCRAM-SHA-256 applies to passwords.

Built on the stdlib only: `stringprep` carries the RFC 3454 tables and
`unicodedata.ucd_3_2_0` the Unicode 3.2 normalisation that stringprep is
defined against.

The four steps of RFC 3454 section 2, with the RFC 4013 choices:

1. map: non-ASCII spaces (table C.1.2) become U+0020, the characters of table
   B.1 ("commonly mapped to nothing") are removed;
2. normalise with NFKC;
3. prohibit the characters of tables C.1.2, C.2.1, C.2.2, C.3 - C.9 and, for
   "stored strings", the unassigned code points of table A.1;
4. bidi check (RFC 3454 section 6): a string holding a RandALCat character
   (D.1) holds no LCat character (D.2) and starts and ends with RandALCat.

MongoDB prepares passwords as stored strings when it creates SCRAM-SHA-256
credentials (unassigned code points refused) and never prepares user names.
"""

from __future__ import annotations

import stringprep
import unicodedata

__all__ = ["SASLprepError", "saslprep"]

_NFKC = unicodedata.ucd_3_2_0.normalize

# RFC 4013 section 2.3 (C.1.2 can only come back through normalisation).
_PROHIBITED = (
    stringprep.in_table_c12,
    stringprep.in_table_c21,
    stringprep.in_table_c22,
    stringprep.in_table_c3,
    stringprep.in_table_c4,
    stringprep.in_table_c5,
    stringprep.in_table_c6,
    stringprep.in_table_c7,
    stringprep.in_table_c8,
    stringprep.in_table_c9,
)


class SASLprepError(ValueError):
    """The string cannot be prepared (prohibited character or failed bidi rule)."""


def _map(text: str) -> str:
    out = []
    for ch in text:
        if stringprep.in_table_b1(ch):
            continue
        out.append(" " if stringprep.in_table_c12(ch) else ch)
    return "".join(out)


def saslprep(text: str, *, allow_unassigned: bool = False) -> str:
    """Prepare `text` with SASLprep; `allow_unassigned=True` for queries, False for stored strings."""
    if not isinstance(text, str):
        raise TypeError(f"saslprep() takes a str, not {type(text).__name__}")
    prepared = _NFKC("NFKC", _map(text))
    if not prepared:
        return prepared
    for ch in prepared:
        if any(table(ch) for table in _PROHIBITED):
            raise SASLprepError(f"SASLprep: prohibited character U+{ord(ch):04X}")
        if not allow_unassigned and stringprep.in_table_a1(ch):
            raise SASLprepError(f"SASLprep: unassigned code point U+{ord(ch):04X}")
    if any(stringprep.in_table_d1(ch) for ch in prepared):
        if any(stringprep.in_table_d2(ch) for ch in prepared):
            raise SASLprepError("SASLprep: RandALCat and LCat characters mixed")
        if not (stringprep.in_table_d1(prepared[0]) and stringprep.in_table_d1(prepared[-1])):
            raise SASLprepError("SASLprep: RandALCat string must start and end with RandALCat")
    return prepared
