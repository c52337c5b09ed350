"""$out on a node: write an aggregation's results into a temporary collection, then rename it over the target.

As the server's $out (document_source_out.cpp, and the process interfaces'
createTempCollection / renameIfOptionsAndIndexesHaveNotChanged) does, in this order:

1. on a shard (the command came from mongos) the temporary namespace is first
   recorded in `config.agg_temp_collections`, which a shard's step-up uses to
   drop leftovers; a replica set marks the collection `temp: true` instead;
2. `create` of `<db>.tmp.agg_out.<UUID>` with the target's options (an entry
   on `<db>.$cmd`), then the target's indexes (`createIndexes`, the collection
   being empty);
3. the results inserted into it (one `i` entry each);
4. `renameCollection` of the temporary collection over the target with
   `dropTarget` (with the old target's UUID when there is one), so readers switch from the
   old contents to the new at once; then the record in
   `config.agg_temp_collections` is deleted.

A change stream therefore reports what the server's would: inserts into the
temporary collection and a `rename` to the target (whole-database streams),
`create` with showExpandedEvents.  If anything fails, the temporary collection
is dropped and the target is left as it was.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, Iterable

from mongosim.oplog import bsonutil
from mongosim.oplog.errors import MongoError
from mongosim.shardsim.create_collection import check_namespace, create_collection
from mongosim.shardsim.ddl import cmd_create_indexes, drop_collection
from mongosim.shardsim.rename_collection import cmd_rename
from mongosim.shardsim.operation_context import OpCtx
from mongosim.shardsim.query.idl_errors import wrong_type
from mongosim.shardsim.query.values import type_name
from mongosim.shardsim.writes import cmd_delete, cmd_insert

if TYPE_CHECKING:
    from mongosim.shardsim.node import Node

TMP_PREFIX = "tmp.agg_out."
AGG_TEMP_COLLECTIONS = ("config", "agg_temp_collections")
_INTERNAL_DBS = ("admin", "config", "local")


def parse_out(spec: Any, db: str) -> tuple[str, str]:
    """The target namespace of `{$out: "coll"}` or `{$out: {db, coll}}`."""
    if isinstance(spec, str):
        target_db, coll = db, spec
    elif isinstance(spec, dict):
        for k in spec:
            if k not in ("db", "coll", "timeseries"):
                raise MongoError(40415, f"BSON field '$out.{k}' is an unknown field.")
        for k in ("db", "coll"):
            if k not in spec:
                raise MongoError(40414, f"BSON field '$out.{k}' is missing but a required field")
            if not isinstance(spec[k], str):
                raise wrong_type(f"$out.{k}", spec[k], "string")
        if "timeseries" in spec:
            raise MongoError("NotImplemented", "$out to a time-series collection is not supported by mongosim")
        target_db, coll = spec["db"], spec["coll"]
    else:
        raise MongoError(16990, f"$out only supports a string or object argument, but found {type_name(spec)}")
    check_target(target_db, coll, {"invalid": ("InvalidNamespace", f"Invalid $out target namespace, {target_db}.{coll}"),
                                   "special": (17385, f"Can't $out to special collection: {coll}"),
                                   "internal": (31321, f"Can't $out to internal database: {target_db}")})
    return target_db, coll


def check_target(db: str, coll: str, errors: dict[str, tuple[Any, str]]) -> None:
    """Raise the stage's error (`errors[problem]`: code, message) when `db.coll` cannot be
    written by $out or $merge: an "invalid" namespace, a "special" (system) collection, an
    "internal" database."""
    try:
        check_namespace(db, coll)
        problem = "special" if coll.startswith("system.") else "internal" if db in _INTERNAL_DBS else None
    except MongoError:
        problem = "invalid"
    if problem is not None:
        raise MongoError(*errors[problem])


def _sub(ctx: OpCtx, db: str, cmd: dict) -> OpCtx:
    """The context of one step, run as the server runs them: a command of its own."""
    return OpCtx(db, cmd, from_router=ctx.from_router, deadline=ctx.deadline)


def _batches(docs: Iterable[dict]) -> Iterable[list[dict]]:
    """The results in insert batches (at most maxWriteBatchSize documents, about 16 MB)."""
    batch: list[dict] = []
    size = 0
    for doc in docs:
        n = len(bsonutil.encode(doc)) if type(doc) is dict else 0
        if batch and (len(batch) >= bsonutil.MAX_WRITE_BATCH_SIZE or size + n > bsonutil.MAX_BSON_OBJECT_SIZE):
            yield batch
            batch, size = [], 0
        batch.append(doc)
        size += n
    if batch:
        yield batch


async def run_out(node: Node, ctx: OpCtx, db: str, coll: str, docs: Iterable[dict]) -> None:
    """Replace `db.coll` by `docs`, through a temporary collection renamed over it."""
    target = node.catalog.collection(db, coll)
    if target is not None and target.shard_key:
        raise MongoError(28769, f"{db}.{coll} cannot be sharded")
    options = dict(target.options) if target is not None else {}
    options.pop("temp", None)
    if options.get("capped"):
        raise MongoError(17152, f"namespace '{db}.{coll}' is capped so it can't be used for $out")
    indexes = [dict(s) for s in target.indexes if s["name"] != "_id_"] if target is not None else []
    tmp = TMP_PREFIX + str(uuid.uuid4())
    on_shard = ctx.from_router
    steps: list[OpCtx] = []

    async def step(handler: Any, step_db: str, cmd: dict) -> dict:
        sub = _sub(ctx, step_db, cmd)
        steps.append(sub)
        reply = handler(node, sub)
        if hasattr(reply, "__await__"):
            reply = await reply
        if reply.get("writeErrors"):
            raise MongoError.from_write_error(reply["writeErrors"][0])
        return reply

    if on_shard:
        await step(cmd_insert, AGG_TEMP_COLLECTIONS[0],
                   {"insert": AGG_TEMP_COLLECTIONS[1], "documents": [{"_id": f"{db}.{tmp}"}]})
    try:
        created = _sub(ctx, db, {"create": tmp})
        steps.append(created)
        create_collection(node, created, db, tmp, options if on_shard else {"temp": True, **options})
        if indexes:
            await step(cmd_create_indexes, db, {"createIndexes": tmp, "indexes": indexes})
        for batch in _batches(docs):
            insert = {"insert": tmp, "documents": batch, "ordered": True}
            if ctx.cmd.get("bypassDocumentValidation"):
                insert["bypassDocumentValidation"] = True
            await step(cmd_insert, db, insert)
        await step(cmd_rename, "admin", {"renameCollection": f"{db}.{tmp}", "to": f"{db}.{coll}",
                                         "stayTemp": False, "dropTarget": True})
    except MongoError:
        left = node.catalog.collection(db, tmp)
        if left is not None:
            drop_collection(node, _sub(ctx, db, {"drop": tmp}), left)
        raise
    finally:
        if on_shard:
            await step(cmd_delete, AGG_TEMP_COLLECTIONS[0],
                       {"delete": AGG_TEMP_COLLECTIONS[1], "deletes": [{"q": {"_id": f"{db}.{tmp}"}, "limit": 1}]})
        for sub in steps:
            if sub.op_time_key > ctx.op_time_key:
                ctx.op_time_key = sub.op_time_key
