"""A bucket's `control.min` and `control.max`: the server's MinMax (bucket_catalog/flat_bson.cpp).

The minimum and maximum are not of whole values: an object is compared field by field and an
array element by element, so `control.min.x` of the measurements `{x: {a: 1, b: 9}}` and
`{x: {a: 5, b: 2}}` is `{a: 1, b: 2}`.  Both sides share one tree of fields (in the order the
fields first appeared, as the server's FlatBSONStore keeps them); each node holds, per side,
nothing yet (unset), a value, or the marker that it is an object or an array whose children hold
the rest.  A value of another canonical type than the one a side holds replaces it when it sorts
before it (min) or after it (max): `{x: 1}` then `{x: "a"}` leaves min 1 and max "a", and then
`{x: {a: 0}}` turns the max into the object `{a: 0}` (objects sort after strings); a side that
becomes an object or array forgets what its children held.  Scalars compare in the BSON order,
strings under the collection's default collation (`compare`).

`Schema` is the bucket's schema (the same file): per field, the canonical type its values have
(objects and arrays field by field, element by element).  A measurement whose field has another
canonical type than the bucket holds does not go into that bucket (a schema change closes it), so
within a bucket each field's values share one type — what makes `control.min`/`control.max` bounds
a query can trust.

`diff(old, new)` is the `$v: 2` diff section turning one min (or max) document into another, the
form of the server's `_appendUpdates` (changed values under `u`, changed sub-objects as `s<field>`
sub-diffs, arrays as `{a: true, u<i>: ...}`).
"""

from __future__ import annotations

from typing import Any, Callable

from mongosim.shardsim.query.values import R_ARR, R_OBJ, canonical_rank, compare as bson_compare

_UNSET, _VALUE, _OBJECT, _ARRAY = 0, 1, 2, 3


class _Node:
    __slots__ = ("children", "kinds", "values")

    def __init__(self) -> None:
        self.children: dict[Any, _Node] = {}  # field name (objects) or position (arrays) -> node
        self.kinds = [_UNSET, _UNSET]  # [min side, max side]
        self.values: list[Any] = [None, None]

    def child(self, name: Any) -> _Node:
        node = self.children.get(name)
        if node is None:
            node = self.children[name] = _Node()
        return node

    def become(self, side: int, kind: int) -> None:
        """This side holds an object / array from now on: what its children held is forgotten."""
        if self.kinds[side] != kind:
            self.kinds[side] = kind
            for c in self.children.values():
                c.forget(side)

    def forget(self, side: int) -> None:
        self.kinds[side] = _UNSET
        self.values[side] = None


class MinMax:
    """The running min and max of the measurements added (`update`), skipping the meta field."""

    def __init__(self, compare: Callable[[Any, Any], int] | None = None) -> None:
        self._root = _Node()
        self._root.kinds = [_OBJECT, _OBJECT]
        self._compare = compare or bson_compare

    @classmethod
    def of(cls, min_doc: dict, max_doc: dict, compare: Callable[[Any, Any], int] | None = None) -> MinMax:
        """A MinMax holding a bucket's stored `control.min` / `control.max`."""
        mm = cls(compare)
        mm._load(mm._root, min_doc, 0)
        mm._load(mm._root, max_doc, 1)
        return mm

    def _load(self, node: _Node, value: Any, side: int) -> None:
        if isinstance(value, dict):
            node.kinds[side] = _OBJECT
            for k, v in value.items():
                self._load(node.child(k), v, side)
        elif isinstance(value, list):
            node.kinds[side] = _ARRAY
            for i, v in enumerate(value):
                self._load(node.child(i), v, side)
        else:
            node.kinds[side] = _VALUE
            node.values[side] = value

    def update(self, doc: dict, skip: str | None = None) -> None:
        for k, v in doc.items():
            if k != skip:
                self._update(self._root.child(k), v, (True, True))

    def _update(self, node: _Node, value: Any, sides: tuple[bool, bool]) -> None:
        if isinstance(value, (dict, list)):
            kind, rank = (_OBJECT, R_OBJ) if isinstance(value, dict) else (_ARRAY, R_ARR)
            go = tuple(sides[s] and self._takes_container(node, s, kind, rank) for s in (0, 1))
            for s in (0, 1):
                if go[s]:
                    node.become(s, kind)
            if go[0] or go[1]:
                items = value.items() if kind == _OBJECT else enumerate(value)
                for k, v in items:
                    self._update(node.child(k), v, go)
            return
        for s in (0, 1):
            if sides[s] and self._takes_value(node, s, value):
                node.kinds[s] = _VALUE
                node.values[s] = value

    @staticmethod
    def _better(side: int, c: int) -> bool:
        return c < 0 if side == 0 else c > 0

    def _takes_container(self, node: _Node, side: int, kind: int, rank: int) -> bool:
        held = node.kinds[side]
        if held == kind or held == _UNSET:
            return True
        other = R_ARR if held == _ARRAY else (R_OBJ if held == _OBJECT else canonical_rank(node.values[side]))
        return self._better(side, rank - other)

    def _takes_value(self, node: _Node, side: int, value: Any) -> bool:
        held = node.kinds[side]
        if held == _UNSET:
            return True
        if held != _VALUE:
            return self._better(side, canonical_rank(value) - (R_OBJ if held == _OBJECT else R_ARR))
        return self._better(side, self._compare(value, node.values[side]))

    def min(self) -> dict:
        return self._emit(self._root, 0)

    def max(self) -> dict:
        return self._emit(self._root, 1)

    def _emit(self, node: _Node, side: int) -> Any:
        kind = node.kinds[side]
        if kind == _VALUE:
            return node.values[side]
        if kind == _OBJECT:
            return {k: self._emit(c, side) for k, c in node.children.items()
                    if isinstance(k, str) and c.kinds[side] != _UNSET}
        return [self._emit(c, side) for k, c in node.children.items() if isinstance(k, int) and c.kinds[side] != _UNSET]


class Schema:
    """The canonical type of each field of a bucket's measurements (flat_bson.cpp's Schema)."""

    def __init__(self) -> None:
        self._root: dict[Any, Any] = {}

    @classmethod
    def of(cls, min_doc: dict, max_doc: dict) -> Schema:
        schema = cls()
        schema.update(min_doc)
        schema.update(max_doc)
        return schema

    def update(self, doc: dict, skip: str | None = None) -> bool:
        """Take the measurement `doc`: False (a type mismatch) when it does not fit."""
        return all(self._update(self._root, k, v) for k, v in doc.items() if k != skip)

    def _update(self, parent: dict, name: Any, value: Any) -> bool:
        held = parent.get(name)
        if isinstance(value, (dict, list)):
            kind = "object" if isinstance(value, dict) else "array"
            if held is None:
                held = parent[name] = (kind, {})
            elif held[0] != kind:
                return False
            items = value.items() if kind == "object" else enumerate(value)
            return all(self._update(held[1], k, v) for k, v in items)
        rank = canonical_rank(value)
        if held is None:
            parent[name] = ("value", rank)
            return True
        return held == ("value", rank)


def diff(old: dict, new: dict) -> dict:
    """The diff section turning the object `old` into `new` (fields are only added or changed)."""
    out: dict[str, Any] = {}
    updates: dict[str, Any] = {}
    subs: dict[str, Any] = {}
    for k, v in new.items():
        before = old.get(k, _MISSING)
        if before is _MISSING or type(before) is not type(v) and not (_scalar(before) and _scalar(v)):
            updates[k] = v
        elif isinstance(v, dict):
            sub = diff(before, v)
            if sub:
                subs["s" + k] = sub
        elif isinstance(v, list):
            sub = _array_diff(before, v)
            if sub:
                subs["s" + k] = sub
        elif not _same(before, v):
            updates[k] = v
    if updates:
        out["u"] = updates
    out.update(subs)  # (sub-diffs come last)
    return out


def _array_diff(old: list, new: list) -> dict:
    out: dict[str, Any] = {}
    for i, v in enumerate(new):
        if i >= len(old) or type(old[i]) is not type(v) and not (_scalar(old[i]) and _scalar(v)):
            out[f"u{i}"] = v
        elif isinstance(v, dict):
            sub = diff(old[i], v)
            if sub:
                out[f"s{i}"] = sub
        elif isinstance(v, list):
            sub = _array_diff(old[i], v)
            if sub:
                out[f"s{i}"] = sub
        elif not _same(old[i], v):
            out[f"u{i}"] = v
    return {"a": True, **out} if out else {}


_MISSING = object()


def _scalar(v: Any) -> bool:
    return not isinstance(v, (dict, list))


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and bson_compare(a, b) == 0
