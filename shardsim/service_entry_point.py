"""A command arriving at one replica-set member: the checks and waits around running it.

What the server's entry point (service_entry_point_mongod) does around a
command on a replica-set member, in order:

1. a write goes only to the primary (NotWritablePrimary 10107, "not primary");
   a read on a non-primary needs `secondaryOk` — a read preference other than
   primary (NotPrimaryNoSecondaryOk 13435), and then a secondary: a member in
   rollback or initial sync, or an arbiter (no data), serves no reads
   (NotPrimaryOrSecondary 13436, in that order as the server's command
   dispatch checks them); getMore, killCursors
   and administrative commands run anywhere (a cursor opened on a primary
   keeps working after it steps down);
2. read concern (`shardsim.read_concern`): a client's command naming none
   gets the cluster-wide default read concern where it applies
   (`shardsim.read_concern_support`: not on a shard's or the config server's
   members, which take what mongos sends); wait for afterClusterTime, read the
   majority snapshot;
3. the command runs on the member's node, as a "read" or a "write"
   operation (the profiler, `shardsim.profiler`, times it from here to the
   end of its write concern wait): stepping down interrupts the writes
   (InterruptedDueToReplStateChange 11602), a kill interrupts everything
   (the client sees its connection close: `MemberGone`);
4. linearizable reads confirm they are still primary; write concern
   (`shardsim.write_concern`) is waited for and reported as the reply's
   `writeConcernError`.

Both the router's shard remotes and each member's own wire endpoint come
through here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import trio

from mongosim.oplog.errors import MongoError
from mongosim.shardsim import profiler, read_concern, write_concern
from mongosim.shardsim.read_concern_support import with_default_read_concern
from mongosim.shardsim.replica_set import PRIMARY, SECONDARY
from mongosim.shardsim.write_concern import MemberGone

if TYPE_CHECKING:
    from mongosim.shardsim.replica_set import Member

READ_COMMANDS = frozenset({
    "find", "aggregate", "count", "distinct", "listCollections", "listIndexes", "listDatabases", "dbStats",
    "collStats", "dataSize", "explain", "_migrateClone", "_shardsvrCountInRange", "mapReduce", "geoNear",
})
WRITE_COMMANDS = write_concern.WRITE_CONCERN_COMMANDS
# the server's sharding metadata that lives outside the oplog (config.cache.* on a real shard)
METADATA_COMMANDS = frozenset({"_shardsvrSetShardKey", "_shardsvrReshardCommit"})


def check_role(m: "Member", name: str, secondary_ok: bool, *, writes: frozenset = WRITE_COMMANDS,
               reads: frozenset = READ_COMMANDS) -> bool:
    """Raise if `m` may not run `name` now; whether it is a write (`writes`, `reads`: the commands
    that are, and those a secondary may answer with secondaryOk)."""
    if name in writes:
        if m.state != PRIMARY:
            raise MongoError("NotWritablePrimary", "not primary")
        return True
    if name in reads and m.state != PRIMARY:
        if not secondary_ok:
            raise MongoError("NotPrimaryNoSecondaryOk", "not primary and secondaryOk=false")
        if m.state != SECONDARY:
            raise MongoError("NotPrimaryOrSecondary", "node is not in primary or recovering state")
    return False


def default_read_concern(m: "Member", from_router: bool) -> dict | None:
    """The cluster-wide default read concern `m` applies to a command naming none: its set's, for
    a client of a replica set's member; none for mongos's commands nor on a shard's or the config
    server's members (service_entry_point_common.cpp: mongos applied it)."""
    rs = m.rs
    if from_router or rs.defaults is None or rs.in_sharded_cluster or rs.is_config:
        return None
    return rs.defaults.read_concern


def interrupted(m: "Member") -> Exception:
    if not m.alive:
        return MemberGone()
    return MongoError("InterruptedDueToReplStateChange",
                      "operation was interrupted because a replica set state change occurred")


async def run_command(m: "Member", db: str, cmd: dict, *, from_router: bool = False,
                      secondary_ok: bool = False, client: dict | None = None) -> dict:
    """Run `cmd` on member `m` as its mongod would (`client`: for the profiler, see Node.run_command)."""
    if not m.alive:
        raise MemberGone()
    name = next(iter(cmd))
    is_write = check_role(m, name, secondary_ok) or (cmd.get("autocommit") is False and name in
                                                       ("insert", "update", "delete", "findAndModify"))
    if is_write and m.writes_blocked is not None:  # a step-down is waiting for a secondary to catch up
        await m.writes_blocked.wait()
        check_role(m, name, secondary_ok)
    wc = write_concern.parse(cmd, m.rs) if write_concern.applies(name, cmd) else None
    sent = cmd
    cmd = with_default_read_concern(name, cmd, default_read_concern(m, from_router))
    if m.node.profiler.levels:  # (profiling off everywhere: the common case costs this test)
        rs = m.rs
        return await profiler.profiled(m.node, db, sent, lambda: _run(m, db, name, cmd, wc, is_write, from_router),
                                       client, effective=cmd, wc=wc, from_router=from_router,
                                       shard_member=rs.in_sharded_cluster or rs.is_config)
    return await _run(m, db, name, cmd, wc, is_write, from_router)


async def _run(m: "Member", db: str, name: str, cmd: dict, wc: "write_concern.WriteConcern | None", is_write: bool,
               from_router: bool) -> dict:
    """The command on the member's node, then its linearizable read's check and its write concern wait
    (what the profiler times as one operation)."""
    view = await read_concern.prepare(m, name, cmd) if "readConcern" in cmd else None
    with trio.CancelScope() as scope:
        m.ops[scope] = "write" if is_write else "read"
        try:
            reply = await m.node.run_unprofiled(db, cmd, from_router, view)
        finally:
            m.ops.pop(scope, None)
    if scope.cancelled_caught:
        raise interrupted(m)
    rs = m.rs
    if name in METADATA_COMMANDS:
        ns = cmd[name]
        coll = m.node.catalog.collection(*ns.split(".", 1)) if isinstance(ns, str) and "." in ns else None
        if coll is not None:
            rs.note_metadata(ns, {"uuid": coll.uuid, "shard_key": coll.shard_key,
                                  "indexes": [dict(s) for s in coll.indexes]})
    if rs.multi and "readConcern" in cmd and read_concern.level_of(cmd)[0] == "linearizable":
        await read_concern.linearize(m)
    if wc is not None and (rs.multi or wc.w != "majority"):
        waiter = m
        if name == "aggregate" and m.state != PRIMARY and rs.primary is not None:
            waiter = rs.primary  # (a secondary's $out or $merge wrote on the primary: reads.output_node)
        op_key = reply.get("_opTimeKey") or waiter.last_key
        wce = await write_concern.wait(waiter, op_key, wc)
        if wce is not None:
            reply["writeConcernError"] = wce
    return reply
