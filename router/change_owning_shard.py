"""WouldChangeOwningShard: mongos's part of an update that moves a document to another shard.

A shard does not apply an update whose new shard-key value another shard owns
(`shardsim.writes.check_shard_key_change`): it answers WouldChangeOwningShard
(283) with the document before (`preImage`) and after (`postImage`).  mongos
then deletes the original on its shard and inserts the updated document on the
owning shard, atomically: inside the client's transaction when there is one,
otherwise (a retryable write) in an internal transaction of its own, committed
with two-phase commit since two shards took part.  A change stream therefore
shows a `delete` and an `insert`, not an `update`.
"""

from __future__ import annotations

import uuid
from typing import Any

from bson import Binary

from oplog.errors import MongoError
from router.mongos import Request, Router


async def change_owning_shard(router: Router, req: Request, db: str, coll: str, ns: str, source: str,
                              info: dict, stmt_id: int | None = None, result: Any = None) -> tuple[dict, dict]:
    """Move the document `info` describes from `source` to its owning shard; (pre, post).

    For a retryable write's statement `stmt_id`, the source shard then records it as executed
    with `result`, the reply a retry gets (the server links the internal transaction to the
    client's session for this)."""
    pre, post = info["preImage"], info["postImage"]
    routing = router.catalog.routing(ns)
    target = routing.shard_for(routing.pattern.extract(post))
    internal = req.cmd.get("autocommit") is not False
    txn_req = req
    if internal:
        lsid = {"id": Binary(uuid.uuid4().bytes, 4)}
        txn_req = Request(db, {"lsid": lsid, "txnNumber": 0, "autocommit": False, "startTransaction": True},
                          req.conn, req.name)
    try:
        deleted = await router.txns.run_in_transaction(
            txn_req, source, db, {"delete": coll, "deletes": [{"q": {"_id": pre["_id"]}, "limit": 1}]})
        _raise_write_error(deleted)
        if deleted.get("n") != 1:
            raise MongoError("WouldChangeOwningShardDeletedNoDocument",
                             "Could not find a document to delete on the shard that owns it")
        _raise_write_error(await router.txns.run_in_transaction(txn_req, target, db,
                                                                {"insert": coll, "documents": [post]}))
        if internal:
            await router.txns.commit(txn_req)
            if stmt_id is not None and "txnNumber" in req.cmd:
                router.shard(source).node.sessions.record(req.cmd["lsid"], int(req.cmd["txnNumber"]), stmt_id, result)
    except MongoError:
        if internal:
            await router.txns.abort_quietly(txn_req)
        raise
    finally:
        if internal:
            await router.txns.end_sessions({"endSessions": [lsid]})
            for shard in (source, target):
                router.shard(shard).node.sessions.forget(lsid)
    if txn_req.op_time_key > req.op_time_key:
        req.op_time_key = txn_req.op_time_key
    return pre, post


def _raise_write_error(reply: dict[str, Any]) -> None:
    if reply.get("writeErrors"):
        raise MongoError.from_write_error(reply["writeErrors"][0])
