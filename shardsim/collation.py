"""Which collation a command uses, and collations in the catalog (collections, views, indexes).

The rule (the server's CollectionQueryInfo / ExpressionContext::setCollator): a command's
own `collation` wins — `{locale: "simple"}` included, which means binary comparison —
otherwise the collection's default collation (`create` with `collation`), otherwise the
simple collation.  An empty `collation: {}` is no collation at all (the server tests
`getCollation().isEmpty()`): the default applies as if it were absent (`given`).  A read on a view uses the view's collation; asking for another one is
OptionNotSupportedOnView.  Write statements (update, delete, bulkWrite ops) carry their
own `collation` each; a bad one is that statement's write error.

In the catalog a collation is kept normalised — every attribute filled in, as
`listCollections` / `listIndexes` show it — and the simple collation is not stored at all.
An index created without `collation` on a collection with a default takes the default.

The collators themselves live in `shardsim/query/collation/`.
"""

from __future__ import annotations

from typing import Any

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.idl_errors import wrong_type
from mongosim.shardsim.query.collation import make_collator

__all__ = ["given", "check_collations", "command_collator", "statement_collator", "normalise_option",
           "index_collation", "collator_of_spec", "view_collator"]

_TOP_LEVEL = frozenset({"find", "aggregate", "count", "distinct", "findAndModify", "findandmodify", "create",
                        "explain"})


def given(collation: Any) -> Any:
    """A command's (or a statement's) `collation` field as the rule reads it: None when absent or `{}`."""
    return None if isinstance(collation, dict) and not collation else collation


def _parse(collation: Any, where: str):
    if not isinstance(collation, dict):
        raise wrong_type(where, collation, "object")
    return make_collator(collation)


def check_collations(name: str, cmd: dict) -> None:
    """Refuse a command whose own collation is invalid (the server parses it with the command)."""
    if given(cmd.get("collation")) is not None and name in _TOP_LEVEL and name != "create":
        _parse(cmd["collation"], f"{name}.collation")
    if name == "create" and "collation" in cmd:  # (create's collation is a Collation struct: {} lacks its locale)
        _parse(cmd["collation"], "create.collation")
    if name == "createIndexes" and isinstance(cmd.get("indexes"), list):
        for spec in cmd["indexes"]:
            if isinstance(spec, dict) and "collation" in spec:
                _parse(spec["collation"], "createIndexes.indexes.collation")


def collator_of_spec(spec: Any):
    """The collator of a stored (normalised) collation, None when there is none."""
    return make_collator(spec) if spec else None


def command_collator(collation: Any, coll: Any, where: str = "collation"):
    """The collator a command on `coll` (a Collection or None) runs with; `collation` is the command's
    own field (None when absent; `where` names it in a type error)."""
    collation = given(collation)
    if collation is not None:
        return _parse(collation, where)
    if coll is not None:
        default = coll.options.get("collation")
        if default:
            return make_collator(default)
    return None


def statement_collator(st: dict, coll: Any, where: str):
    """The collator of one write statement (`where` names its field for type errors: 'update.updates')."""
    return command_collator(st.get("collation"), coll, f"{where}.collation")


def view_collator(view_doc: dict, collation: Any):
    """The collator of a read on a view: the view's own; the command may only repeat it."""
    own = collator_of_spec(view_doc.get("collation"))
    collation = given(collation)
    if collation is not None and make_collator(collation) != own:
        raise MongoError("OptionNotSupportedOnView", "Cannot override a view's default collation")
    return own


def normalise_option(options: dict) -> dict:
    """`options` with its `collation` normalised (and the simple collation dropped), for the catalog."""
    if "collation" not in options:
        return options
    out = dict(options)
    coll = make_collator(out["collation"])
    if coll is None:
        del out["collation"]
    else:
        out["collation"] = dict(coll.spec)
    return out


def index_collation(spec: dict, coll: Any) -> dict:
    """An index spec with its collation as the catalog keeps it: normalised, the collection's default
    when it names none, absent when simple."""
    if "collation" in spec:
        return normalise_option(spec)
    default = coll.options.get("collation") if coll is not None else None
    if default:
        return {**spec, "collation": dict(default)}
    return spec
