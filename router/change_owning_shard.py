"""WouldChangeOwningShard: mongos's part of an update that moves a document to another shard.

A shard does not apply an update whose new shard-key value another shard owns
(`shardsim.writes.check_shard_key_change`), nor an upsert whose new document
belongs elsewhere: it answers WouldChangeOwningShard (283) with the document
before (`preImage`; for an upsert, the update's query) and after (`postImage`).
mongos then deletes the pre-image on its shard (the whole pre-image is the
delete's predicate) and inserts the post-image on the owning shard, atomically:
inside the client's transaction when there is one, otherwise (a retryable
write) in an internal transaction on a child of the client's session (its
events carry `lsid: {id, uid, txnNumber, txnUUID}`, `txnNumber: 0`), which first runs the original
statement again, so a write that changed the document in between is seen, not
lost. Two shards took part, so it commits with two-phase commit. A change
stream therefore shows a `delete` and an `insert`, not an `update`.

The delete and the insert carry the shard versions this router routes them by,
as every targeted statement does: a shard that no longer owns the post-image's
range (another router moved the chunk) answers StaleConfig instead of keeping
an orphan, and the internal transaction runs again on the refreshed routing.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from bson import Binary, Int64
from mongosim.oplog.error_codes import CODES
from mongosim.oplog.errors import MongoError
from mongosim.router.request import Request
from mongosim.router.shard_versioning import is_stale, with_versions

if TYPE_CHECKING:
    from mongosim.router.mongos import Router


@dataclass
class Outcome:
    """How a statement that met WouldChangeOwningShard ended.

    `moved`: the pre-image was deleted and the post-image inserted (`info` says which);
    otherwise `rerun` is the shard's reply when the statement, run again, no longer moved
    anything (None when the pre-image was gone: the statement matched nothing)."""

    moved: bool
    info: dict
    rerun: dict | None = None

    @property
    def upserted(self) -> bool:
        return self.moved and bool(self.info.get("shouldUpsert"))


Rerun = Callable[[Request], Awaitable["dict | MongoError"]]
TXN_API_ATTEMPTS = 10  # mongosim's bound on runs of the internal transaction (the server retries until a deadline)
WRITE_CONFLICT = CODES["WriteConflict"]


async def change_owning_shard(router: Router, req: Request, db: str, coll: str, ns: str, source: str,
                              info: dict, rerun: Rerun, answer: Callable[[Outcome], Any],
                              stmt_id: int | None = None) -> Any:
    """Move the document `info` describes from `source` to its owning shard; returns `answer(outcome)`.

    `rerun(txn_req)` runs the original statement on `source` within the internal transaction
    and returns the shard's reply or its WouldChangeOwningShard error. For a retryable write's
    statement `stmt_id`, the source shard then records it as executed with the answer, the
    reply a retry gets (the server links the internal transaction to the client's session)."""
    if req.cmd.get("autocommit") is False:  # inside the client's transaction
        return answer(Outcome(await _delete_and_insert(router, req, db, coll, ns, source, info), info))
    for _retry in range(TXN_API_ATTEMPTS - 1):
        try:
            return await _in_internal_transaction(router, req, db, coll, ns, source, info, rerun, answer, stmt_id)
        except MongoError as err:
            # the transactions API runs the whole body again after a transient error (a write
            # that changed the document after the re-run read it: WriteConflict; a stale routing,
            # after the refresh)
            if is_stale(err):
                router.refresh_catalog()
            elif err.code != WRITE_CONFLICT and "TransientTransactionError" not in err.labels:
                raise
    return await _in_internal_transaction(router, req, db, coll, ns, source, info, rerun, answer, stmt_id)


async def _in_internal_transaction(router: Router, req: Request, db: str, coll: str, ns: str, source: str,
                                   info: dict, rerun: Rerun, answer: Callable[[Outcome], Any],
                                   stmt_id: int | None) -> Any:
    """One attempt: run the statement again, move what it still moves, commit."""
    # a child session of the client's (the server's internal transactions API): the
    # client's session id and txnNumber, and a txnUUID of its own; its txnNumber is 0
    parent = req.cmd.get("lsid") or {"id": Binary(uuid.uuid4().bytes, 4)}
    lsid = {k: parent[k] for k in ("id", "uid") if k in parent}
    if "txnNumber" in req.cmd:
        lsid["txnNumber"] = Int64(req.cmd["txnNumber"])
    lsid["txnUUID"] = Binary(uuid.uuid4().bytes, 4)
    txn_req = Request(db, {"lsid": lsid, "txnNumber": 0, "autocommit": False, "startTransaction": True},
                      req.conn, req.name)
    try:
        again = await rerun(txn_req)
        if isinstance(again, MongoError):  # it still moves the document, as it is now
            outcome = Outcome(await _delete_and_insert(router, txn_req, db, coll, ns, source, again.extra),
                              again.extra)
        else:  # changed concurrently so that it stays: the statement's own result stands
            outcome = Outcome(False, info, again)
        result = answer(outcome)
        await router.txns.commit(txn_req)
        if stmt_id is not None and "txnNumber" in req.cmd:
            router.shard(source).node.sessions.record(req.cmd["lsid"], int(req.cmd["txnNumber"]), stmt_id, result)
    except MongoError:
        await router.txns.abort_quietly(txn_req)
        raise
    finally:
        await router.txns.end_sessions({"endSessions": [lsid]})
        for shard in router.shards:
            router.shard(shard).node.sessions.forget(lsid)
    if txn_req.op_time_key > req.op_time_key:
        req.op_time_key = txn_req.op_time_key
    return result


async def _delete_and_insert(router: Router, txn_req: Request, db: str, coll: str, ns: str, source: str,
                             info: dict) -> bool:
    """Delete the pre-image on `source` and insert the post-image where it belongs; False when the
    pre-image is no longer there (the statement then matched nothing, and nothing is inserted)."""
    pre, post, upsert = info["preImage"], info["postImage"], bool(info.get("shouldUpsert"))
    routing = router.catalog.routing(ns)
    # (a time-series collection's: the measurement deleted from its bucket, its new bucket inserted as is)
    flag = {"isTimeseriesNamespace": True} if routing.timeseries_fields is not None else {}
    deleted = await router.txns.run_in_transaction(
        txn_req, source, db, with_versions(router, txn_req, db, {"delete": coll, "deletes": [{"q": pre, "limit": 1}],
                                                                 **flag}, source))
    _raise_write_error(deleted)
    if upsert and deleted.get("n"):
        raise MongoError("ConflictingOperationInProgress", "Delete matched a document when it should not have.")
    if not upsert and deleted.get("n") != 1:
        return False
    target = routing.shard_for(routing.pattern.extract(post))  # (a time-series one's post-image: its new bucket)
    inserted = await router.txns.run_in_transaction(
        txn_req, target, db, with_versions(router, txn_req, db, {"insert": coll, "documents": [post]}, target))
    _raise_write_error(inserted)
    return True


def _raise_write_error(reply: dict[str, Any]) -> None:
    """Raise a shard reply's first write error."""
    if reply.get("writeErrors"):
        raise MongoError.from_write_error(reply["writeErrors"][0])
