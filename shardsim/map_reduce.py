"""mapReduce: the command's shape, on a deployment without JavaScript (shardsim.script_engine).

8.0 runs mapReduce as an aggregation whose first stage emits through the
script engine, so on a deployment without one a mapReduce fails with 31246 at
its first input document, and succeeds over an empty input.  The command is
parsed as MapReduceCommandRequest: `map`, `reduce` and `out` are required;
`out` is `{inline: 1}`, a collection name, or `{replace | merge | reduce:
<coll>, db?}`.  The reply: `{results: [...]}` inline, else `{result: <coll>}`
(`{result: {db, collection}}` when `out` names a database).  An `out`
collection is created (or, with `replace`, emptied) as the server's final
`$out`/`$merge` would.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bson import Code

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.command_registry import command
from mongosim.shardsim.create_collection import check_namespace, ensure_collection
from mongosim.shardsim.operation_context import OpCtx
from mongosim.shardsim.query.matcher import Matcher
from mongosim.shardsim.script_engine import emit_refused
from mongosim.shardsim.writes import WriteSession, delete_document, matching_documents

if TYPE_CHECKING:
    from mongosim.shardsim.node import Node

FIELDS = frozenset({"mapReduce", "mapreduce", "map", "reduce", "out", "query", "sort", "limit", "finalize", "scope",
                    "jsMode", "verbose", "bypassDocumentValidation", "collation", "writeConcern", "readConcern",
                    "maxTimeMS", "comment", "lsid", "txnNumber", "$db", "$clusterTime", "$readPreference",
                    "apiVersion", "apiStrict", "apiDeprecationErrors", "autocommit", "startTransaction", "fromMigrate"})
OUT_MODES = ("inline", "replace", "merge", "reduce")


def parse(cmd: dict) -> tuple[str | None, str | None, str]:
    """(output db or None, output collection or None for inline, mode)."""
    for key in cmd:
        if key not in FIELDS:
            raise MongoError(40415, f"BSON field 'MapReduceCommandRequest.{key}' is an unknown field.")
    for key in ("map", "reduce", "out"):
        if key not in cmd:
            raise MongoError(40414, f"BSON field 'MapReduceCommandRequest.{key}' is missing but a required field")
    for key in ("map", "reduce", "finalize"):
        if key in cmd and not isinstance(cmd[key], (str, Code)) and not (key == "finalize" and cmd[key] is None):
            raise MongoError("TypeMismatch", f"BSON field 'MapReduceCommandRequest.{key}' is the wrong type, "
                                             "expected types '[javascript, string]'")
    if "query" in cmd and not isinstance(cmd["query"], dict):
        raise MongoError("TypeMismatch", "BSON field 'MapReduceCommandRequest.query' is the wrong type, expected "
                                         "type 'object'")
    out = cmd["out"]
    if isinstance(out, str):
        return None, out, "replace"
    if not isinstance(out, dict):
        raise MongoError("TypeMismatch", "'out' must be either a string or an object")
    modes = [m for m in OUT_MODES if m in out]
    if len(modes) != 1:
        raise MongoError("BadValue", "'out' requires exactly one of 'inline', 'replace', 'merge' or 'reduce'")
    mode = modes[0]
    if mode == "inline":
        return None, None, mode
    if not isinstance(out[mode], str):
        raise MongoError("TypeMismatch", f"'out.{mode}' must be a string")
    db = out.get("db")
    if db is not None and not isinstance(db, str):
        raise MongoError("TypeMismatch", "'out.db' must be a string")
    return db, out[mode], mode


def input_documents(node: Node, ctx: OpCtx, name: str) -> list[dict]:
    cmd = ctx.cmd
    q = cmd.get("query") or {}
    docs = list(matching_documents(node.catalog.collection(ctx.db, name), q, Matcher(q), ctx.view))
    limit = cmd.get("limit")
    return docs[: int(limit)] if limit else docs


def reply_for(db: str, out_db: str | None, out_coll: str | None, results: list) -> dict:
    if out_coll is None:
        return {"results": results, "ok": 1.0}
    if out_db is not None:
        return {"result": {"db": out_db, "collection": out_coll}, "ok": 1.0}
    return {"result": out_coll, "ok": 1.0}


@command("mapReduce", "mapreduce")
def cmd_map_reduce(node: Node, ctx: OpCtx) -> dict:
    first = next(iter(ctx.cmd))
    name = check_namespace(ctx.db, ctx.cmd[first])
    out_db, out_coll, mode = parse(ctx.cmd)
    if input_documents(node, ctx, name):
        raise emit_refused()  # the map function runs for the first document
    if out_coll is not None:
        target_db = out_db or ctx.db
        check_namespace(target_db, out_coll)
        coll = ensure_collection(node, ctx, target_db, out_coll)
        if mode == "replace":
            ws = WriteSession(node, OpCtx(target_db, {}))
            for doc in list(coll.scan()):
                delete_document(node, ctx, coll, doc, ws, 0)
    return reply_for(ctx.db, out_db, out_coll, [])
