"""The 8.0 `bulkWrite` command on one node: many namespaces, one reply cursor of per-op results.

Request (src/mongo/db/commands/bulk_write.idl): `{bulkWrite: 1, ops: [...], nsInfo:
[{ns}, ...], ordered, errorsOnly, bypassDocumentValidation, let, cursor: {batchSize},
stmtId | stmtIds}`, run on `admin`.  Each op names its namespace by index into
`nsInfo`: `{insert: i, document}`, `{update: i, filter, updateMods, multi, upsert,
arrayFilters, hint, constants, collation, sort, upsertSupplied}`, `{delete: i,
filter, multi, hint, collation}`.  `ops` and `nsInfo` may arrive as OP_MSG document
sequences (the wire codec folds those into the body).

Execution follows the server's performWrites: consecutive inserts into one
namespace run as one insert batch, every update and delete on its own; each
op runs through the same write path as the insert/update/delete commands (one
oplog entry per change, retryable statements answered from the session table,
the open transaction's overlay); a time-series collection's ops run as its own
commands do, named by the collection or (from mongos, for sharded buckets) by
`system.buckets.<coll>` with `isTimeseriesNamespace: true` in its nsInfo entry.
An nsInfo entry's `collectionUUID` is the UUID its ops expect (each op checks it as
it acquires the collection, before a view is refused: a time-series collection never has
it): a mismatch is that op's error item (CollectionUUIDMismatch, collection_uuid.py),
not a command error.  An ordered bulkWrite stops at the first error; inside a
transaction any error stops it and aborts the transaction.

Reply: `{cursor: {id, firstBatch, ns: "admin.$cmd.bulkWrite"}, nErrors, nInserted,
nMatched, nModified, nUpserted, nDeleted, retriedStmtIds?, ok}`; each reply item is
`{ok, idx, [code, errmsg, ...error info], n, nModified?, upserted?: {index: 0, _id}}`
(BulkWriteReplyItem::serialize); with `errorsOnly` only the failed ops have one.
Items that do not fit the first batch (or `cursor.batchSize`) are served by getMore.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bson import Binary, Int64
from mongosim.oplog import bsonutil
from mongosim.oplog.error_codes import CODES
from mongosim.oplog.errors import MongoError
from mongosim.shardsim import views
from mongosim.shardsim.collection_uuid import check_collection_uuid, uuid_arg
from mongosim.shardsim.command_registry import command
from mongosim.shardsim.cursors import QueryCursor
from mongosim.shardsim.operation_context import OpCtx
from mongosim.shardsim.generic_args import GENERIC_ARGUMENTS
from mongosim.shardsim.query.fmt import bson_str
from mongosim.shardsim.query.idl_errors import wrong_type
from mongosim.shardsim.query.variables import for_command
from mongosim.shardsim.writes import cmd_delete, cmd_insert, cmd_update

if TYPE_CHECKING:
    from mongosim.shardsim.node import Node

CURSOR_NS = "admin.$cmd.bulkWrite"
WOULD_CHANGE_OWNING_SHARD = CODES["WouldChangeOwningShard"]
_KINDS = ("insert", "update", "delete")
_OP_FIELDS = {
    "insert": {"insert", "document"},
    "update": {"update", "filter", "sort", "multi", "updateMods", "upsert", "upsertSupplied", "arrayFilters", "hint",
               "constants", "collation", "sampleId", "$_allowShardKeyUpdatesWithoutFullShardKeyInQuery"},
    "delete": {"delete", "filter", "multi", "hint", "collation", "sampleId"},
}
_COMMAND_FIELDS = {"bulkWrite", "ops", "nsInfo", "cursor", "bypassDocumentValidation", "ordered", "stmtId", "stmtIds",
                   "let", "errorsOnly", "bypassEmptyTsReplacement", "$db"}
_SUMMARY = ("nErrors", "nInserted", "nMatched", "nModified", "nUpserted", "nDeleted")


# -- the request ------------------------------------------------------------------
@dataclass
class BulkOp:
    kind: str  # insert | update | delete
    ns_index: int
    spec: dict


@dataclass
class BulkRequest:
    ops: list[BulkOp]
    namespaces: list[str]
    ordered: bool = True
    errors_only: bool = False
    stmt_id: int | None = None
    stmt_ids: list | None = None
    uuids: list = field(default_factory=list)  # each nsInfo entry's collectionUUID (None without one)

    def stmt_id_of(self, index: int) -> int:
        """bulk_write_common::getStatementId."""
        if self.stmt_ids is not None:
            return int(self.stmt_ids[index])
        return (self.stmt_id or 0) + index


def _op_kind(op: Any) -> str:
    if not isinstance(op, dict):
        raise wrong_type("bulkWrite.ops", op, "object")
    first = next(iter(op), None)
    if first not in _KINDS:
        raise MongoError("FailedToParse", f"Unrecognized bulkWrite operation: {first!r}; an op must start "
                                          "with insert, update or delete")
    return first


def _check_op(kind: str, op: dict, n_namespaces: int) -> BulkOp:
    for k in op:
        if k not in _OP_FIELDS[kind]:
            raise MongoError(40415, f"BSON field 'bulkWrite.ops.{k}' is an unknown field.")
    idx = op[kind]
    if isinstance(idx, bool) or not isinstance(idx, (int, float)) or int(idx) != idx:
        raise wrong_type(f"bulkWrite.ops.{kind}", idx, "int")
    if idx < 0:
        raise MongoError(51024, f"BSON field '{kind}' value must be >= 0, actual value '{int(idx)}'")
    if kind == "insert":
        if "document" not in op:
            raise MongoError(40414, "BSON field 'bulkWrite.ops.document' is missing but a required field")
        if not isinstance(op["document"], dict):
            raise wrong_type("bulkWrite.ops.document", op["document"], "object")
    else:
        if "filter" not in op:
            raise MongoError(40414, "BSON field 'bulkWrite.ops.filter' is missing but a required field")
        if not isinstance(op["filter"], dict):
            raise wrong_type("bulkWrite.ops.filter", op["filter"], "object")
        if kind == "update" and "updateMods" not in op:
            raise MongoError(40414, "BSON field 'bulkWrite.ops.updateMods' is missing but a required field")
        for flag in ("multi", "upsert"):
            if flag in op and not isinstance(op[flag], bool):
                raise wrong_type(f"bulkWrite.ops.{flag}", op[flag], "bool")
    if int(idx) >= n_namespaces:
        raise MongoError("BadValue", f"BulkWrite ops entry {bson_str(op)} has an invalid nsInfo index.")
    return BulkOp(kind, int(idx), op)


def parse_request(cmd: dict) -> BulkRequest:
    """The server's IDL parse and bulk_write_common::validateRequest."""
    for k in cmd:
        if k not in _COMMAND_FIELDS and k not in GENERIC_ARGUMENTS:
            raise MongoError(40415, f"BSON field 'bulkWrite.{k}' is an unknown field.")
    for name in ("ops", "nsInfo"):
        if name not in cmd:
            raise MongoError(40414, f"BSON field 'bulkWrite.{name}' is missing but a required field")
        if not isinstance(cmd[name], list):
            raise wrong_type(f"bulkWrite.{name}", cmd[name], "array")
    ops, ns_info = cmd["ops"], cmd["nsInfo"]
    if not ops or len(ops) > bsonutil.MAX_WRITE_BATCH_SIZE:
        raise MongoError("InvalidLength", f"Write batch sizes must be between 1 and {bsonutil.MAX_WRITE_BATCH_SIZE}. "
                                          f"Got {len(ops)} operations.")
    for flag in ("ordered", "errorsOnly", "bypassDocumentValidation"):
        if flag in cmd and not isinstance(cmd[flag], bool):
            raise wrong_type(f"bulkWrite.{flag}", cmd[flag], "bool")
    if cmd.get("stmtId") is not None and cmd.get("stmtIds") is not None:
        raise MongoError("InvalidOptions", "May not specify both stmtId and stmtIds in bulkWrite command.")
    stmt_ids = cmd.get("stmtIds")
    if stmt_ids is not None and len(stmt_ids) != len(ops):
        raise MongoError("InvalidLength", f"Number of statement ids must match the number of batch entries. Got "
                                          f"{len(stmt_ids)} statement ids but {len(ops)} operations.")
    namespaces: list[str] = []
    uuids: list[Binary | None] = []
    for entry in ns_info:
        if not isinstance(entry, dict):
            raise wrong_type("bulkWrite.nsInfo", entry, "object")
        ns = entry.get("ns")
        if not isinstance(ns, str):
            raise MongoError(40414, "BSON field 'bulkWrite.nsInfo.ns' is missing but a required field") if ns is None \
                else wrong_type("bulkWrite.nsInfo.ns", ns, "string")
        db, _, coll = ns.partition(".")
        if not db or not coll or coll.startswith(".") or "$" in coll or "\x00" in ns \
                or any(c in db for c in '/\\. "$'):
            raise MongoError("InvalidNamespace", f"Invalid namespace specified for bulkWrite: '{ns}'")
        namespaces.append(ns)
        uuid = entry.get("collectionUUID")
        uuids.append(None if uuid is None else uuid_arg("bulkWrite.nsInfo.collectionUUID", uuid))
    parsed = [_check_op(_op_kind(op), op, len(namespaces)) for op in ops]
    return BulkRequest(parsed, namespaces, cmd.get("ordered", True), cmd.get("errorsOnly", False),
                       cmd.get("stmtId"), stmt_ids, uuids)


# -- the replies --------------------------------------------------------------------
def ok_item(idx: int, n: int, n_modified: int | None = None, upserted: Any = None, has_upsert: bool = False) -> dict:
    item: dict[str, Any] = {"ok": 1.0, "idx": idx, "n": n}
    if n_modified is not None:
        item["nModified"] = n_modified
    if has_upsert:
        item["upserted"] = {"index": 0, "_id": upserted}
    return item


def error_item(idx: int, err: dict | MongoError, update: bool = False) -> dict:
    """A failed op's reply item: `err` is a MongoError or a `writeErrors` element."""
    if isinstance(err, MongoError):
        err = err.to_write_error(idx)
    item: dict[str, Any] = {"ok": 0.0, "idx": idx, "code": err["code"], "errmsg": err.get("errmsg", "")}
    for k, v in err.items():
        if k not in ("index", "code", "errmsg", "codeName"):
            item[k] = v
    item["n"] = 0
    if update:
        item["nModified"] = 0
    return item


@dataclass
class Replies:
    """BulkWriteReplies: the items (unless errorsOnly hides a success), the summary, retried ids."""

    errors_only: bool
    items: list[dict] = field(default_factory=list)
    summary: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_SUMMARY, 0))
    retried: list[int] = field(default_factory=list)

    def add(self, kind: str, item: dict) -> None:
        if not item["ok"]:
            self.summary["nErrors"] += 1
            self.items.append(item)
            return
        if kind == "insert":
            self.summary["nInserted"] += item["n"]
        elif kind == "delete":
            self.summary["nDeleted"] += item["n"]
        else:
            self.summary["nModified"] += item.get("nModified", 0)
            if "upserted" in item:
                self.summary["nUpserted"] += 1
            else:
                self.summary["nMatched"] += item["n"]
        if not self.errors_only:
            self.items.append(item)


def cursor_reply(cursors: Any, replies: Replies, batch_size: int | None) -> dict:
    """The bulkWrite reply: the items that fit the first batch, the rest behind a cursor of
    `cursors` (the node's, or mongos's own)."""
    cur = QueryCursor(CURSOR_NS, iter(replies.items), eof_at=len(replies.items))  # (queued replies)
    first = cur.take(batch_size) if batch_size != 0 else []
    cid = 0 if cur.exhausted else cursors.register(cur)
    reply: dict[str, Any] = {"cursor": {"id": Int64(cid), "firstBatch": first, "ns": CURSOR_NS}}
    reply.update(replies.summary)
    if replies.retried:
        reply["retriedStmtIds"] = list(replies.retried)
    reply["ok"] = 1.0
    return reply


def batch_size_of(cmd: dict) -> int | None:
    cursor = cmd.get("cursor")
    if cursor is None:
        return None
    if not isinstance(cursor, dict):
        raise wrong_type("bulkWrite.cursor", cursor, "object")
    size = cursor.get("batchSize")
    if size is None:
        return None
    if isinstance(size, bool) or not isinstance(size, (int, float)):
        raise wrong_type("bulkWrite.cursor.batchSize", size, "long")
    if size < 0:
        raise MongoError(51024, f"BSON field 'batchSize' value must be >= 0, actual value '{int(size)}'")
    return int(size)


# -- execution on a node ------------------------------------------------------------------
def update_statement(op: dict) -> dict:
    """A bulkWrite update op as an `update` command statement."""
    st: dict[str, Any] = {"q": op["filter"], "u": op["updateMods"]}
    for src, dst in (("multi", "multi"), ("upsert", "upsert"), ("arrayFilters", "arrayFilters"), ("hint", "hint"),
                     ("constants", "c"), ("collation", "collation"), ("sort", "sort"),
                     ("upsertSupplied", "upsertSupplied")):
        if src in op:
            st[dst] = op[src]
    return st


def delete_statement(op: dict) -> dict:
    st: dict[str, Any] = {"q": op["filter"], "limit": 0 if op.get("multi") else 1}
    for k in ("hint", "collation"):
        if k in op:
            st[k] = op[k]
    return st


class _NodeBulkWrite:
    """One bulkWrite on a node: runs its ops through the write commands' handlers."""

    def __init__(self, node: Node, ctx: OpCtx, req: BulkRequest) -> None:
        self.node = node
        self.ctx = ctx
        self.req = req
        self.replies = Replies(req.errors_only)
        self.variables = for_command(node, ctx)
        self.retryable = ctx.txn is None and ctx.lsid is not None and ctx.txn_number is not None
        self.bypass = ctx.cmd.get("bypassDocumentValidation")
        # mongos's nsInfo names a sharded time-series collection by its buckets, `isTimeseriesNamespace`
        self.timeseries_ns = {e["ns"] for e in ctx.cmd.get("nsInfo") or () if isinstance(e, dict)
                              and e.get("isTimeseriesNamespace") is True and isinstance(e.get("ns"), str)}

    def _executed(self, stmt_id: int) -> bool:
        if not self.retryable:
            return False
        state = self.node.sessions.state(self.ctx.lsid)
        return state.txn_number == self.ctx.txn_number and stmt_id in state.executed

    async def _run(self, handler: Any, db: str, sub: dict, uuid: Binary | None = None) -> dict:
        ctx = self.ctx
        if self.bypass is not None:
            sub["bypassDocumentValidation"] = self.bypass
        name = next(iter(sub))
        ts_name = sub[name]
        if f"{db}.{ts_name}" in self.timeseries_ns and ts_name.startswith(views.timeseries.BUCKETS):
            timeseries, ts_name = True, ts_name[len(views.timeseries.BUCKETS):]  # (as node._dispatch does)
            check_collection_uuid(self.node, db, ts_name, None, uuid)  # (the time-series view has no UUID)
        else:
            # the nsInfo entry's collectionUUID: the op's acquisition expects it (before a view is refused)
            check_collection_uuid(self.node, db, ts_name, self.node.catalog.collection(db, ts_name), uuid)
            view = views.definition(self.node, db, sub[name])
            timeseries = view is not None and views.timeseries.options_of(self.node, db, view) is not None
            if view is not None and not timeseries:
                raise views.not_a_collection(db, sub[name])
        if ctx.txn is None and self.node.prepared_namespaces:
            await self.node._wait_for_prepared(db, sub[name], ctx.deadline)
        sub_ctx = OpCtx(db, sub, lsid=ctx.lsid, txn_number=ctx.txn_number, from_router=ctx.from_router,
                        txn=ctx.txn, deadline=ctx.deadline)
        sub_ctx.variables = self.variables
        try:
            if timeseries:  # (a time-series collection's ops run as its own commands do)
                reply = await views.run_on_timeseries(self.node, sub_ctx, name, ts_name)
            else:
                reply = handler(self.node, sub_ctx)
            if hasattr(reply, "__await__"):
                reply = await reply
        finally:
            if sub_ctx.op_time_key > ctx.op_time_key:
                ctx.op_time_key = sub_ctx.op_time_key
        return reply

    def _stmt_ids(self, idxs: list[int]) -> dict:
        if not self.retryable and self.ctx.txn is None:
            return {}
        return {"stmtIds": [self.req.stmt_id_of(i) for i in idxs]}

    async def run(self) -> Replies:
        ops = self.req.ops
        i = 0
        while i < len(ops):
            op = ops[i]
            if op.kind == "insert":
                j = i + 1
                while j < len(ops) and ops[j].kind == "insert" and ops[j].ns_index == op.ns_index:
                    j += 1
                go_on = await self._inserts(list(range(i, j)))
                i = j
            else:
                go_on = await self._single(i, op)
                i += 1
            if not go_on:
                break
        return self.replies

    def _stop(self, errors: list) -> bool:
        """Continue after these errors? Not when ordered, nor inside a transaction (which aborts)."""
        if not errors:
            return True
        if self.ctx.txn is not None:
            if any(e.get("code") != WOULD_CHANGE_OWNING_SHARD for e in errors):
                self.ctx.txn.abort(self.ctx)
            return False
        return not self.req.ordered

    async def _inserts(self, idxs: list[int]) -> bool:
        ns = self.req.namespaces[self.req.ops[idxs[0]].ns_index]
        db, coll = ns.split(".", 1)
        ids = self._stmt_ids(idxs)
        retried = [s for s in ids.get("stmtIds", ()) if self.retryable and self._executed(s)]
        sub = {"insert": coll, "documents": [self.req.ops[i].spec["document"] for i in idxs],
               "ordered": self.req.ordered or self.ctx.txn is not None, **ids}
        try:
            reply = await self._run(cmd_insert, db, sub, self.req.uuids[self.req.ops[idxs[0]].ns_index])
        except MongoError as err:
            if self.ctx.txn is not None and err.code == 112:
                raise
            reply = {"writeErrors": [err.to_write_error(k) for k in range(1 if sub["ordered"] else len(idxs))]}
        self.replies.retried.extend(retried)
        errors = {e["index"]: e for e in reply.get("writeErrors", ())}
        stop_at = min(errors) if errors and (self.req.ordered or self.ctx.txn is not None) else None
        for k, idx in enumerate(idxs):
            if stop_at is not None and k > stop_at:
                break
            if k in errors:
                self.replies.add("insert", error_item(idx, errors[k]))
            else:
                self.replies.add("insert", ok_item(idx, 1))
        return self._stop(list(errors.values()))

    async def _single(self, idx: int, op: BulkOp) -> bool:
        ns = self.req.namespaces[op.ns_index]
        db, coll = ns.split(".", 1)
        update = op.kind == "update"
        try:
            if op.spec.get("multi") and self.retryable:
                raise MongoError("InvalidOptions", "Cannot use retryable writes with multi=true")
            ids = self._stmt_ids([idx])
            retried = bool(ids) and self._executed(ids["stmtIds"][0])
            uuid = self.req.uuids[op.ns_index]
            if update:
                reply = await self._run(cmd_update, db, {"update": coll, "updates": [update_statement(op.spec)],
                                                         "ordered": True, **ids}, uuid)
            else:
                reply = await self._run(cmd_delete, db, {"delete": coll, "deletes": [delete_statement(op.spec)],
                                                         "ordered": True, **ids}, uuid)
        except MongoError as err:
            if self.ctx.txn is not None and err.code == 112:
                raise  # a write conflict ends the transaction: a command error
            self.replies.add(op.kind, error_item(idx, err, update))
            return self._stop([err.to_write_error(idx)])
        errors = reply.get("writeErrors") or []
        if errors:
            self.replies.add(op.kind, error_item(idx, errors[0], update))
            return self._stop(errors)
        if retried:
            self.replies.retried.append(ids["stmtIds"][0])
        if update:
            upserted = reply.get("upserted") or []
            self.replies.add("update", ok_item(idx, reply.get("n", 0), reply.get("nModified", 0),
                                               upserted[0]["_id"] if upserted else None, bool(upserted)))
        else:
            self.replies.add("delete", ok_item(idx, reply.get("n", 0)))
        return True


@command("bulkWrite")
async def cmd_bulk_write(node: Node, ctx: OpCtx) -> dict:
    if ctx.db != "admin":
        raise MongoError("Unauthorized", "bulkWrite may only be run against the admin database.")
    req = parse_request(ctx.cmd)
    batch_size = batch_size_of(ctx.cmd)
    replies = await _NodeBulkWrite(node, ctx, req).run()
    return cursor_reply(node.cursors, replies, batch_size)
