"""Reading and setting a path the way `$lookup` and `$graphLookup` do (document_path_support.cpp).

- `visit_all_values_at_path(doc, parts)`: the values a join takes from a document —
  through arrays of documents on the way, and the elements of an array at the end (a
  nested array stays one value); nothing for a missing path or an empty array.  A
  `$lookup`'s localField and a `$graphLookup`'s connectFromField are read this way.
- `set_nested(doc, parts, value)`: a copy of `doc` with `value` at the path, creating
  documents on the way and replacing whatever is not a document there (the server's
  MutableDocument::setNestedField, which `as` fields are written with; an array on the
  way is replaced, unlike `$addFields`, which sets the field in each element).
"""

from __future__ import annotations

from typing import Any, Iterator

from bson import DBRef

from mongosim.shardsim.query.document_metadata import MetaDoc, carry
from mongosim.shardsim.query.values import MISSING, dbref_doc

__all__ = ["visit_all_values_at_path", "set_nested"]


def visit_all_values_at_path(doc: Any, parts: tuple[str, ...]) -> Iterator[Any]:
    yield from _visit(doc, parts, 0)


def _visit(v: Any, parts: tuple[str, ...], i: int) -> Iterator[Any]:
    if type(v) is DBRef:  # (the embedded document {$ref, $id, ...} it stands for)
        v = dbref_doc(v)
    elif type(v) is not dict and type(v) is not MetaDoc:  # (the root may carry metadata: a text score...)
        return
    nxt = v.get(parts[i], MISSING)
    if nxt is MISSING:
        return
    if i == len(parts) - 1:
        if type(nxt) is list:
            yield from nxt
        else:
            yield nxt
        return
    if type(nxt) is dict or type(nxt) is DBRef:
        yield from _visit(nxt, parts, i + 1)
    elif type(nxt) is list:
        p = parts[i + 1]
        if p.isdigit() and p.isascii():  # a numeric component also indexes the array
            k = int(p)
            if k < len(nxt):
                elem = nxt[k]
                if i + 1 == len(parts) - 1:
                    if type(elem) is list:
                        yield from elem
                    else:
                        yield elem
                elif type(elem) in (dict, list):
                    yield from _visit({p: elem}, parts, i + 1)
        for e in nxt:
            if type(e) is dict or type(e) is DBRef:
                yield from _visit(e, parts, i + 1)


def set_nested(doc: dict, parts: tuple[str, ...], value: Any) -> dict:
    """A copy of `doc` with `value` at `parts` (MISSING removes the last field)."""
    out = dict(doc)
    cur = out
    for p in parts[:-1]:
        nxt = cur.get(p)
        nxt = dict(nxt) if type(nxt) is dict else {}
        cur[p] = nxt
        cur = nxt
    if value is MISSING:
        cur.pop(parts[-1], None)
    else:
        cur[parts[-1]] = value
    return carry(doc, out)  # (the document keeps its metadata)
