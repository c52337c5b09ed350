"""The foreign documents a join value matches: a hash table over one path of the foreign collection.

`$lookup` (equality form) asks, per input document, for the foreign documents whose
`foreignField` equals one of the local values — the server runs the query
`{foreignField: {$eq: v}}` (or `$in`, or an `$or` of `$eq` when a value is a regex);
`$graphLookup` asks, per level, for those whose `connectToField` is `$in` the
frontier.  Scanning the foreign collection for each question costs O(n·m); like the
server's hash join (SBE's HashLookup), `LookupHashTable` indexes the foreign
documents once by every value a query's equality could meet at the path (the value,
each element of an array, through arrays of documents on the way), and answers a
question from the buckets of its values — then checks every candidate with the real
matcher, so the answer is exactly the query's (collation included), in the foreign
collection's natural order.

Values the hash cannot answer for (null, which also matches a missing path; regexes,
which `$in` treats as patterns; MinKey/MaxKey/undefined) and paths with numeric
components fall back to the scan.
"""

from __future__ import annotations

from typing import Any

from bson import DBRef, MaxKey, MinKey, Regex

from mongosim.shardsim.query.collation import hashable_for
from mongosim.shardsim.query.matcher import Matcher
from mongosim.shardsim.query.values import MISSING, dbref_doc

__all__ = ["LookupHashTable"]


def _hashable_value(v: Any) -> bool:
    return v is not None and v is not MISSING and not isinstance(v, (Regex, MinKey, MaxKey)) and \
        type(v).__name__ != "Pattern"


class LookupHashTable:
    def __init__(self, docs: list[dict], path: str, collator=None) -> None:
        self.docs = docs
        self.path = path
        self.parts = tuple(path.split("."))
        self.collator = collator
        self.same = hashable_for(collator)
        self._table: dict | None = None
        self.indexable = not any(p.isdigit() for p in self.parts)

    def _build(self) -> dict:
        table: dict[Any, list[int]] = {}
        same = self.same
        for pos, doc in enumerate(self.docs):
            seen = set()
            for v in _equality_values(doc, self.parts, 0):
                try:
                    k = same(v)
                except TypeError:
                    continue
                if k not in seen:
                    seen.add(k)
                    table.setdefault(k, []).append(pos)
        return table

    def matching(self, flt: dict, values: list, variables: dict | None = None) -> list[dict]:
        """The foreign documents `flt` matches, where `flt` is a match of `path` against `values`
        (and maybe more conditions)."""
        m = Matcher(flt, variables, self.collator).matches
        if not self.indexable or not values or not all(_hashable_value(v) for v in values):
            return [d for d in self.docs if m(d)]
        if self._table is None:
            self._table = self._build()
        positions: set[int] = set()
        for v in values:
            try:
                positions.update(self._table.get(self.same(v), ()))
            except TypeError:
                return [d for d in self.docs if m(d)]
        docs = self.docs
        return [docs[p] for p in sorted(positions) if m(docs[p])]


def _equality_values(v: Any, parts: tuple[str, ...], i: int):
    """Every value an equality on the path can compare with (a superset: the matcher decides)."""
    if i == len(parts):
        yield v
        if type(v) is list:
            yield from v
        return
    if type(v) is DBRef:  # (the embedded document {$ref, $id, ...} it stands for)
        v = dbref_doc(v)
    if type(v) is dict:
        nxt = v.get(parts[i], MISSING)
        if nxt is not MISSING:
            yield from _equality_values(nxt, parts, i + 1)
    elif type(v) is list:
        for e in v:
            if type(e) in (dict, list, DBRef):
                yield from _equality_values(e, parts, i)
