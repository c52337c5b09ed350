"""Wildcard index keys: one key per leaf value of a document, as `(path, value)` (WildcardKeyGenerator).

A wildcard index (`{"$**": 1}`, `{"a.$**": 1}`, or a compound one such as
`{a: 1, "$**": 1}` with a `wildcardProjection`) stores, for every *leaf* of the
projected document, the dotted path that leads to it and its value:

- the path names the fields only: array positions are left out (`{a: [{b: 1}]}`
  gives `("a.b", 1)`), and a field whose name holds a "." is skipped (no query
  can reach it);
- an array is walked: its elements are indexed at the array's own path, and the
  path is recorded as *multikey*; an array directly inside an array is not
  walked but indexed whole as a value;
- an empty document is a leaf (`("a", {})`), an empty array too (indexed as
  `undefined`, as a regular index does);
- which paths are indexed is the *projection*: `"a.$**"` indexes the subtree
  under `a`; `wildcardProjection` includes (`{a: 1}`) or excludes (`{a: 0}`)
  subtrees; `_id` is left out unless the projection names it with 1.

A compound wildcard index crosses the regular fields' keys (the btree key
generator, `index_keys.btree_keys`) with the wildcard's; a document with no
wildcard leaf still gets its regular keys, with MinKey in the wildcard's two
places (the `$_path` value the server gives a document without wildcard fields).

Sources: src/mongo/db/index/wildcard_key_generator.cpp, wildcard_access_method.cpp.
Hand-written: these are the server's indexing rules.
"""

from __future__ import annotations

from bson import MinKey

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.index_keys import UNDEFINED, key_hash

__all__ = ["WildcardProjection", "wildcard_field_pos", "wildcard_keys", "is_wildcard_field"]

MIN_KEY = MinKey()


def is_wildcard_field(field: str) -> bool:
    return field == "$**" or field.endswith(".$**")


def wildcard_field_pos(key_pattern: dict) -> int:
    """The position of the wildcard field in a key pattern."""
    return next(i for i, f in enumerate(key_pattern) if is_wildcard_field(f))


def _flatten(spec: dict, prefix: str = "") -> list[tuple[str, object]]:
    out = []
    for k, v in spec.items():
        path = f"{prefix}{k}"
        if isinstance(v, dict) and v and not next(iter(v)).startswith("$"):
            out.extend(_flatten(v, path + "."))
        else:
            out.append((path, v))
    return out


def _is_prefix(p: str, q: str) -> bool:
    """`p` equals `q` or is one of its ancestors ("a" of "a.b")."""
    return p == q or q.startswith(p + ".")


class WildcardProjection:
    """Which paths a wildcard index covers (the index's projection: subtree, inclusion or exclusion)."""

    __slots__ = ("include", "exclude")

    def __init__(self, key_pattern: dict, projection: dict | None = None) -> None:
        field = next(f for f in key_pattern if is_wildcard_field(f))
        self.include: list[str] | None = None  # None: an exclusion projection
        self.exclude: list[str] = []
        if field != "$**":
            self.include = [field[: -len(".$**")]]
            return
        if not projection:
            self.exclude = ["_id"]
            return
        parse_projection(projection)
        items = _flatten(projection)
        id_value = next((v for p, v in items if p == "_id"), None)
        others = [(p, v) for p, v in items if p != "_id"]
        inclusion = any(_truthy(v) for _p, v in others) if others else _truthy(id_value)
        if inclusion:
            self.include = [p for p, v in items if _truthy(v)]
        else:
            self.exclude = [p for p, v in items if not _truthy(v)]
            if id_value is None:
                self.exclude.append("_id")

    def covers(self, path: str) -> bool:
        """Whether the value at `path` (and everything under it) is indexed."""
        if self.include is not None:
            return any(_is_prefix(p, path) for p in self.include)
        return not any(_is_prefix(p, path) for p in self.exclude)

    def reaches(self, path: str) -> bool:
        """Whether something at or under `path` is indexed (the walk must go in)."""
        if self.include is not None:
            return any(_is_prefix(p, path) or _is_prefix(path, p) for p in self.include)
        return not any(_is_prefix(p, path) for p in self.exclude)


def _truthy(v) -> bool:
    return bool(v) if not isinstance(v, (dict, list, str)) else True


def parse_projection(projection: dict) -> None:
    """The checks the server's projection parser makes of a wildcardProjection (wildcard policies: no
    computed fields, no mixing of inclusion and exclusion except for `_id`)."""
    items = _flatten(projection)
    mode = None
    for path, v in items:
        if isinstance(v, (dict, list, str)) or v is None:
            raise MongoError(51271, "Bad projection specification, cannot use computed fields when parsing a spec "
                                    "in kBanComputedFields mode")
        if path == "_id":
            continue
        inc = _truthy(v)
        if mode is None:
            mode = inc
        elif mode != inc:
            if mode:
                raise MongoError(31254, f"Cannot do exclusion on field {path} in inclusion projection")
            raise MongoError(31253, f"Cannot do inclusion on field {path} in exclusion projection")
    for path, v in items:
        if path.startswith("_id.") and mode is not None and _truthy(v) != mode:
            raise MongoError("CannotCreateIndex", f"Cannot use a subfield of _id ({path}) against the projection's "
                                                  "mode")


def wildcard_keys(doc: dict, proj: WildcardProjection) -> tuple[list[tuple[str, object]], set[str]]:
    """The `(path, value)` pairs a wildcard index stores for `doc`, and the paths found holding arrays."""
    keys: list[tuple[str, object]] = []
    multikey: set[str] = set()
    seen: set = set()
    covers, reaches = proj.covers, proj.reaches

    def add(path: str, value) -> None:
        h = (path, key_hash(value))
        if h not in seen:  # (a set of keys: the same value twice at one path is one key)
            seen.add(h)
            keys.append((path, value))

    def walk(obj, in_array: bool, path: str) -> None:
        items = enumerate(obj) if in_array else obj.items()
        for name, v in items:
            if not in_array:
                if "." in name:
                    continue
                here = f"{path}.{name}" if path else name
                if not reaches(here):
                    continue
            else:
                here = path
            t = type(v)
            if t is list:
                if in_array:
                    if covers(here):
                        add(here, v)  # an array in an array: a value, not walked
                    continue
                multikey.add(here)
                if not v:
                    if covers(here):
                        add(here, UNDEFINED)
                    continue
                walk(v, True, here)
            elif t is dict:
                if not v:
                    if covers(here):
                        add(here, v)
                    continue
                walk(v, False, here)
            elif covers(here):
                add(here, v)

    walk(doc, False, "")
    return keys, multikey
