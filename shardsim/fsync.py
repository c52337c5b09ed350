"""fsync and fsyncUnlock on a node: flush, or lock the node against writes (db/commands/fsync.cpp).

`{fsync: 1}` flushes (mongosim's data is in memory, its journal flushed by
shardsim/persistence.py as it goes) and answers `{numFiles: 1}`, a dummy the
server keeps "since MMAP went away".  `{fsync: 1, lock: true}` takes the fsync
lock once more: while the count is above zero every write (`BLOCKED`) waits on a
trio event until fsyncUnlock brings the count back to zero; reads go on.
A waiting write stops at its maxTimeMS (MaxTimeMSExpired) or when killOp
interrupts it (its wait runs inside the operation: shardsim/kill_op.py).
Replies: `{info: "now locked against writes, use db.fsyncUnlock() to unlock",
lockCount, seeAlso}`; `{info: "fsyncUnlock completed", lockCount}`; unlocking
a node not locked answers `ok: 0`, errmsg "fsyncUnlock called when not locked"
and no code (an errmsg command).  Both are admin only.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import trio
from bson import Int64

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.command_registry import command

if TYPE_CHECKING:
    from mongosim.shardsim.node import Node
    from mongosim.shardsim.operation_context import OpCtx

__all__ = ["FsyncLock", "BLOCKED"]

SEE_ALSO = "http://dochub.mongodb.org/core/fsynccommand"
# the writes an fsync lock holds back (a client's CRUD, DDL and commits; not the internal commands of
# migrations, nor the end of a transaction by abort)
BLOCKED = frozenset({
    "insert", "update", "delete", "findAndModify", "findandmodify", "bulkWrite", "create", "drop", "dropDatabase",
    "renameCollection", "createIndexes", "dropIndexes", "deleteIndexes", "collMod", "commitTransaction",
})


class FsyncLock:
    """The node's fsync lock count; `released` is set when it drops to zero."""

    def __init__(self) -> None:
        self.count = 0
        self.released = trio.Event()
        self.released.set()

    def lock(self) -> int:
        if self.count == 0:
            self.released = trio.Event()
        self.count += 1
        return self.count

    def unlock(self) -> int:
        self.count -= 1
        if self.count == 0:
            self.released.set()
        return self.count

    async def wait_unlocked(self, deadline: float = math.inf) -> None:
        """Wait until the node is unlocked (MaxTimeMSExpired at `deadline`, trio time)."""
        while self.count:
            with trio.move_on_at(deadline):
                await self.released.wait()
            if self.count and trio.current_time() >= deadline:
                raise MongoError("MaxTimeMSExpired", "operation exceeded time limit")


def _admin_only(ctx: OpCtx, name: str) -> None:
    if ctx.db != "admin":
        raise MongoError("Unauthorized", f"{name} may only be run against the admin database.")


@command("fsync")
async def cmd_fsync(node: Node, ctx: OpCtx) -> dict:
    _admin_only(ctx, "fsync")
    if not ctx.cmd.get("lock"):
        return {"numFiles": 1, "ok": 1.0}
    count = node.fsync.lock()
    return {"info": "now locked against writes, use db.fsyncUnlock() to unlock", "lockCount": Int64(count),
            "seeAlso": SEE_ALSO, "ok": 1.0}


@command("fsyncUnlock")
async def cmd_fsync_unlock(node: Node, ctx: OpCtx) -> dict:
    _admin_only(ctx, "fsyncUnlock")
    if node.fsync.count == 0:
        return {"ok": 0.0, "errmsg": "fsyncUnlock called when not locked"}
    return {"info": "fsyncUnlock completed", "lockCount": Int64(node.fsync.unlock()), "ok": 1.0}
