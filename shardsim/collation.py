"""Collation: mongosim compares strings by code point only (the server's "simple" collation).

A command asking for another collation (`collation: {locale: "fr", ...}` on a
read, a write statement, a collection or an index) is refused before anything
runs, with NotImplemented, rather than answered as if the collation were
simple: results that silently ignore it would be wrong for the caller.
"""

from __future__ import annotations

from typing import Any, Iterator

from mongosim.oplog.errors import MongoError

_STATEMENT_FIELDS = {"update": "updates", "delete": "deletes", "bulkWrite": "ops"}


def _collations(name: str, cmd: dict) -> Iterator[tuple[str, Any]]:
    if "collation" in cmd:
        yield f"{name}.collation", cmd["collation"]
    field = _STATEMENT_FIELDS.get(name)
    if field and isinstance(cmd.get(field), list):
        for st in cmd[field]:
            if isinstance(st, dict) and "collation" in st:
                yield f"{name}.{field}.collation", st["collation"]
    if name == "createIndexes" and isinstance(cmd.get("indexes"), list):
        for spec in cmd["indexes"]:
            if isinstance(spec, dict) and "collation" in spec:
                yield "createIndexes.indexes.collation", spec["collation"]


def refuse_collation(name: str, cmd: dict) -> None:
    """Raise unless every collation `cmd` names is the simple one."""
    for where, value in _collations(name, cmd):
        if not isinstance(value, dict):
            raise MongoError("TypeMismatch", f"BSON field '{where}' is the wrong type, expected type 'object'")
        if value and value != {"locale": "simple"}:
            raise MongoError("NotImplemented", f"collation {value} is not supported by mongosim "
                                               "(strings compare by code point, the simple collation)")
