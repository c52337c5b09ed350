"""Sorting documents by a sort specification (`{a: 1, b: -1}`).

The sort key of a field is its value, except for arrays: an ascending sort
uses the array's smallest element and a descending sort its largest (an
empty array sorts below null; a missing field sorts as null).  Values of
different types order by the BSON canonical order (`values.sort_key`).

`sort_key_fn(spec)` returns a Python key function, so `sorted(docs,
key=sort_key_fn(spec))` sorts like the server; the router uses the same key
to merge sorted shard streams.

Source: src/mongo/db/exec/sort_key_generator.cpp, src/mongo/db/query/
sort_pattern.cpp.  Hand-written: the ordering is MongoDB's own.
"""

from __future__ import annotations

from typing import Any, Callable

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.collation import comparison_keys, expression_context
from mongosim.shardsim.query.index_keys import UNDEFINED, multikey_values
from mongosim.shardsim.query.paths import split
from mongosim.shardsim.query.values import MISSING, R_UNDEF, sort_key

__all__ = ["sort_key_fn", "parse_sort", "Reversed"]


class Reversed:
    """Wraps a key so that it orders in reverse."""

    __slots__ = ("k",)

    def __init__(self, k):
        self.k = k

    def __lt__(self, other):
        return other.k < self.k

    def __gt__(self, other):
        return other.k > self.k

    def __eq__(self, other):
        return self.k == other.k

    def __le__(self, other):
        return other.k <= self.k

    def __ge__(self, other):
        return other.k >= self.k

    def __hash__(self):
        return hash(self.k)


def parse_sort(spec) -> list[tuple[str, int]]:
    if not isinstance(spec, dict):
        raise MongoError(15973, "the $sort key specification must be an object")
    if not spec:
        raise MongoError(15976, "$sort stage must have at least one sort key")
    out = []
    for k, v in spec.items():
        if isinstance(v, dict):
            if len(v) == 1 and v.get("$meta") in _META_SORTS:
                out.append((k, 0))
                continue
            raise MongoError(17312, f"$meta is the only expression supported by $sort right now")
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v not in (1, -1):
            raise MongoError(15975, "$sort key ordering must be 1 (for ascending) or -1 (for descending)")
        if k == "" or any(p == "" for p in k.split(".")):
            raise MongoError(40352, "FieldPath cannot be constructed with empty string")
        out.append((k, int(v)))
    return out


_EMPTY_KEY = (R_UNDEF,)
# the metadata a sort may use, and their order (scores: highest first)
_META_SORTS = {"textScore": -1, "searchScore": -1, "vectorSearchScore": -1, "score": -1, "randVal": 1,
               "geoNearDistance": 1}


def meta_sorts(spec) -> list[str]:
    """The metadata names a (valid) sort specification sorts by."""
    return [v["$meta"] for v in spec.values() if isinstance(v, dict)] if isinstance(spec, dict) else []


def _meta_key(name: str, value_key):
    from mongosim.shardsim.query.document_metadata import meta_value

    descending = _META_SORTS[name] < 0

    def key(doc):
        v = meta_value(doc, name)
        k = value_key(None if v is MISSING else v)
        return Reversed(k) if descending else k

    return key


def _field_key(doc, parts, direction, value_key=sort_key):
    vals, was_array = multikey_values(doc, parts)
    if not was_array and len(vals) == 1:
        return value_key(vals[0])
    keys = [_EMPTY_KEY if v is UNDEFINED else value_key(v) for v in vals]
    return min(keys) if direction > 0 else max(keys)


def sort_key_values(doc, spec, collator=None) -> list:
    """A document's sort key as values (the server's `$sortKey`): per sort field, the value it sorts by
    (an array's least element ascending, its greatest descending; null when missing), or the metadata."""
    from mongosim.shardsim.query.document_metadata import meta_value

    value_key = comparison_keys.sort_key_for(collator if collator is not None else expression_context.current())
    out = []
    for k, v in spec.items():
        if isinstance(v, dict):
            m = meta_value(doc, v["$meta"])
            out.append(None if m is MISSING else m)
            continue
        vals, _was_array = multikey_values(doc, tuple(split(k)))
        vals = [None if x is UNDEFINED else x for x in vals] or [None]
        out.append(min(vals, key=value_key) if v >= 0 else max(vals, key=value_key))
    return out


def sort_key_fn(spec, collator=None) -> Callable[[dict], Any]:
    """`collator`: strings compare under it (None: the collation in force while compiling, by default
    the simple one)."""
    fields = [(split(k), d) for k, d in parse_sort(spec)]
    if collator is None:
        collator = expression_context.current()
    value_key = comparison_keys.sort_key_for(collator)
    if any(d == 0 for _p, d in fields):
        parts_keys = [(_meta_key(v["$meta"], value_key) if isinstance(v, dict) else None, split(k), v)
                      for k, v in spec.items()]

        def with_meta(doc):
            out = []
            for meta, parts, d in parts_keys:
                if meta is not None:
                    out.append(meta(doc))
                else:
                    k = _field_key(doc, parts, d, value_key)
                    out.append(k if d >= 0 else Reversed(k))
            return tuple(out)

        return with_meta
    if len(fields) == 1:
        parts, d = fields[0]
        if len(parts) == 1:
            p = parts[0]

            def one(doc):
                v = doc.get(p)
                k = value_key(v) if type(v) is not list else _field_key(doc, parts, d, value_key)
                return k if d >= 0 else Reversed(k)

            return one

    def key(doc):
        out = []
        for parts, d in fields:
            k = _field_key(doc, parts, d, value_key)
            out.append(k if d >= 0 else Reversed(k))
        return tuple(out)

    return key
