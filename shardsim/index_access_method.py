"""One index: its keys in order, kept in step with the collection's documents (the server's
IndexAccessMethod over its sorted key store).

An entry is a tuple `(k1, ..., kn, recordId, idKey)`: `ki` is the BSON-order key
(`values.sort_key`) of the i-th indexed value — wrapped in `Desc` for a
descending field, the 64-bit hash for a hashed one — then the document's
RecordId (ties between equal keys follow insertion order, as WiredTiger's do)
and the `_id` key that finds the document.  Entries live in a
`sortedcontainers.SortedList`: O(log n) insert, remove and seek, and ordered
range iteration, which is all an index needs.

Which keys a document gives is `query.index_keys.btree_keys` (multikey arrays,
null for a missing field); a sparse index skips a document missing every
indexed field, a partial index one its `partialFilterExpression` rejects.

An index is *materialized* (its SortedList built from the documents) the first
time a query or a uniqueness check needs it, and maintained on every change
from then on; a unique index is materialized at once.  Until then a write pays
only the checks that can fail (parallel arrays, arrays under a hashed field),
so an index nobody reads — a hashed shard-key index, say — costs inserts nothing.

A text index's keys are its terms with their scores (`shardsim.fts.fts_spec`):
`(prefix fields..., term, score, suffix fields...)`; only `$text` plans read them
(`shardsim.fts.text_stages`).  A geo index checks each document's geometry at every
write (`shardsim.geo.geo_index`: "Can't extract geo keys") but holds no keys: geo
predicates are checked document by document.  A wildcard index's keys are
`(regular fields..., path, value, regular fields...)` (`query.wildcard_key_generator`):
one per leaf value of the document, its path in the `$_path` place; the paths
that held arrays are kept in `wildcard_multikey` (the server keeps them as
metadata keys), and the planner scans it through one expanded view per queried
path (`shardsim.planner_wildcard_helpers`).
"""

from __future__ import annotations

from typing import Any, Iterator

from sortedcontainers import SortedList

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.fts.fts_spec import FTSSpec
from mongosim.shardsim.geo.geo_index import GeoIndex
from mongosim.shardsim.index_key_validate import plugin_name
from mongosim.shardsim.query.collation import make_collator
from mongosim.shardsim.query.index_keys import btree_keys, key_hash_for
from mongosim.shardsim.query.index_keys import key_hash as _plain_hash
from mongosim.shardsim.query.paths import split
from mongosim.shardsim.query.values import MISSING, hashable
from mongosim.shardsim.query.wildcard_key_generator import (
    MIN_KEY,
    WildcardProjection,
    wildcard_field_pos,
    wildcard_keys,
)

SPECIAL_TYPES = frozenset({"text", "2d", "2dsphere", "geoHaystack", "2dsphere_bucket", "columnstore"})


class Desc:
    """A key component of a descending field: orders in reverse."""

    __slots__ = ("k",)

    def __init__(self, k) -> None:
        self.k = k

    def __eq__(self, other):
        return self.k == other.k if type(other) is Desc else NotImplemented

    def __ne__(self, other):
        return self.k != other.k if type(other) is Desc else NotImplemented

    def __lt__(self, other):
        return other.k < self.k if type(other) is Desc else NotImplemented

    def __le__(self, other):
        return other.k <= self.k if type(other) is Desc else NotImplemented

    def __gt__(self, other):
        return other.k > self.k if type(other) is Desc else NotImplemented

    def __ge__(self, other):
        return other.k >= self.k if type(other) is Desc else NotImplemented

    def __hash__(self):
        return hash(self.k)

    def __repr__(self):
        return f"Desc({self.k!r})"


class _Top:
    """Sorts after every key component: `prefix + (TOP,)` bounds all entries with that prefix."""

    __slots__ = ()

    def __eq__(self, other):
        return other is self

    def __ne__(self, other):
        return other is not self

    def __lt__(self, other):
        return False

    def __le__(self, other):
        return other is self

    def __gt__(self, other):
        return other is not self

    def __ge__(self, other):
        return True

    def __hash__(self):
        return 0

    def __repr__(self):
        return "TOP"


TOP = _Top()


def index_type(key_pattern: dict) -> str:
    """The server's plugin name of a key pattern: "btree", "hashed", "text", "2dsphere", "wildcard"..."""
    return plugin_name(key_pattern) or "btree"


def _path_has_array(doc: dict, path: str) -> bool:
    cur: Any = doc
    for p in split(path):
        if type(cur) is not dict:
            return False
        cur = cur.get(p, MISSING)
        if type(cur) is list:
            return True
    return False


def _plain_value(doc: dict, path: str):
    cur: Any = doc
    for p in split(path):
        if type(cur) is not dict:
            return MISSING
        cur = cur.get(p, MISSING)
    return cur


class IndexAccessMethod:
    """One secondary index (or the ordered view of the `_id` index) of a collection."""

    should_dedup = False  # (an expanded wildcard index may: several leaves of one document in its bounds)

    def __init__(self, spec: dict) -> None:
        from mongosim.shardsim.shard_key import hash64  # (the hashed-index function lives with shard keys)

        self.spec = spec  # the catalog's spec: collMod may change options (hidden, unique) in place
        self.name: str = spec["name"]
        self.key_pattern: dict = spec["key"]
        self.paths: list[str] = list(self.key_pattern)
        self.type = index_type(self.key_pattern)
        self.hashed_pos = next((i for i, v in enumerate(self.key_pattern.values()) if v == "hashed"), None)
        self.descending = [(not isinstance(v, str)) and v < 0 for v in self.key_pattern.values()]
        self.sparse = bool(spec.get("sparse"))
        self.is_id = self.paths == ["_id"] and self.type == "btree"
        collation = spec.get("collation")
        self.collator = make_collator(collation) if collation else None  # its keys' strings: collation keys
        self.key_hash = key_hash_for(self.collator)
        pfe = spec.get("partialFilterExpression")
        if isinstance(pfe, dict):
            from mongosim.shardsim.query.matcher import Matcher

            self.partial = Matcher(pfe)
        else:
            self.partial = None
        self._hash64 = hash64
        self.entries: SortedList | None = None  # None until materialized
        self.multikey_paths: list[set[int]] = [set() for _ in self.paths]
        # inserts must still check what could fail: arrays (parallel arrays, arrays under a hash)
        self.validates = self.type in ("btree", "hashed") and any(split(p)[0] != "_id" for p in self.paths)
        self.fts = FTSSpec(spec) if self.type == "text" else None
        self.geo = GeoIndex(spec) if self.type in ("2dsphere", "2d") else None
        if self.fts is not None or self.geo is not None:
            self.validates = True
        self.wildcard: WildcardProjection | None = None
        if self.type == "wildcard":
            self._init_wildcard(spec)

    def _init_wildcard(self, spec: dict) -> None:
        """A wildcard index: its projection, where the wildcard sits, how each stored key component
        orders (the `$_path` string is never collated nor descending)."""
        self.wildcard = WildcardProjection(self.key_pattern, spec.get("wildcardProjection"))
        self.wildcard_pos = wildcard_field_pos(self.key_pattern)
        self.wildcard_multikey: set[str] = set()  # the paths found holding arrays
        self.regular_paths = [p for i, p in enumerate(self.paths) if i != self.wildcard_pos]
        w = self.wildcard_pos
        self.component_desc = self.descending[:w] + [False] + self.descending[w:]
        self.validates = bool(self.regular_paths)  # (parallel arrays among the regular fields)

    # -- properties the planner reads --------------------------------------------------------
    @property
    def unique(self) -> bool:
        return bool(self.spec.get("unique")) or self.is_id

    @property
    def enforces_unique(self) -> bool:
        """Whether a write must not add a key another document holds: unique, or prepareUnique (collMod's
        first step to a unique index: new duplicates are refused, existing ones stay)."""
        return self.unique or bool(self.spec.get("prepareUnique"))

    @property
    def hidden(self) -> bool:
        return bool(self.spec.get("hidden"))

    @property
    def usable(self) -> bool:
        """A btree or hashed index the planner can scan."""
        return self.type in ("btree", "hashed")

    @property
    def materializable(self) -> bool:
        """An index whose keys are kept in order (btree, hashed, text, wildcard)."""
        return self.type in ("btree", "hashed", "text", "wildcard")

    @property
    def is_multikey(self) -> bool:
        return self.type == "text" or any(self.multikey_paths) or bool(self.wildcard and self.wildcard_multikey)

    def multikey_path_names(self) -> dict:
        """explain's `multiKeyPaths`: per field, the prefixes of its path that held arrays."""
        out = {}
        for path, comps in zip(self.paths, self.multikey_paths):
            parts = split(path)
            out[path] = [".".join(parts[: c + 1]) for c in sorted(comps)]
        return out

    def field_multikey(self, i: int) -> bool:
        return bool(self.multikey_paths[i])

    # -- keys of a document -----------------------------------------------------------------
    def keys(self, doc: dict) -> list[tuple]:
        """The key values the index stores for `doc` ([] when the document is not indexed)."""
        if self.partial is not None and not self.partial.matches(doc):
            return []
        if self.is_id:
            return [(doc["_id"],)]
        if self.fts is not None:
            return self.fts.index_keys(doc)
        if self.geo is not None:
            self.geo.check(doc)
            return []
        if self.wildcard is not None:
            return self._wildcard_keys(doc)
        h = self.hashed_pos
        if h is None:
            keys, mk = btree_keys(doc, self.paths, self.sparse)
            if mk is not None:
                for i, comps in enumerate(mk):
                    if comps:
                        self.multikey_paths[i] |= comps
            return keys
        hpath = self.paths[h]
        if _path_has_array(doc, hpath):
            raise MongoError(16766, "hashed indexes do not currently support array values. "
                                    f"Found array at path: {hpath}")
        hv = _plain_value(doc, hpath)
        others = [p for i, p in enumerate(self.paths) if i != h]
        if not others:
            if hv is MISSING and self.sparse:
                return []
            return [(self._hash64(None if hv is MISSING else hv),)]
        if self.sparse and hv is MISSING and all(_plain_value(doc, p) is MISSING for p in others):
            return []  # (sparse: skipped only when every indexed field is missing)
        rest, mk = btree_keys(doc, others, False)
        if mk is not None:
            j = 0
            for i in range(len(self.paths)):
                if i != h:
                    self.multikey_paths[i] |= mk[j]
                    j += 1
        hashed = self._hash64(None if hv is MISSING else hv)
        return [k[:h] + (hashed,) + k[h:] for k in rest]

    def _wildcard_keys(self, doc: dict) -> list[tuple]:
        """The regular fields' keys crossed with the wildcard's `(path, value)` pairs; a compound index
        keeps a document without wildcard leaves under MinKey, a lone wildcard index skips it."""
        pairs, mk = wildcard_keys(doc, self.wildcard)
        if mk:
            self.wildcard_multikey |= mk
        if not self.regular_paths:
            return pairs
        regular, rmk = btree_keys(doc, self.regular_paths, False)
        if rmk is not None:
            j = 0
            for i in range(len(self.paths)):
                if i != self.wildcard_pos:
                    self.multikey_paths[i] |= rmk[j]
                    j += 1
        w = self.wildcard_pos
        return [r[:w] + pair + r[w:] for r in regular for pair in (pairs or [(MIN_KEY, MIN_KEY)])]

    def validate(self, doc: dict) -> None:
        """Raise what indexing `doc` would raise (for an index not materialized yet)."""
        if self.validates and (self.partial is None or self.partial.matches(doc)):
            if self.hashed_pos is not None or self.fts is not None or self.geo is not None:
                self.keys(doc)
            elif self.wildcard is not None:
                btree_keys(doc, self.regular_paths, False)
            else:
                btree_keys(doc, self.paths, self.sparse)

    def encode(self, key: tuple) -> tuple:
        """The key values in the index's order (BSON order, reversed for descending fields)."""
        key_hash = self.key_hash
        if self.hashed_pos is None and not any(self.descending) and self.wildcard is None:
            return tuple([key_hash(v) for v in key])
        if self.wildcard is not None:
            return self._wildcard_encode(key)
        out = []
        for v, desc, i in zip(key, self.descending, range(len(key))):
            k = hashable(v) if i == self.hashed_pos else key_hash(v)
            out.append(Desc(k) if desc else k)
        return tuple(out)

    def _wildcard_encode(self, key: tuple) -> tuple:
        path_at = self.wildcard_pos
        out = []
        for i, (v, desc) in enumerate(zip(key, self.component_desc)):
            k = _plain_hash(v) if i == path_at else self.key_hash(v)
            out.append(Desc(k) if desc else k)
        return tuple(out)

    def key_hash_at(self, i: int):
        """The order key function of stored component `i` (a wildcard's `$_path` is never collated)."""
        if self.wildcard is not None and i == self.wildcard_pos:
            return _plain_hash
        return self.key_hash

    # -- the sorted store ------------------------------------------------------------------
    @property
    def materialized(self) -> bool:
        return self.entries is not None

    def build(self, docs: dict, rids: dict) -> None:
        """Materialize: the entries of every document (`docs`: id key -> doc, `rids`: id key -> RecordId)."""
        entries = []
        for idk, doc in docs.items():
            rid = rids[idk]
            for key in self.keys(doc):
                entries.append(self.encode(key) + (rid, idk))
        self.entries = SortedList(entries)

    def add(self, doc: dict, rid: int, idk: Any, keys: list[tuple] | None = None) -> None:
        add = self.entries.add
        for key in (self.keys(doc) if keys is None else keys):
            add(self.encode(key) + (rid, idk))

    def remove(self, doc: dict, rid: int, idk: Any, keys: list[tuple] | None = None) -> None:
        discard = self.entries.discard
        for key in (self.keys(doc) if keys is None else keys):
            discard(self.encode(key) + (rid, idk))

    def duplicate_of(self, keys: list[tuple], idk: Any) -> tuple | None:
        """The first of `keys` another document already holds (unique indexes), else None."""
        entries = self.entries
        n = len(self.paths)
        for key in keys:
            enc = self.encode(key)
            for entry in entries.irange(enc, enc + (TOP,)):
                if entry[n + 1] != idk:
                    return key
        return None

    # -- reading ---------------------------------------------------------------------------
    def scan(self, lo: tuple, lo_incl: bool, hi: tuple, hi_incl: bool, reverse: bool = False) -> Iterator[tuple]:
        """Entries whose key prefix lies between `lo` and `hi` (key-space prefixes), in index order
        (or reversed)."""
        lo_b = lo if lo_incl else lo + (TOP,)
        hi_b = hi + (TOP,) if hi_incl else hi
        if hi_b < lo_b:
            return iter(())
        return self.entries.irange(lo_b, hi_b, (True, False), reverse=reverse)

    def count(self, lo: tuple, lo_incl: bool, hi: tuple, hi_incl: bool) -> int:
        lo_b = lo if lo_incl else lo + (TOP,)
        hi_b = hi + (TOP,) if hi_incl else hi
        if hi_b < lo_b:
            return 0
        e = self.entries
        return max(0, e.bisect_left(hi_b) - e.bisect_left(lo_b))

    def __len__(self) -> int:
        return len(self.entries) if self.entries is not None else 0

