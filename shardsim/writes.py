"""The write path: insert, update, delete and findAndModify on one node.

Each changed document appends exactly the oplog entry the server writes
(see `oplog.entry`): inserts `{op: "i", o: doc, o2: documentKey}`, delta
updates `{op: "u", o: {$v: 2, diff}, o2: documentKey}`, replacements
`{op: "u", o: newDoc, o2: documentKey}`, deletes `{op: "d", o: documentKey}`.
A no-op update writes nothing.  Retryable writes add `lsid, txnNumber,
stmtId, prevOpTime`; a retried statement is answered from the session table.
Collections with `changeStreamPreAndPostImages` store the pre-image of every
update, replace and delete under `{nsUUID, ts, applyOpsIndex}`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Iterator

from bson import Int64, ObjectId
from mongosim.oplog import bsonutil
from mongosim.oplog import entry as E
from mongosim.oplog.errors import MongoError
from mongosim.oplog.oplog import EntryTooLarge
from mongosim.shardsim import capped
from mongosim.shardsim.catalog import Collection
from mongosim.shardsim import get_executor
from mongosim.shardsim.command_registry import command
from mongosim.shardsim.create_collection import check_namespace, ensure_collection
from mongosim.shardsim.document_validation import check_insert, check_update
from mongosim.shardsim.fail_point import ON_PRIMARY_TRANSACTIONAL_WRITE
from mongosim.shardsim.insert_batch import try_insert_batch
from mongosim.shardsim.operation_context import OpCtx
from mongosim.shardsim.query.matcher import Matcher
from mongosim.shardsim.query.update import (
    apply_update,
    check_id_value,
    classify_update,
    parse_update,
    upsert_seed,
)
from mongosim.shardsim.collation import command_collator, statement_collator
from mongosim.shardsim.query.values import hashable
from mongosim.shardsim.query.variables import for_command
from mongosim.shardsim.sessions import lsid_with_uid, statement_result

if TYPE_CHECKING:
    from mongosim.shardsim.node import Node


# -- helpers shared by the write commands ----------------------------------------------
class WriteSession:
    """How one write command reads and changes documents.

    Outside a transaction: committed data, one oplog entry per change, and the
    retryable-write bookkeeping (no-op without txnNumber).  Inside a
    transaction (`ctx.txn`): the transaction's overlay, and operations buffered
    for its applyOps entry.
    """

    def __init__(self, node: Node, ctx: OpCtx) -> None:
        self.node = node
        self.ctx = ctx
        self.state = None
        self.txn = ctx.txn
        self.stmt_ids = ctx.cmd.get("stmtIds")
        self.from_migrate = bool(ctx.cmd.get("fromMigrate")) and ctx.from_router
        self._lsid: dict | None = None  # the lsid with its uid, computed once per command
        self._txn_number: Int64 | None = None
        if self.txn is None and ctx.lsid is not None and ctx.txn_number is not None:
            self.state = node.sessions.begin(ctx.lsid, ctx.txn_number)

    # -- the view ------------------------------------------------------------------
    def get(self, coll: Collection, id_value: Any) -> dict | None:
        return self.txn.get(coll, id_value) if self.txn is not None else coll.get(id_value)

    def scan(self, coll: Collection):
        return self.txn.scan(coll) if self.txn is not None else coll.scan()

    def fetch(self, coll: Collection, idk: Any) -> dict | None:
        return self.txn.fetch(coll, idk) if self.txn is not None else coll.docs.get(idk)

    def changed_ids(self, coll: Collection) -> Any:
        return self.txn.changed_ids(coll) if self.txn is not None else ()

    def insert(self, coll: Collection, doc: dict) -> None:
        self.txn.insert(coll, doc) if self.txn is not None else coll.insert(doc)

    def replace(self, coll: Collection, old: dict, new: dict) -> None:
        self.txn.replace(coll, old, new) if self.txn is not None else coll.replace(old, new)

    def delete(self, coll: Collection, doc: dict) -> None:
        self.txn.delete(coll, doc) if self.txn is not None else coll.delete(doc)

    async def settled_targets(self, db: str, name: str, select: Any) -> tuple[Collection | None, list[dict]]:
        """The collection and the documents a statement writes (`select(coll)`), once no open
        transaction holds any of them: after a wait they are matched again."""
        while True:
            coll = self.node.catalog.collection(db, name)
            targets = select(coll)
            if not await self.wait_unlocked(coll, targets):
                return coll, targets

    async def wait_unlocked(self, coll: Collection | None, docs: Iterable[dict]) -> bool:
        """Outside a transaction, a write to documents an open transaction has written waits for
        that transaction to end, as mongod's write-conflict retry loop does.  True if it waited:
        the caller matches its documents again (they may have changed, or gone)."""
        locks = self.node.txn_locks
        if self.txn is not None or coll is None or not locks:
            return False
        ns = coll.ns
        docs = list(docs)

        def free() -> bool:
            return not any((ns, hashable(d["_id"])) in locks for d in docs)

        if free():
            return False
        await self.node.park_until(free, self.ctx.deadline)
        return True

    def pre_image(self, coll: Collection, pre: dict) -> None:
        if self.txn is not None:
            self.txn.pre_image(coll, pre)
        else:
            store_pre_image(self.node, coll, self.ctx, pre)

    def stmt_id(self, index: int) -> int | None:
        if self.state is None:
            return None
        if self.stmt_ids is not None:
            return int(self.stmt_ids[index])
        return int(self.ctx.cmd.get("stmtId", 0)) + index

    def already(self, index: int, find_and_modify: bool = False) -> Any:
        """The saved result of statement `index` if it already ran (else None)."""
        if self.state is None:
            return None
        saved = self.state.executed.get(self.stmt_id(index))
        return statement_result(saved, find_and_modify) if saved is not None else None

    def before_write(self) -> None:
        """A retryable write is about to change a document: the onPrimaryTransactionalWrite failpoint
        may fail it before it commits (failBeforeCommitExceptionCode) and close the client's
        connection (closeConnection, default true: after the command, which keeps its writes)."""
        if self.state is None or not self.node.failpoints:
            return
        fp = self.node.failpoints.get(ON_PRIMARY_TRANSACTIONAL_WRITE)
        if fp is None or not fp.hit():
            return
        if fp.data.get("closeConnection", True):
            self.ctx.close_connection = True
        code = fp.data.get("failBeforeCommitExceptionCode")
        if code is not None:
            raise MongoError(int(code), "Failing write for test due to failpoint onPrimaryTransactionalWrite")

    def log(self, op: dict, index: int, result: Any = True) -> None:
        if self.txn is not None:
            self.txn.log(op)
            return
        fields: dict[str, Any] = {"from_migrate": self.from_migrate}
        if self.state is not None:
            if self._lsid is None:
                self._lsid = lsid_with_uid(self.ctx.lsid)
            if self._txn_number is None:
                self._txn_number = Int64(self.ctx.txn_number)  # built once per command, not per statement
            fields = {
                "lsid": self._lsid,
                "txn_number": self._txn_number,
                "stmt_id": self.stmt_id(index),
                "prev_op_time": self.node.sessions.prev_op_time(self.state, self.node.op_time),
            }
        self.node.log(op, self.ctx, **fields)
        if self.state is not None:
            self.state.last_write_key = self.ctx.op_time_key
            self.state.executed[self.stmt_id(index)] = result


def store_pre_image(node: Node, coll: Collection, ctx: OpCtx, pre: dict, apply_ops_index: int = 0) -> None:
    """Keep the pre-image of the write just logged (when the collection asks for it)."""
    opt = coll.options.get("changeStreamPreAndPostImages")
    if isinstance(opt, dict) and opt.get("enabled"):
        node.preimages[(bytes(coll.uuid), ctx.op_time_key, apply_ops_index)] = pre


def _check_document(doc: Any) -> dict:
    if not isinstance(doc, dict):
        raise MongoError("TypeMismatch", "document to insert must be an object")
    if "_id" in doc:
        check_id_value(doc["_id"])
    return doc


def prepare_insert(doc: dict) -> dict:
    """Validate a document and give it an `_id` (first) if it has none."""
    _check_document(doc)
    if "_id" not in doc:
        doc = {"_id": ObjectId(), **doc}
    return doc  # (its size is checked on the oplog entry it becomes: insert_one)


def _too_large(doc: dict) -> MongoError:
    """fixDocumentForInsert's refusal of a document over 16 MiB (BadValue, as the server says)."""
    size = len(bsonutil.encode(doc))
    return MongoError("BadValue",
                      f"object to insert too large. size in bytes: {size}, max size: {bsonutil.MAX_BSON_OBJECT_SIZE}")


def insert_one(node: Node, ctx: OpCtx, coll: Collection, doc: dict, ws: WriteSession, index: int) -> None:
    if coll.validator is not None:
        check_insert(coll.validator, ctx.cmd, doc, ws.from_migrate)
    op = E.insert_op(coll.ns, coll.uuid, doc, coll.document_key(doc))
    if ws.txn is not None:
        if coll.capped is not None:
            capped.refuse_in_transaction(coll)
        if len(bsonutil.encode(doc)) > bsonutil.MAX_BSON_OBJECT_SIZE:
            raise _too_large(doc)
        ws.insert(coll, doc)
        ws.log(op, index)
        return
    coll.check_insert(doc)  # DuplicateKey before anything is written
    ws.before_write()
    try:
        ws.log(op, index)  # the entry is encoded once; too large -> nothing written
    except EntryTooLarge:
        raise _too_large(doc) from None
    coll.insert(doc, checked=True)
    if coll.capped is not None:
        capped.after_insert(node, ctx, coll, doc, hashable(doc["_id"]))


def _write_concern_reply(reply: dict, errors: list[dict]) -> dict:
    if errors:
        reply["writeErrors"] = errors
    reply["ok"] = 1.0
    return reply


class WriteErrors:
    """The `writeErrors` of a write command's statements, gathered as the server's write loop does
    (write_ops_exec.cpp, handleError): a statement that fails leaves its error at its index and the
    command goes on to the next one, unless it is `ordered` (the default), which stops at the first.
    A WriteConflict (112) inside a transaction is the command's error, not a statement's: it aborts
    the transaction.  Any other exception is the command's too.

        errors = WriteErrors(ctx, ws)
        for i, st in errors.statements(stmts):
            with errors.statement(i):
                ...  # run statement i
        return _write_concern_reply(reply, errors.errors)
    """

    __slots__ = ("errors", "_ordered", "_txn", "_index")

    def __init__(self, ctx: OpCtx, ws: WriteSession) -> None:
        self.errors: list[dict] = []
        self._ordered = ctx.cmd.get("ordered", True)
        self._txn = ws.txn
        self._index = 0

    def statements(self, stmts: Iterable[Any]) -> Iterator[tuple[int, Any]]:
        """(index, statement) of each statement to run: none after an error when ordered."""
        for i, st in enumerate(stmts):
            if self.errors and self._ordered:
                return
            yield i, st

    def statement(self, index: int) -> WriteErrors:
        """A context for running statement `index`: a MongoError it raises becomes its write error."""
        self._index = index
        return self

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, err: BaseException | None, tb: Any) -> bool:
        if not isinstance(err, MongoError) or (self._txn is not None and err.code == 112):
            return False
        self.errors.append(err.to_write_error(self._index))
        return True


# -- insert -------------------------------------------------------------------------
@command("insert")
async def cmd_insert(node: Node, ctx: OpCtx) -> dict:
    cmd = ctx.cmd
    name = check_namespace(ctx.db, cmd["insert"])
    docs = cmd.get("documents")
    if not isinstance(docs, list):
        raise MongoError("TypeMismatch" if docs is not None else "FailedToParse",
                         "BSON field 'insert.documents' is missing but a required field" if docs is None
                         else "BSON field 'insert.documents' is the wrong type, expected type 'array'")
    if len(docs) > bsonutil.MAX_WRITE_BATCH_SIZE:
        raise MongoError("InvalidLength", f"Write batch sizes must be between 1 and {bsonutil.MAX_WRITE_BATCH_SIZE}. Got {len(docs)} operations.")
    ws = WriteSession(node, ctx)
    if try_insert_batch(node, ctx, ws, ctx.db, name, docs):
        return _write_concern_reply({"n": len(docs)}, [])
    coll = None
    n = 0
    errors = WriteErrors(ctx, ws)
    for i, doc in errors.statements(docs):
        with errors.statement(i):
            if ws.already(i) is not None:
                n += 1
                continue
            doc = prepare_insert(doc)
            if coll is None:
                coll = ensure_collection(node, ctx, ctx.db, name)
            await ws.wait_unlocked(coll, (doc,))  # an _id a transaction inserted: wait for its outcome
            insert_one(node, ctx, coll, doc, ws, i)
            n += 1
    return _write_concern_reply({"n": n}, errors.errors)


# -- update -------------------------------------------------------------------------
def _id_equality(q: dict) -> Any:
    """The `_id` value when the filter is exactly `{_id: <scalar>}` (fast path)."""
    if len(q) == 1 and "_id" in q:
        v = q["_id"]
        if not isinstance(v, (dict, list)) and not hasattr(v, "pattern"):
            return v
    return _NO
    

_NO = object()


def matching_documents(coll: Collection | None, q: dict, matcher: Matcher | None = None,
                       view: "WriteSession | Any | None" = None, *, hint: Any = None, limit: int | None = None,
                       sort: dict | None = None, collator: Any = None) -> Iterable[dict]:
    """Documents of `coll` matching `q`, as `view` (a transaction, or committed data) sees them
    (planned like a find: an index serves the filter and the sort when one can; `matcher` was compiled
    with `collator`, the statement's collation)."""
    if coll is None:
        return []
    if hint is None and sort is None:
        idv = _id_equality(q)
        if idv is not _NO and (collator is None or type(idv) is not str):
            d = view.get(coll, idv) if view is not None else coll.get(idv)
            return [d] if d is not None else []
    return get_executor.matching(coll, q, matcher, view, hint=hint, limit=limit, sort=sort, collator=collator)


def first_matching(coll: Collection | None, q: dict, matcher: Matcher, view: Any, limit: int | None,
                   sort: dict | None = None, hint: Any = None, collator: Any = None) -> list[dict]:
    """The documents a statement writes: those matching `q`, in `sort` order when given, at most `limit`
    (planned: an index serves the filter and the order when one can; `hint` picks it)."""
    if coll is None:
        if sort:
            from mongosim.shardsim.query.sorting import sort_key_fn

            sort_key_fn(sort)  # (a bad sort is an error even with nothing to sort)
        return []
    return list(matching_documents(coll, q, matcher, view, hint=hint, limit=limit, sort=sort or None,
                                   collator=collator))


def statement_variables(variables: dict, st: dict, update: Any) -> dict:
    """An update statement's variables: the command's, and its constants `c` (pipeline updates only)."""
    constants = st.get("c")
    if constants is None:
        return variables
    if not isinstance(constants, dict):
        raise MongoError("TypeMismatch", "BSON field 'update.updates.c' is the wrong type, expected type 'object'")
    if classify_update(update) != "pipeline":
        raise MongoError(51198, "Constant values may only be specified for pipeline updates")
    return {**variables, **constants}


def check_shard_key_change(node: Node, ctx: OpCtx, coll: Collection, old: dict, new: dict, multi: bool) -> None:
    """An update that changes a document's shard-key value (the server's update stage): never in
    a multi-update; only retryable or in a transaction; and if the new value belongs to another
    shard, nothing is written here — WouldChangeOwningShard tells mongos to move the document."""
    if not coll.shard_key or coll.shard_key_bytes(old) == coll.shard_key_bytes(new):
        return
    if multi:
        raise MongoError("InvalidOptions", "Multi-update operations are not allowed when updating the shard key field.")
    if ctx.txn is None and ctx.txn_number is None:
        raise MongoError("IllegalOperation", "Must run update to shard key field in a multi-statement transaction "
                                             "or with retryWrites: true.")
    if node.owns is not None and not node.owns(coll.ns, new):
        raise MongoError("WouldChangeOwningShard", "This update would cause the doc to change owning shards",
                         preImage=old, postImage=new, shouldUpsert=False)


def update_document(node: Node, ctx: OpCtx, coll: Collection, doc: dict, update: Any, ws: WriteSession, index: int,
                    array_filters: list | None = None, matcher: Matcher | None = None,
                    multi: bool = False, variables: dict | None = None) -> dict | None:
    """Apply `update` to `doc`; log and store it.  Returns the new doc, or None if no-op."""
    position = None
    if matcher is not None and isinstance(update, dict) and classify_update(update) == "operators":
        _ok, position = matcher.match_position(doc)
    res = apply_update(doc, update, array_filters=array_filters, match_position=position, variables=variables)
    new = res.doc
    if res.is_replacement:
        if "_id" not in new:
            new = {"_id": doc["_id"], **new}
        elif hashable(new["_id"]) != hashable(doc["_id"]):
            raise MongoError(
                "ImmutableField",
                f"After applying the update, the (immutable) field '_id' was found to have been altered to _id: {new['_id']!r}",
            )
        if new == doc and bsonutil.encode(new) == bsonutil.encode(doc):
            return None
        op = E.replace_op(coll.ns, coll.uuid, new, coll.document_key(doc))
    else:
        if res.diff is None:
            return None
        op = E.update_op(coll.ns, coll.uuid, res.diff, coll.document_key(doc))
    if len(bsonutil.encode(new)) > bsonutil.MAX_BSON_OBJECT_SIZE:
        raise MongoError("BSONObjectTooLarge", "Resulting document after update is larger than 16777216")
    if coll.validator is not None:
        check_update(coll.validator, ctx.cmd, doc, new, ws.from_migrate)
    check_shard_key_change(node, ctx, coll, doc, new, multi)
    ws.before_write()
    ws.replace(coll, doc, new)
    ws.log(op, index)
    ws.pre_image(coll, doc)
    return new


def upsert_document(node: Node, ctx: OpCtx, db: str, name: str, q: dict, update: Any, ws: WriteSession, index: int,
                    array_filters: list | None = None, variables: dict | None = None,
                    supplied: dict | None = None) -> dict:
    """Insert what an upsert that matched nothing inserts: the update applied to the query's
    equality fields, or (`upsertSupplied`, as $merge asks) the document `supplied`."""
    if supplied is not None:
        doc = prepare_insert(dict(supplied))
    else:
        res = apply_update(upsert_seed(q, update), update, array_filters=array_filters, upsert_query=q,
                           is_insert=True, variables=variables)
        doc = prepare_insert(res.doc)
    coll = ensure_collection(node, ctx, db, name)
    if coll.shard_key and node.owns is not None and not node.owns(coll.ns, doc):
        # The server's upsert stage: the new document belongs to another shard; mongos inserts it
        # there (and deletes what the query matches here, expecting nothing).
        if ctx.txn is None and ctx.txn_number is None:
            raise MongoError("IllegalOperation", "The upsert document could not be inserted onto the shard targeted "
                             "by the query, since its shard key belongs on a different shard. Cross-shard upserts are "
                             "only allowed when running in a transaction or with retryWrites: true.")
        raise MongoError("WouldChangeOwningShard", "The document we are inserting belongs on a different shard",
                         preImage=q, postImage=doc, shouldUpsert=True)
    insert_one(node, ctx, coll, doc, ws, index)
    return doc


def parse_update_statement(st: dict) -> tuple[dict, Any, bool]:
    """An update statement's `q`, `u` and `multi`, or its parse errors."""
    q = st.get("q", {})
    u = st.get("u")
    if not isinstance(q, dict):
        raise MongoError("TypeMismatch", "BSON field 'update.updates.q' is the wrong type, expected type 'object'")
    if u is None:
        raise MongoError("FailedToParse", "BSON field 'update.updates.u' is missing but a required field")
    multi = bool(st.get("multi", False))
    if multi and classify_update(u) == "replacement":
        raise MongoError("FailedToParse", "multi update is not supported for replacement-style update")
    return q, u, multi


def replay_update(saved: dict, index: int, upserted: list[dict], n: int, n_modified: int) -> tuple[int, int]:
    """A retried update statement's saved result added to the reply's counts (and `upserted`)."""
    if "upserted" in saved:
        upserted.append({"index": index, "_id": saved["upserted"]})
    return n + saved.get("n", 0), n_modified + saved.get("nModified", 0)


@command("update")
async def cmd_update(node: Node, ctx: OpCtx) -> dict:
    cmd = ctx.cmd
    name = check_namespace(ctx.db, cmd["update"])
    stmts = cmd.get("updates")
    if not isinstance(stmts, list):
        raise MongoError("FailedToParse", "BSON field 'update.updates' is missing but a required field")
    ws = WriteSession(node, ctx)
    n = n_modified = 0
    upserted: list[dict] = []
    errors = WriteErrors(ctx, ws)
    variables = None
    for i, st in errors.statements(stmts):
        with errors.statement(i):
            saved = ws.already(i)
            if saved is not None:
                n, n_modified = replay_update(saved, i, upserted, n, n_modified)
                continue
            q, u, multi = parse_update_statement(st)
            if variables is None:
                variables = for_command(node, ctx)
            stmt_vars = statement_variables(variables, st, u)
            sort = st.get("sort")
            if sort is not None and multi:
                raise MongoError("FailedToParse", "Cannot specify sort with multi=true")
            parse_update(u, st.get("arrayFilters"))
            collator = statement_collator(st, node.catalog.collection(ctx.db, name), "update.updates")
            matcher = Matcher(q, variables, collator)
            hint = st.get("hint")
            coll, targets = await ws.settled_targets(
                ctx.db, name, lambda c: first_matching(c, q, matcher, ws, None if multi else 1, sort, hint, collator))
            if targets:
                modified = 0
                for doc in targets:
                    if update_document(node, ctx, coll, doc, u, ws, i, st.get("arrayFilters"), matcher, multi,
                                       stmt_vars) is not None:
                        modified += 1
                n += len(targets)
                n_modified += modified
                if ws.state is not None and modified == 0:
                    ws.state.executed[ws.stmt_id(i)] = {"n": len(targets), "nModified": 0}
                elif ws.state is not None:
                    ws.state.executed[ws.stmt_id(i)] = {"n": len(targets), "nModified": modified}
            elif st.get("upsert"):
                doc = upsert_document(node, ctx, ctx.db, name, q, u, ws, i, st.get("arrayFilters"), stmt_vars,
                                      (st.get("c") or {}).get("new") if st.get("upsertSupplied") else None)
                n += 1
                upserted.append({"index": i, "_id": doc["_id"]})
                if ws.state is not None:
                    ws.state.executed[ws.stmt_id(i)] = {"n": 1, "nModified": 0, "upserted": doc["_id"]}
    reply: dict[str, Any] = {"n": n}
    if upserted:
        reply["upserted"] = upserted
    reply["nModified"] = n_modified
    return _write_concern_reply(reply, errors.errors)


# -- delete -------------------------------------------------------------------------
def delete_document(node: Node, ctx: OpCtx, coll: Collection, doc: dict, ws: WriteSession, index: int) -> None:
    key = coll.document_key(doc)
    ws.before_write()
    ws.delete(coll, doc)
    ws.log(E.delete_op(coll.ns, coll.uuid, key), index)
    ws.pre_image(coll, doc)


@command("delete")
async def cmd_delete(node: Node, ctx: OpCtx) -> dict:
    cmd = ctx.cmd
    name = check_namespace(ctx.db, cmd["delete"])
    stmts = cmd.get("deletes")
    if not isinstance(stmts, list):
        raise MongoError("FailedToParse", "BSON field 'delete.deletes' is missing but a required field")
    ws = WriteSession(node, ctx)
    n = 0
    errors = WriteErrors(ctx, ws)
    for i, st in errors.statements(stmts):
        with errors.statement(i):
            saved = ws.already(i)
            if saved is not None:
                n += saved.get("n", 0)
                continue
            q = st.get("q", {})
            limit = st.get("limit", 0)
            if limit not in (0, 1):
                raise MongoError("FailedToParse", "The limit field in delete objects must be 0 or 1. Got " + str(limit))
            collator = statement_collator(st, node.catalog.collection(ctx.db, name), "delete.deletes")
            matcher = Matcher(q, for_command(node, ctx), collator)
            hint = st.get("hint")
            coll, targets = await ws.settled_targets(
                ctx.db, name, lambda c: first_matching(c, q, matcher, ws, 1 if limit == 1 else None, None, hint,
                                                       collator))
            for doc in targets:
                delete_document(node, ctx, coll, doc, ws, i)
            n += len(targets)
            if ws.state is not None:
                ws.state.executed[ws.stmt_id(i)] = {"n": len(targets)}
    return _write_concern_reply({"n": n}, errors.errors)


# -- findAndModify ---------------------------------------------------------------------
def parse_find_and_modify(cmd: dict) -> tuple[dict, bool, Any]:
    """A findAndModify's query, whether it removes, and its update (checked), or its parse errors."""
    remove = bool(cmd.get("remove", False))
    update = cmd.get("update")
    if remove and update is not None:
        raise MongoError("FailedToParse", "Cannot specify both an update and remove=true")
    if not remove and update is None:
        raise MongoError("FailedToParse", "Either an update or remove=true must be specified")
    if remove and cmd.get("upsert"):
        raise MongoError("FailedToParse", "Cannot specify both upsert=true and remove=true")
    if remove and cmd.get("new"):
        raise MongoError("FailedToParse", "Cannot specify both new=true and remove=true; 'remove' always returns the deleted document")
    if update is not None:
        parse_update(update, cmd.get("arrayFilters"))
    return cmd.get("query") or {}, remove, update


@command("findAndModify", "findandmodify")
async def cmd_find_and_modify(node: Node, ctx: OpCtx) -> dict:
    from mongosim.shardsim.query.projection import compile_projection

    cmd = ctx.cmd
    name = check_namespace(ctx.db, cmd[next(iter(cmd))])
    q, remove, update = parse_find_and_modify(cmd)
    ws = WriteSession(node, ctx)
    saved = ws.already(0, find_and_modify=True)
    if saved is not None:
        return dict(saved)
    variables = for_command(node, ctx)
    collator = command_collator(cmd.get("collation"), node.catalog.collection(ctx.db, name), "findAndModify.collation")
    matcher = Matcher(q, variables, collator)
    coll, targets = await ws.settled_targets(
        ctx.db, name, lambda c: first_matching(c, q, matcher, ws, 1, cmd.get("sort"), cmd.get("hint"), collator))
    doc = targets[0] if targets else None
    fields = cmd.get("fields")
    project = compile_projection(fields, variables=variables) if fields else None
    last_error: dict[str, Any] = {"n": 0}
    value = None
    if remove:
        if doc is not None:
            delete_document(node, ctx, coll, doc, ws, 0)
            last_error = {"n": 1}
            value = doc
    elif doc is not None:
        new = update_document(node, ctx, coll, doc, update, ws, 0, cmd.get("arrayFilters"), matcher, False, variables)
        last_error = {"n": 1, "updatedExisting": True}
        value = (new if new is not None else doc) if cmd.get("new") else doc
    elif cmd.get("upsert"):
        new = upsert_document(node, ctx, ctx.db, name, q, update, ws, 0, cmd.get("arrayFilters"), variables)
        last_error = {"n": 1, "updatedExisting": False, "upserted": new["_id"]}
        value = new if cmd.get("new") else None
    if value is not None and project is not None:
        value = project(value)
    reply = {"lastErrorObject": last_error, "value": value, "ok": 1.0}
    if ws.state is not None:
        ws.state.executed[ws.stmt_id(0)] = dict(reply)  # (the reply sent gets operationTime, writeConcernError...)
    return reply
