"""$merge: write an aggregation's results into a collection, document by document.

`{$merge: {into: "coll" | {db, coll}, on: "_id" | [fields], let: {...},
whenMatched: "merge" | "replace" | "keepExisting" | "fail" | [pipeline],
whenNotMatched: "insert" | "discard" | "fail"}}` (document_source_merge.idl).
The server's MergeProcessor turns each result into a write and sends them in
batches through the ordinary write commands (unordered), so the oplog, change
streams and shard targeting see plain inserts and updates:

| whenMatched     | the write for each result `d` (filter: its `on` fields)              |
| --------------- | -------------------------------------------------------------------- |
| merge           | update `{$set: d}`                                                   |
| replace         | update with `d` as the replacement                                   |
| keepExisting    | update `{$setOnInsert: d}` (so it only ever inserts)                 |
| [pipeline]      | the pipeline, its `let` (default `{new: "$$ROOT"}`) as constants `c`;|
|                 | an insert takes `d` itself (`upsertSupplied`)                        |
| fail            | insert `d` (a match is a DuplicateKey, 11000, the command's error)   |

whenNotMatched `insert` makes the updates upserts, `discard` not, and `fail` checks that
each matched (13113).  A result without `_id` gets one when `on` includes `_id`.  `on` defaults to `_id` (to the
shard key and `_id` for a sharded target); other fields need a unique index on exactly
them (51183) and, for a sharded target, must include the shard key.

`merge_writes` builds the write commands; the node (`run_merge`) and mongos run them
through their own write paths and `check_reply` turns their errors into the command's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable

from bson import ObjectId
from mongosim.oplog.errors import MongoError
from mongosim.shardsim.operation_context import OpCtx
from mongosim.shardsim.out_stage import check_target
from mongosim.shardsim.query.expressions import compile_expression
from mongosim.shardsim.query.idl_errors import wrong_type
from mongosim.shardsim.query.paths import get_path
from mongosim.shardsim.query.values import MISSING, type_name
from mongosim.shardsim.query.variables import check_references
from mongosim.shardsim.writes import cmd_insert, cmd_update

if TYPE_CHECKING:
    from mongosim.shardsim.node import Node

_MATCHED = ("replace", "keepExisting", "merge", "fail")
_NOT_MATCHED = ("insert", "discard", "fail")
_SUPPORTED = {("replace", "insert"), ("replace", "fail"), ("replace", "discard"), ("merge", "insert"),
              ("merge", "fail"), ("merge", "discard"), ("keepExisting", "insert"), ("fail", "insert"),
              ("pipeline", "insert"), ("pipeline", "fail"), ("pipeline", "discard")}
BATCH = 1000  # results per write command


@dataclass
class MergeSpec:
    db: str
    coll: str
    on: list[str] | None
    let: dict | None
    when_matched: Any  # a mode name, or a pipeline (list)
    when_not_matched: str

    @property
    def matched_mode(self) -> str:
        return "pipeline" if isinstance(self.when_matched, list) else self.when_matched


def parse_merge(spec: Any, db: str) -> MergeSpec:
    if isinstance(spec, str):
        spec = {"into": spec}
    if not isinstance(spec, dict):
        raise MongoError(51182, f"$merge only supports a string or object argument, not {type_name(spec)}")
    for k in spec:
        if k not in ("into", "on", "let", "whenMatched", "whenNotMatched", "targetCollectionVersion"):
            raise MongoError(40415, f"BSON field '$merge.{k}' is an unknown field.")
    if "into" not in spec:
        raise MongoError(40414, "BSON field '$merge.into' is missing but a required field")
    into = spec["into"]
    if isinstance(into, str):
        target_db, coll = db, into
    elif isinstance(into, dict) and isinstance(into.get("coll"), str):
        target_db, coll = into.get("db", db), into["coll"]
        if not isinstance(target_db, str):
            raise wrong_type("$merge.into.db", target_db, "string")
    else:
        raise MongoError(51178, "$merge 'into' field must be either a string or an object, but found "
                                f"{type_name(into)}")
    if not coll:
        raise MongoError(5786800, "Invalid $merge target namespace: the collection name cannot be empty")
    check_target(target_db, coll, {"invalid": ("InvalidNamespace", f"Invalid $merge target namespace: '{target_db}.{coll}'"),
                                   "special": (31319, f"Cannot $merge to special collection: {coll}"),
                                   "internal": (31320, f"Cannot $merge to internal database: {target_db}")})
    matched = spec.get("whenMatched", "merge")
    if not (isinstance(matched, list) or matched in _MATCHED):
        raise MongoError("BadValue", f"Enumeration value '{matched}' for field '$merge.whenMatched' is not a valid "
                                     "value.") if isinstance(matched, str) else wrong_type("$merge.whenMatched", matched, "array")
    not_matched = spec.get("whenNotMatched", "insert")
    if not_matched not in _NOT_MATCHED:
        raise MongoError("BadValue", f"Enumeration value '{not_matched}' for field '$merge.whenNotMatched' is not a "
                                     "valid value.") if isinstance(not_matched, str) \
            else wrong_type("$merge.whenNotMatched", not_matched, "string")
    on = spec.get("on")
    if on is not None:
        on = [on] if isinstance(on, str) else on
        if not isinstance(on, list) or not all(isinstance(f, str) for f in on):
            raise MongoError(51186, "$merge 'on' field must be either a string or an array of strings, but found "
                                    f"{type_name(spec['on'])}")
        if not on:
            raise MongoError(51187, "If explicitly specifying $merge 'on', must include at least one field")
        if len(set(on)) != len(on):
            raise MongoError(31465, f"Found a duplicate field in $merge 'on': {on}")
    let = spec.get("let")
    out = MergeSpec(target_db, coll, on, let, matched, not_matched)
    if let is not None:
        if not isinstance(let, dict):
            raise wrong_type("$merge.let", let, "object")
        if out.matched_mode != "pipeline":
            raise MongoError(51199, f"Cannot use 'let' variables with 'whenMatched: {matched}' mode")
    if (out.matched_mode, not_matched) not in _SUPPORTED:
        raise MongoError(51181, f"Combination of {{whenMatched: {matched}, whenNotMatched: {not_matched}}} "
                                "is not supported")
    return out


def resolve_on(spec: MergeSpec, shard_key: dict | None, indexes: list[dict] | None) -> list[str]:
    """The `on` fields: the default, or the given ones once a unique index is known to back them."""
    if spec.on is None:
        if not shard_key:
            return ["_id"]
        return list(dict.fromkeys([*shard_key, "_id"]))
    if shard_key and not set(shard_key) <= set(spec.on):
        raise MongoError(51190, "Cannot $merge into a sharded collection: the 'on' fields must include the shard "
                                f"key {dict(shard_key)}")
    if set(spec.on) != {"_id"} and not any(
            ix.get("unique") and set(ix["key"]) == set(spec.on) and "partialFilterExpression" not in ix
            for ix in indexes or ()):
        raise MongoError(51183, "Cannot find index to verify that join fields will be unique")
    return list(spec.on)


def _on_value(doc: dict, field: str) -> Any:
    value = get_path(doc, field)
    if value is MISSING or value is None or type(value) is list:
        raise MongoError(51132, f"$merge write error: 'on' field '{field}' cannot be missing, null, undefined or "
                                "an array")
    return value


def merge_writes(spec: MergeSpec, on: list[str], docs: Iterable[dict], variables: dict | None) -> Iterable[dict]:
    """The write commands (insert or update, unordered, BATCH results each) for `docs`."""
    mode = spec.matched_mode
    let_exprs = spec.let if spec.let is not None else {"new": "$$ROOT"}
    if mode == "pipeline":
        compiled = {}
        for name, e in let_exprs.items():
            if variables is not None:
                check_references(e, variables)
            compiled[name] = compile_expression(e)
    batch: list[dict] = []

    def command(items: list) -> dict:
        if mode == "fail":
            return {"insert": spec.coll, "documents": items, "ordered": False}
        return {"update": spec.coll, "updates": items, "ordered": False}

    for doc in docs:
        if "_id" not in doc and "_id" in on:  # (MergeProcessor::makeBatchObject)
            doc = {"_id": ObjectId(), **doc}
        if mode == "fail":
            batch.append(doc)
        else:
            st: dict[str, Any] = {"q": {f: _on_value(doc, f) for f in on}, "multi": False,
                                  "upsert": spec.when_not_matched == "insert"}
            if mode == "merge":
                st["u"] = {"$set": doc}
            elif mode == "replace":
                st["u"] = doc
            elif mode == "keepExisting":
                st["u"] = {"$setOnInsert": doc}
            else:
                st["u"] = spec.when_matched
                c = {}
                for name, f in compiled.items():
                    v = f(doc, variables)
                    if v is not MISSING:
                        c[name] = v
                st["c"] = c
                if st["upsert"]:
                    st["upsertSupplied"] = True
                    c.setdefault("new", doc)
            batch.append(st)
        if len(batch) >= BATCH:
            yield command(batch)
            batch = []
    if batch:
        yield command(batch)


def check_reply(spec: MergeSpec, cmd: dict, reply: dict) -> None:
    """Raise the command's error for a write batch's reply: its first write error, or (whenNotMatched
    fail) a result that matched nothing."""
    if reply.get("writeErrors"):
        raise MongoError.from_write_error(reply["writeErrors"][0])
    if spec.when_not_matched == "fail" and "updates" in cmd and reply.get("n", 0) < len(cmd["updates"]):
        raise MongoError(13113, "$merge could not find a matching document in the target collection for at least "
                                "one document in the source collection")


async def run_merge(node: Node, ctx: OpCtx, spec: MergeSpec, docs: Iterable[dict], variables: dict) -> None:
    """$merge on a node: the writes run through the insert and update commands' paths."""
    target = node.catalog.collection(spec.db, spec.coll)
    on = resolve_on(spec, target.shard_key if target is not None else None,
                    target.indexes if target is not None else None)
    for cmd in merge_writes(spec, on, docs, variables):
        if ctx.cmd.get("bypassDocumentValidation") is not None:
            cmd["bypassDocumentValidation"] = ctx.cmd["bypassDocumentValidation"]
        sub = OpCtx(spec.db, cmd, from_router=ctx.from_router, deadline=ctx.deadline)
        sub.variables = variables
        reply = await (cmd_insert if "insert" in cmd else cmd_update)(node, sub)
        if sub.op_time_key > ctx.op_time_key:
            ctx.op_time_key = sub.op_time_key
        check_reply(spec, cmd, reply)
