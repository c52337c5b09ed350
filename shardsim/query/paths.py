"""Dotted paths: `"a.b.0.c"` addresses a value inside nested documents and arrays.

A path component that is a non-negative decimal integer ("0", "12") may index
an array; the same component applied to a document is an ordinary field name
(`{"a": {"0": 1}}` has a path `a.0`).  Queries additionally *traverse* arrays
implicitly (`a.b` reaches `b` inside every element of an array `a`): that
matching-specific walk lives in `matcher.py`; this module holds the plain,
unambiguous walk used by updates, projections and index keys.

Hand-written: the semantics (numeric components, array traversal, the
server's FieldRef rules for what counts as numeric) are MongoDB's own.
"""

from __future__ import annotations

from functools import lru_cache

from mongosim.shardsim.query.values import MISSING

__all__ = ["split", "is_array_index", "array_index", "get_path", "set_path", "unset_path", "MISSING"]


@lru_cache(maxsize=4096)
def split(path: str) -> tuple[str, ...]:
    """`"a.b.c"` -> `("a", "b", "c")` (cached: paths repeat)."""
    return tuple(path.split("."))


def is_array_index(part: str) -> bool:
    """FieldRef::isNumericPathComponentStrict: digits only, no leading zero (except "0")."""
    return part.isdigit() and part.isascii() and (len(part) == 1 or part[0] != "0")


def array_index(part: str) -> int | None:
    """The array index a component denotes when applied to an array, or None.

    For reading and updating, the server accepts any all-digit component
    (`str::parseUnsignedBase10Integer`), including leading zeros.
    """
    if part.isdigit() and part.isascii():
        return int(part)
    return None


def get_path(doc, path: str | tuple[str, ...]):
    """The value at `path` without implicit array traversal, or MISSING."""
    parts = split(path) if isinstance(path, str) else path
    cur = doc
    for p in parts:
        if isinstance(cur, dict):
            cur = cur.get(p, MISSING)
        elif isinstance(cur, list):
            i = array_index(p)
            if i is None or i >= len(cur):
                return MISSING
            cur = cur[i]
        else:
            return MISSING
        if cur is MISSING:
            return MISSING
    return cur


def set_path(doc: dict, path: str | tuple[str, ...], value) -> None:
    """Set in place, creating documents for missing (or scalar) components, padding arrays
    with null.  A plain helper for building documents (e.g. upsert seeds), not an update
    operator: `update.py` implements `$set` with the server's errors."""
    parts = split(path) if isinstance(path, str) else path
    cur = doc
    for j, p in enumerate(parts):
        last = j == len(parts) - 1
        if isinstance(cur, list):
            i = array_index(p)
            if i is None:
                raise KeyError(p)
            while len(cur) <= i:
                cur.append(None)
            if last:
                cur[i] = value
                return
            nxt = cur[i]
            if type(nxt) not in (dict, list):
                nxt = cur[i] = {}
            cur = nxt
        else:
            if last:
                cur[p] = value
                return
            nxt = cur.get(p, MISSING)
            if type(nxt) not in (dict, list):
                nxt = cur[p] = {}
            cur = nxt


def unset_path(doc: dict, path: str | tuple[str, ...]) -> bool:
    """Remove the field at `path` (an array element becomes null). True if something changed."""
    parts = split(path) if isinstance(path, str) else path
    cur = doc
    for p in parts[:-1]:
        if isinstance(cur, dict):
            cur = cur.get(p, MISSING)
        elif isinstance(cur, list):
            i = array_index(p)
            cur = cur[i] if i is not None and i < len(cur) else MISSING
        else:
            return False
        if cur is MISSING:
            return False
    p = parts[-1]
    if isinstance(cur, dict):
        if p in cur:
            del cur[p]
            return True
        return False
    if isinstance(cur, list):
        i = array_index(p)
        if i is not None and i < len(cur):
            cur[i] = None
            return True
    return False
