"""Collation-aware comparison of BSON values: the collator threaded into the BSON order.

With a collator, strings compare by their collation keys wherever they stand — at the
top, inside objects and arrays (field names still compare as they are) — and every other
type as `values.sort_key` orders it (the server's BSONComparator with a StringData
comparator; symbols would too, pymongo reads them as strings).  These functions are the one
API the query engine, sorting, grouping and index keys use:

* `sort_key_for(collator)` -> a key function (`values.sort_key` itself for the simple
  collation, so the default path pays nothing);
* `hashable_for`, `compare_for` likewise (an index with a collation keys its entries with
  `hashable_for`: its strings weigh as their comparison keys, the server's CollationIndexKey);
* `collatable(value)`: whether a collation can change how a value compares.

Hand-written: it is values.sort_key with one type's key replaced.
"""

from __future__ import annotations

from typing import Any, Callable

from bson import DBRef

from mongosim.shardsim.query.values import R_ARR, R_OBJ, R_STR, canonical_rank, compare, hashable, sort_key

__all__ = ["sort_key_for", "hashable_for", "compare_for", "collated_sort_key", "collatable"]


def collated_sort_key(v: Any, key: Callable[[str], bytes]) -> tuple:
    """`values.sort_key` with each string's key its collation key (`key` = collator.comparison_key)."""
    t = type(v)
    if t is str:
        return (R_STR, key(v))
    if t is dict:
        return (R_OBJ, tuple((canonical_rank(x), k, collated_sort_key(x, key)) for k, x in v.items()))
    if t is list or t is tuple:
        return (R_ARR, tuple([collated_sort_key(x, key) for x in v]))
    if t is DBRef:
        return collated_sort_key(v.as_doc(), key)
    return sort_key(v)


def sort_key_for(collator) -> Callable[[Any], tuple]:
    """The BSON-order key function under `collator` (None: the simple collation)."""
    if collator is None:
        return sort_key
    key = collator.comparison_key
    return lambda v: collated_sort_key(v, key)


def hashable_for(collator) -> Callable[[Any], Any]:
    """A hashable key equal iff the values are equal under `collator`."""
    if collator is None:
        return hashable
    return sort_key_for(collator)


def compare_for(collator) -> Callable[[Any, Any], int]:
    """-1, 0 or 1 under `collator`."""
    if collator is None:
        return compare
    k = sort_key_for(collator)

    def cmp(a, b):
        ka, kb = k(a), k(b)
        return -1 if ka < kb else (1 if ka > kb else 0)

    return cmp


def collatable(v: Any) -> bool:
    """CollationIndexKey::isCollatableType: a value whose comparison a collation may change (a string, or
    an object or array, which may hold strings)."""
    return isinstance(v, (str, dict, list))

