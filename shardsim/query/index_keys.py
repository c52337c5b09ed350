"""Index keys: which values of a document an index stores, and the DuplicateKey error.

An index on `{a: 1}` stores one key per *value* of `a`: a document with
`a: [1, 2]` produces two keys ("multikey"), `a: []` produces one key of
`undefined`, and a missing field produces a `null` key.  A compound index
takes the cross product, but at most one of its fields may be an array
(CannotIndexParallelArrays 171).  A unique index rejects a document whose
key equals (BSON equality: `1 == 1.0`) a key of another document, with
DuplicateKey 11000, `E11000 duplicate key error collection: db.coll index:
a_1 dup key: { a: 1 }` and the fields `keyPattern` and `keyValue`.

Sources: src/mongo/db/index/btree_key_generator.cpp,
src/mongo/db/storage/duplicate_key_error_info.cpp.  Hand-written: these
are the server's rules, not a general-purpose library concern.
"""

from __future__ import annotations

from itertools import product


from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.collation import hashable_for
from mongosim.shardsim.query.fmt import bson_str
from mongosim.shardsim.query.paths import split
from mongosim.shardsim.query.values import MISSING, hashable

__all__ = ["index_keys", "index_key_hashes", "duplicate_key_error", "index_name", "UNDEFINED", "multikey_values"]


class _Undefined:
    """The key of an empty array (BSON undefined): sorts after MinKey, before null."""

    __slots__ = ()

    def __repr__(self):
        return "undefined"


UNDEFINED = _Undefined()


def multikey_values(doc, parts: tuple[str, ...]) -> tuple[list, bool]:
    """(values at the path with arrays expanded one level, whether an array was expanded)."""
    out: list = []
    arrays = [False]

    def walk(v, i):
        if i == len(parts):
            if type(v) is list:
                arrays[0] = True
                if not v:
                    out.append(UNDEFINED)
                for e in v:
                    out.append(e)
            else:
                out.append(None if v is MISSING else v)
            return
        if type(v) is dict:
            walk(v.get(parts[i], MISSING), i + 1)
        elif type(v) is list:
            arrays[0] = True
            p = parts[i]
            if p.isdigit() and int(p) < len(v) and str(int(p)) == p:
                walk(v[int(p)], i + 1)
                return
            if not v:
                walk(MISSING, len(parts))
                return
            for e in v:
                if type(e) is dict:
                    walk(e.get(p, MISSING), i + 1)
                else:
                    walk(MISSING, len(parts))
        else:
            walk(MISSING, len(parts))

    walk(doc, 0)
    if not out:
        out.append(None)
    return out, arrays[0]


def index_keys(doc: dict, key_pattern: dict) -> list[tuple]:
    """The keys (tuples of values, one per index field) the document produces."""
    per_field = []
    array_fields = []
    for field in key_pattern:
        vals, was_array = multikey_values(doc, split(field))
        if was_array:
            array_fields.append(field)
        # dedupe equal values within a field (the index stores a set of keys)
        seen, uniq = set(), []
        for v in vals:
            h = ("undef",) if v is UNDEFINED else hashable(v)
            if h not in seen:
                seen.add(h)
                uniq.append(v)
        per_field.append(uniq)
    if len(array_fields) > 1:
        raise MongoError(171, f"cannot index parallel arrays [{array_fields[1]}] [{array_fields[0]}]")
    return [tuple(k) for k in product(*per_field)]


def index_key_hashes(doc: dict, key_pattern: dict, collator=None) -> list[tuple]:
    """Hashable forms of `index_keys` (equal iff the server's KeyString keys are equal; an index with a
    collation compares its strings under it)."""
    same = hashable if collator is None else hashable_for(collator)
    return [tuple(("undef",) if v is UNDEFINED else same(v) for v in k) for k in index_keys(doc, key_pattern)]


def index_name(key_pattern: dict) -> str:
    """The default index name: `a_1_b_-1`."""
    parts = []
    for k, v in key_pattern.items():
        if isinstance(v, float) and v == int(v):
            v = int(v)
        parts.append(f"{k}_{v}")
    return "_".join(parts)


def duplicate_key_error(ns: str, index: str, key_pattern: dict, key: tuple, collator=None) -> MongoError:
    """The server's DuplicateKey error for a unique-index violation (an index with a collation names it,
    and shows its string keys as `CollationKey(0x<hex>)`: the index holds collation keys, not strings)."""
    if collator is not None:
        key = tuple(f"CollationKey(0x{collator.comparison_key(v).hex()})" if type(v) is str else v for v in key)
    key_value = {}
    for field, v in zip(key_pattern, key):
        key_value[field] = None if v is UNDEFINED else v
    shown = ", ".join(f"{f}: {'undefined' if v is UNDEFINED else bson_str(v)}" for f, v in zip(key_pattern, key))
    coll = f" collation: {bson_str(collator.spec)}" if collator is not None else ""
    msg = f"E11000 duplicate key error collection: {ns} index: {index}{coll} dup key: {{ {shown} }}"
    kp = {k: (int(v) if isinstance(v, float) and v == int(v) else v) for k, v in key_pattern.items()}
    return MongoError("DuplicateKey", msg, keyPattern=kp, keyValue=key_value)
