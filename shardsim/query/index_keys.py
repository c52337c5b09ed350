"""Index keys: which values of a document an index stores, and the DuplicateKey error.

An index on `{a: 1}` stores one key per *value* of `a`: a document with
`a: [1, 2]` produces two keys ("multikey"), `a: []` produces one key of
`undefined`, and a missing field produces a `null` key (a sparse index stores
nothing for a document missing every indexed field).  A compound index walks
its fields together: at most one array may be expanded at each level (two
different arrays are CannotIndexParallelArrays 171), and fields under the same
array take their values from the same element — `{"a.x": 1, "a.y": 1}` over
`{a: [{x: 1, y: 2}, {x: 2, y: 1}]}` gives the keys `(1, 2)` and `(2, 1)`, not
their cross product.  A numeric path component indexes an array position
(`"a.0"`).  A unique index rejects a document whose key equals (BSON equality:
`1 == 1.0`) a key of another document, with DuplicateKey 11000, `E11000
duplicate key error collection: db.coll index: a_1 dup key: { a: 1 }` and the
fields `keyPattern` and `keyValue`.

`btree_keys` follows BtreeKeyGenerator::getKeys step by step: extract each
field's value along its path, stopping at the first array met; if none was
met emit one key; otherwise recurse once per element of that array (an empty
array stands for `undefined`), with the fields that went through the array
continuing from the element.  It also reports, per field, which path
components made the index multikey (the server's MultikeyPaths, shown by
explain as `multiKeyPaths`).

Sources: src/mongo/db/index/btree_key_generator.cpp,
src/mongo/db/storage/duplicate_key_error_info.cpp.  Hand-written: these
are the server's rules, not a general-purpose library concern.
"""

from __future__ import annotations

from bson import DBRef
from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.collation import hashable_for
from mongosim.shardsim.query.fmt import bson_str
from mongosim.shardsim.query.paths import split
from mongosim.shardsim.query.values import MISSING, dbref_doc, hashable

__all__ = ["btree_keys", "index_keys", "index_key_hashes", "duplicate_key_error", "index_name", "UNDEFINED",
           "multikey_values", "key_hash"]


class _Undefined:
    """The key of an empty array (BSON undefined): sorts after MinKey, before null."""

    __slots__ = ()

    def __repr__(self):
        return "undefined"


UNDEFINED = _Undefined()
_UNDEF_HASH = (0,)  # values.R_UNDEF


def key_hash(v) -> tuple:
    """The BSON-equality (and order) key of one index key component."""
    return _UNDEF_HASH if v is UNDEFINED else hashable(v)


def key_hash_for(collator):
    """`key_hash` of an index with `collator` (None: simple): its strings compare as their collation keys,
    which is what the server's index stores in their place (CollationIndexKey)."""
    if collator is None:
        return key_hash
    same = hashable_for(collator)
    return lambda v: _UNDEF_HASH if v is UNDEFINED else same(v)


def multikey_values(doc, parts: tuple[str, ...]) -> tuple[list, bool]:
    """(values at the path with arrays expanded one level, whether an array was expanded).

    The sort-key walk (`sorting.py`): an ascending sort uses the smallest of these."""
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
        if type(v) is DBRef:  # (the embedded document {$ref, $id, ...} it stands for)
            v = dbref_doc(v)
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
                if type(e) is DBRef:
                    e = dbref_doc(e)
                if type(e) is dict:
                    walk(e.get(p, MISSING), i + 1)
                else:
                    walk(MISSING, len(parts))
        else:
            walk(MISSING, len(parts))

    if parts:  # (the document itself may be a dict subclass: one with metadata)
        walk(doc.get(parts[0], MISSING) if isinstance(doc, dict) else MISSING, 1)
    else:
        walk(doc, 0)
    if not out:
        out.append(None)
    return out, arrays[0]


# -- the server's key generator ---------------------------------------------------------------
def _member(obj, name: str):
    """`obj[name]` for a document, or for an array seen as a document ("0", "1", ...)."""
    t = type(obj)
    if t is dict:
        return obj.get(name, MISSING)
    if t is DBRef:  # (the embedded document {$ref, $id, ...} it stands for)
        return dbref_doc(obj).get(name, MISSING)
    if t is list:
        if name.isdigit() and (len(name) == 1 or name[0] != "0"):
            i = int(name)
            if i < len(obj):
                return obj[i]
    return MISSING


def _extract(obj, path: str) -> tuple:
    """extractElementAtPathOrArrayAlongPath: (value, its field name, rest of the path).

    Walks `path` through documents; stops at the first array met and returns it
    with the part of the path after it ('' when the array is the value itself).
    MISSING when the path does not exist (or runs into a scalar)."""
    parts = split(path)
    cur = obj
    last = len(parts) - 1
    for j, p in enumerate(parts):
        v = _member(cur, p)
        if v is MISSING:
            return MISSING, p, ""
        if type(v) is list:
            return v, p, ".".join(parts[j + 1:])
        if j == last:
            return v, p, ""
        if type(v) is not dict and type(v) is not DBRef:
            return MISSING, p, ""
        cur = v
    return MISSING, "", ""  # (unreachable: paths are never empty)


class _Positional:
    """A numeric path component met at an array: that element is indexed, not every element."""

    __slots__ = ("element", "array", "dotted", "dotted_name", "remaining")

    def __init__(self, element, array, path: str) -> None:
        self.element = element
        self.array = array
        self.dotted, self.dotted_name, self.remaining = _extract(array, path)


def _nparts(path: str) -> int:
    return len(split(path)) if path else 0


class _Gen:
    __slots__ = ("n", "sparse", "lengths", "keys", "multikey")

    def __init__(self, paths: list[str], sparse: bool) -> None:
        self.n = len(paths)
        self.sparse = sparse
        self.lengths = [_nparts(p) for p in paths]
        self.keys: list[tuple] = []
        self.multikey: list[set[int]] = [set() for _ in paths]

    def _next_element(self, obj, pos: _Positional | None, field: str):
        """(value, its name, rest of path, whether an array nests directly in an array)."""
        first = field.split(".", 1)[0]
        have = _member(obj, first) is not MISSING if type(obj) is dict else False
        if have and pos is not None:
            raise MongoError(16746, "Ambiguous field name found in array (do not use numeric field names in "
                                    f"embedded elements in an array), field: '{first}' for array: "
                                    f"{bson_str(pos.array)}")
        if have:
            v, name, rest = _extract(obj, field)
            return v, name, rest, False
        if pos is not None:
            return pos.dotted, pos.dotted_name, pos.remaining, type(pos.element) is list
        return MISSING, first, "", False

    def walk(self, fields: list, fixed: list, obj, not_found: int, positional: list) -> None:
        n = self.n
        arr = None
        arr_name = ""
        arr_idx: list[int] = []
        may_expand = True
        for i in range(n):
            f = fields[i]
            if f == "":
                continue
            v, name, rest, nested = self._next_element(obj, positional[i], f)
            if v is MISSING:
                fixed[i] = None
                fields[i] = ""
                not_found += 1
            elif type(v) is list:
                fields[i] = rest
                arr_idx.append(i)
                if arr is None:
                    arr, arr_name = v, name
                elif v is not arr:
                    raise MongoError("CannotIndexParallelArrays", f"cannot index parallel arrays [{name}] [{arr_name}]")
                if nested:
                    may_expand = False
            else:
                fixed[i] = v
                fields[i] = ""
        if arr is None:
            if not (self.sparse and not_found == n):
                self.keys.append(tuple(fixed))
            return
        mk = self.multikey
        if not arr:
            for i in arr_idx:  # an empty array counts as multikey, mid-path too
                if may_expand:
                    mk[i].add(self.lengths[i] - _nparts(fields[i]) - 1)
            sub_fixed = list(fixed)
            for i in arr_idx:
                if fields[i] == "":
                    sub_fixed[i] = UNDEFINED
            self.walk(list(fields), sub_fixed, {}, not_found, [None] * n)
            return
        sub_pos: list = [None] * n
        for i in range(n):
            f = fields[i]
            if f == "":
                if i in arr_idx and may_expand:
                    mk[i].add(self.lengths[i] - 1)
                continue
            part = f.split(".", 1)[0]
            element = _member(arr, part)
            if element is MISSING:
                mk[i].add(self.lengths[i] - _nparts(f) - 1)
                continue
            sub_pos[i] = _Positional(element, arr, f)  # this field reads one position of the array
        for element in arr:
            sub_fixed = list(fixed)
            for i in arr_idx:
                if fields[i] == "":
                    sub_fixed[i] = element if may_expand else arr
            self.walk(list(fields), sub_fixed, element if type(element) is dict else {}, not_found, sub_pos)


def btree_keys(doc: dict, paths: list[str], sparse: bool = False) -> tuple[list[tuple], list[set[int]] | None]:
    """The distinct keys (tuples of values, one per path) a btree index stores for `doc`, and the
    multikey components per path (None when no array was met: the common, fast case)."""
    vals = []
    not_found = 0
    for p in paths:
        if "." in p:
            v, _name, _rest = _extract(doc, p)
        else:
            v = doc.get(p, MISSING)
        if type(v) is list:
            break
        if v is MISSING:
            not_found += 1
            v = None
        vals.append(v)
    else:
        if sparse and not_found == len(paths):
            return [], None
        return [tuple(vals)], None
    gen = _Gen(paths, sparse)
    gen.walk(list(paths), [None] * len(paths), doc, 0, [None] * len(paths))
    keys = gen.keys
    if not keys and not sparse:
        keys.append((None,) * len(paths))
    if len(keys) > 1:  # a set of keys: equal values (1 and 1.0 too) are one key
        seen = set()
        uniq = []
        for k in keys:
            h = tuple(key_hash(v) for v in k)
            if h not in seen:
                seen.add(h)
                uniq.append(k)
        keys = uniq
    return keys, gen.multikey


def index_keys(doc: dict, key_pattern: dict) -> list[tuple]:
    """The keys (tuples of values, one per index field) the document produces."""
    return btree_keys(doc, list(key_pattern))[0]


def index_key_hashes(doc: dict, key_pattern: dict) -> list[tuple]:
    """Hashable forms of `index_keys` (equal iff the server's KeyString keys are equal)."""
    return [tuple(key_hash(v) for v in k) for k in index_keys(doc, key_pattern)]


def index_name(key_pattern: dict) -> str:
    """The default index name: `a_1_b_-1`, `t_text`, `h_hashed`."""
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

