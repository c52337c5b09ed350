"""The `$v: 2` update diff: compute it, apply it, describe it.

Since MongoDB 5.0 an update is logged in the oplog not as the update the
client sent but as a *diff* of the document (`o: {$v: 2, diff: {...}}`):

    {d: {f: false}}           field f deleted
    {u: {f: v}}               field f (which existed) now has value v
    {i: {f: v}}               field f inserted (appended at the end)
    {s<f>: <subdiff>}         field f is an object/array that changed inside
    {a: true, l: n, u3: v, s4: <subdiff>}
                              an array diff: resized to n, element 3 set,
                              element 4 changed inside (indexes ascending)

Sections are written in the order d, u, i, (b), then the sub-diffs.

* :func:`compute_diff` is the server's `doc_diff::computeOplogDiff` (used for
  pipeline-style updates): a field-by-field walk of pre- and post-image with
  the server's size bookkeeping; when the diff would not be smaller than the
  post-image it returns None and the caller logs a full replacement.
* :func:`apply_diff` is `DocumentDiffApplier`: how secondaries apply the
  entry, and how change streams rebuild a post-image from a pre-image.
* :func:`update_description` is `change_stream_document_diff_parser`: the
  `updateDescription` of an update event (`updatedFields`, `removedFields`,
  `truncatedArrays`, and `disambiguatedPaths` with showExpandedEvents).

Sources: src/mongo/db/update/document_diff_calculator.cpp,
document_diff_serialization.{h,cpp}, document_diff_applier.cpp,
src/mongo/db/pipeline/change_stream_document_diff_parser.cpp.
Hand-written: no library implements this format.
"""

from __future__ import annotations

import datetime

import bson
from bson import Binary, Code, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, Timestamp

__all__ = [
    "compute_diff",
    "apply_diff",
    "update_description",
    "value_size",
    "doc_size",
    "binary_equal",
    "DELTA_METADATA_PADDING",
]

DELTA_METADATA_PADDING = 15  # update_oplog_entry::kSizeOfDeltaOplogEntryMetadata
_EMPTY_DOC_DIFF = 5  # kSizeOfEmptyDocumentDiffBuilder
_EMPTY_ARRAY_DIFF = 9  # kSizeOfEmptyArrayDiffBuilder


# ---------------------------------------------------------------------------------
# BSON sizes (what BSONElement::valuesize / BSONObj::objsize report)


def _name_len(name: str) -> int:
    return len(name) if name.isascii() else len(name.encode("utf-8"))


def doc_size(d) -> int:
    n = 5
    for k, v in d.items():
        n += 2 + _name_len(k) + value_size(v)
    return n


def _array_size(a) -> int:
    n = 5
    for i, v in enumerate(a):
        n += 2 + len(str(i)) + value_size(v)
    return n


def value_size(v) -> int:
    """The size of a value's bytes inside its BSON element (type byte and name excluded)."""
    t = type(v)
    if t is int:
        return 4 if -(2**31) <= v < 2**31 else 8
    if t is str:
        return 5 + (len(v) if v.isascii() else len(v.encode("utf-8")))
    if t is float or t is Int64:
        return 8
    if t is bool:
        return 1
    if v is None:
        return 0
    if t is dict:
        return doc_size(v)
    if t is list:
        return _array_size(v)
    if t is ObjectId:
        return 12
    if t is datetime.datetime or t is Timestamp:
        return 8
    if t is Decimal128:
        return 16
    if t is MinKey or t is MaxKey:
        return 0
    if t is bytes or t is Binary:
        return 5 + len(v) + (4 if getattr(v, "subtype", 0) == 2 else 0)
    return len(bson.encode({"": v})) - 7


def binary_equal(a, b) -> bool:
    """BSONElement::binaryEqualValues: same type and same bytes (1 != 1.0, field order matters)."""
    ta = type(a)
    if ta is not type(b):
        if isinstance(a, (bytes, Binary)) and isinstance(b, (bytes, Binary)):
            return getattr(a, "subtype", 0) == getattr(b, "subtype", 0) and bytes(a) == bytes(b)
        if ta is int and type(b) is Int64 or ta is Int64 and type(b) is int:
            # a Python int outside int32 is encoded as int64
            return _int_is_long(a) == _int_is_long(b) and int(a) == int(b)
        return False
    if ta is dict:
        if len(a) != len(b):
            return False
        for (ka, va), (kb, vb) in zip(a.items(), b.items()):
            if ka != kb or not binary_equal(va, vb):
                return False
        return True
    if ta is list:
        return len(a) == len(b) and all(binary_equal(x, y) for x, y in zip(a, b))
    if ta is float:
        return a == b and (a != 0 or str(a) == str(b)) or (a != a and b != b)
    if ta is int:
        return a == b and _int_is_long(a) == _int_is_long(b)
    if ta is Decimal128:
        return a.bid == b.bid
    if ta is Binary:
        return a.subtype == b.subtype and bytes(a) == bytes(b)
    if ta is Regex:
        return a.pattern == b.pattern and a.flags == b.flags
    if ta is Code:
        return str(a) == str(b) and a.scope == b.scope
    return a == b


def _int_is_long(x) -> bool:
    return type(x) is Int64 or not (-(2**31) <= x < 2**31)


# ---------------------------------------------------------------------------------
# compute (document_diff_calculator.cpp)


class _DocNode:
    __slots__ = ("size", "deletes", "updates", "inserts", "subs")

    def __init__(self, padding: int = 0):
        self.size = _EMPTY_DOC_DIFF + padding
        self.deletes: list[str] = []
        self.updates: list[tuple[str, object]] = []
        self.inserts: list[tuple[str, object]] = []
        self.subs: list[tuple[str, object]] = []

    def add_update(self, name, v):
        if not self.updates:
            self.size += 8
        self.size += _name_len(name) + 2 + value_size(v)
        self.updates.append((name, v))

    def add_insert(self, name, v):
        if not self.inserts:
            self.size += 8
        self.size += _name_len(name) + 2 + value_size(v)
        self.inserts.append((name, v))

    def add_delete(self, name):
        if not self.deletes:
            self.size += 8
        self.size += _name_len(name) + 2 + 1
        self.deletes.append(name)

    def add_child(self, name, node):
        self.size += _name_len(name) + 2 + node.size + 1
        self.subs.append((name, node))

    def serialize(self) -> dict:
        out: dict = {}
        if self.deletes:
            out["d"] = {k: False for k in self.deletes}
        if self.updates:
            out["u"] = dict(self.updates)
        if self.inserts:
            out["i"] = dict(self.inserts)
        for name, node in self.subs:
            out["s" + name] = node.serialize()
        return out


class _ArrNode:
    __slots__ = ("size", "children", "resize")

    def __init__(self):
        self.size = _EMPTY_ARRAY_DIFF
        self.children: list[tuple[int, object, bool]] = []  # (idx, value|node, is_node)
        self.resize = None

    def add_update(self, idx, v):
        self.size += 1 + len(str(idx)) + 2 + value_size(v)
        self.children.append((idx, v, False))

    def add_child(self, idx, node):
        self.size += 1 + len(str(idx)) + 2 + node.size
        self.children.append((idx, node, True))

    def set_resize(self, n):
        self.resize = n
        self.size += 1 + 4 + 2

    def serialize(self) -> dict:
        out: dict = {"a": True}
        if self.resize is not None:
            out["l"] = self.resize
        for idx, v, is_node in sorted(self.children, key=lambda c: c[0]):
            if is_node:
                out["s" + str(idx)] = v.serialize()
            else:
                out["u" + str(idx)] = v
        return out


def _sub_diff(pre, post, ignore_limit):
    if type(pre) is dict:
        return _doc_diff(pre, post, ignore_limit)
    return _array_diff(pre, post, ignore_limit)


def _is_container_pair(a, b) -> bool:
    ta = type(a)
    return ta is type(b) and (ta is dict or ta is list)


def _array_diff(pre: list, post: list, ignore_limit: bool):
    node = _ArrNode()
    post_size = _array_size(post)
    n = min(len(pre), len(post))
    for i in range(n):
        if not ignore_limit and post_size < node.size:
            return None
        a, b = pre[i], post[i]
        if not binary_equal(a, b):
            if _is_container_pair(a, b):
                sub = _sub_diff(a, b, ignore_limit)
                if sub is None:
                    node.add_update(i, b)
                else:
                    node.add_child(i, sub)
            else:
                node.add_update(i, b)
    for i in range(n, len(post)):
        node.add_update(i, post[i])
    if len(pre) > len(post):
        node.set_resize(len(post))
    return node if (ignore_limit or post_size > node.size) else None


def _doc_diff(pre: dict, post: dict, ignore_limit: bool, padding: int = 0):
    node = _DocNode(padding)
    post_size = doc_size(post)
    pre_items = list(pre.items())
    post_items = list(post.items())
    pi = qi = 0
    deletes: dict[str, None] = {}
    while pi < len(pre_items) and qi < len(post_items):
        if not ignore_limit and post_size < node.size:
            return None
        pk, pv = pre_items[pi]
        qk, qv = post_items[qi]
        if pk == qk and binary_equal(pv, qv):
            pi += 1
            qi += 1
            continue
        if pk == qk:
            if _is_container_pair(pv, qv):
                sub = _sub_diff(pv, qv, ignore_limit)
                if sub is None:
                    node.add_update(pk, qv)
                else:
                    node.add_child(pk, sub)
            else:
                node.add_update(pk, qv)
            pi += 1
            qi += 1
        else:
            deletes[pk] = None
            pi += 1
    while pi < len(pre_items):
        node.add_delete(pre_items[pi][0])
        pi += 1
    while qi < len(post_items):
        qk, qv = post_items[qi]
        node.add_insert(qk, qv)
        deletes.pop(qk, None)
        qi += 1
    for k in sorted(deletes, key=lambda s: s.encode("utf-8")):  # std::set<StringData> order
        node.add_delete(k)
    return node if (ignore_limit or post_size > node.size) else None


def compute_diff(pre: dict, post: dict, *, padding: int = DELTA_METADATA_PADDING, ignore_size_limit: bool = False):
    """The server's computeOplogDiff: the diff, or None when a replacement entry is smaller."""
    node = _doc_diff(pre, post, ignore_size_limit, padding)
    if node is None:
        return None
    diff = node.serialize()
    if ignore_size_limit:
        return diff
    if doc_size(diff) < doc_size(post):
        return diff
    return None


# ---------------------------------------------------------------------------------
# apply (document_diff_applier.cpp)


def apply_diff(pre: dict, diff: dict) -> dict:
    """Apply a `$v:2` diff to a pre-image, returning the post-image (pre is not mutated)."""
    return _apply_doc(pre, diff)


def _apply_doc(pre: dict, diff: dict) -> dict:
    deletes = diff.get("d", {})
    updates = diff.get("u", {})
    inserts = diff.get("i", {})
    binaries = diff.get("b", {})
    subs = {k[1:]: v for k, v in diff.items() if k[0] == "s" and k not in ("d", "u", "i", "b")}
    out: dict = {}
    done: set[str] = set()
    for k, v in pre.items():
        if k in deletes:
            continue
        if k in updates:
            out[k] = updates[k]
            done.add(k)
        elif k in inserts:
            continue
        elif k in binaries:
            out[k] = binaries[k]
            done.add(k)
        elif k in subs:
            out[k] = _apply_sub(v, subs[k])
        else:
            out[k] = v
    for k, v in updates.items():
        if k not in done:
            out[k] = v
    for k, v in inserts.items():
        out[k] = v
    return out


def _apply_sub(pre_value, sd):
    """A sub-diff applied to an array element or field; a type mismatch (or a missing
    element) gives null, as when a later oplog entry will overwrite the value anyway."""
    is_array = sd.get("a") is True
    if is_array and type(pre_value) is list:
        return _apply_array(pre_value, sd)
    if not is_array and type(pre_value) is dict:
        return _apply_doc(pre_value, sd)
    return None


def _apply_array(pre: list, diff: dict) -> list:
    size = diff.get("l")
    mods = sorted(((int(k[1:]), k[0], v) for k, v in diff.items() if k not in ("a", "l")), key=lambda m: m[0])
    out = []
    mi = 0
    idx = 0
    limit = len(pre) if size is None else min(len(pre), size)
    while idx < limit:
        if mi < len(mods) and mods[mi][0] == idx:
            _i, kind, v = mods[mi]
            out.append(v if kind == "u" else _apply_sub(pre[idx], v))
            mi += 1
        else:
            out.append(pre[idx])
        idx += 1
    while (size is not None and idx < size) or mi < len(mods):
        if mi < len(mods) and mods[mi][0] == idx:
            _i, kind, v = mods[mi]
            out.append(v if kind == "u" else None)
            mi += 1
        else:
            out.append(None)
        idx += 1
    return out


# ---------------------------------------------------------------------------------
# updateDescription (change_stream_document_diff_parser.cpp)


def _is_numeric_strict(s: str) -> bool:
    return s.isdigit() and s.isascii() and (len(s) == 1 or s[0] != "0")


class _Describer:
    def __init__(self):
        self.updated: dict = {}
        self.removed: list = []
        self.truncated: list = []
        self.disamb: dict = {}
        self.parts: list = []  # (name, is_index, ambiguous_so_far)

    def push(self, field, is_index: bool):
        name = str(field)
        if self.parts and self.parts[-1][2]:
            amb = True
        else:
            numeric = (not is_index) and len(self.parts) >= 1 and _is_numeric_strict(name)
            dotted = (not is_index) and not numeric and "." in name
            amb = numeric or dotted
        self.parts.append((name, is_index, amb))

    def pop(self):
        self.parts.pop()

    def path(self) -> str:
        return ".".join(p[0] for p in self.parts)

    def note(self):
        if self.parts and self.parts[-1][2]:
            self.disamb[self.path()] = [int(n) if idx else n for n, idx, _ in self.parts]

    def updated_field(self, field, is_index, v):
        self.push(field, is_index)
        self.updated[self.path()] = v
        self.note()
        self.pop()

    def removed_field(self, field):
        self.push(field, False)
        self.removed.append(self.path())
        self.note()
        self.pop()

    def doc(self, diff: dict):
        for sec in ("u", "i", "b"):
            for k, v in diff.get(sec, {}).items():
                self.updated_field(k, False, v)
        for k in diff.get("d", {}):
            self.removed_field(k)
        for k, v in diff.items():
            if len(k) > 1 and k[0] == "s":
                self.push(k[1:], False)
                self.sub(v)
                self.pop()

    def array(self, diff: dict):
        if "l" in diff:
            self.truncated.append({"field": self.path(), "newSize": diff["l"]})
            self.note()
        for k, v in diff.items():
            if k in ("a", "l"):
                continue
            idx = int(k[1:])
            if k[0] == "u":
                self.updated_field(idx, True, v)
            else:
                self.push(idx, True)
                self.sub(v)
                self.pop()

    def sub(self, v):
        if v.get("a") is True:
            self.array(v)
        else:
            self.doc(v)


def _describe_doc(diff: dict, prefix: str, updated: dict, removed: list, truncated: list):
    for sec in ("u", "i", "b"):
        part = diff.get(sec)
        if part:
            for k, v in part.items():
                updated[prefix + k] = v
    part = diff.get("d")
    if part:
        for k in part:
            removed.append(prefix + k)
    for k, v in diff.items():
        if len(k) > 1 and k[0] == "s":
            if v.get("a") is True:
                _describe_array(v, prefix + k[1:], updated, removed, truncated)
            else:
                _describe_doc(v, prefix + k[1:] + ".", updated, removed, truncated)


def _describe_array(diff: dict, path: str, updated: dict, removed: list, truncated: list):
    if "l" in diff:
        truncated.append({"field": path, "newSize": diff["l"]})
    for k, v in diff.items():
        if k == "a" or k == "l":
            continue
        sub = path + "." + k[1:]
        if k[0] == "u":
            updated[sub] = v
        elif v.get("a") is True:
            _describe_array(v, sub, updated, removed, truncated)
        else:
            _describe_doc(v, sub + ".", updated, removed, truncated)


def update_description(diff: dict, *, show_expanded: bool = False) -> dict:
    """The change event's updateDescription for a `$v:2` diff, in the server's field order."""
    if not show_expanded:
        updated: dict = {}
        removed: list = []
        truncated: list = []
        _describe_doc(diff, "", updated, removed, truncated)
        return {"updatedFields": updated, "removedFields": removed, "truncatedArrays": truncated}
    d = _Describer()
    d.doc(diff)
    out = {"updatedFields": d.updated, "removedFields": d.removed, "truncatedArrays": d.truncated}
    if show_expanded:
        out["disambiguatedPaths"] = d.disamb
    return out


def replacement_to_update_description(pre: dict, post: dict) -> dict:  # pragma: no cover - helper
    return update_description(compute_diff(pre, post, ignore_size_limit=True) or {})
