"""readConcern {level: "snapshot"} outside a transaction: a read at one cluster time.

A driver's snapshot session (`start_session(snapshot=True)`) sends its first
read with `readConcern: {level: "snapshot"}`; the server picks the time
(`atClusterTime`: its latest write) and returns it in the reply (in the
`cursor` after `ns`, or top-level for `distinct`). Every later read of the
session sends that `atClusterTime` and sees the data as it was then, whatever
was written since. The node reads through a pinned snapshot
(`shardsim.snapshots`): the same `get`/`scan` view a transaction offers.
"""

from __future__ import annotations

from typing import Any

import trio
from bson import Timestamp

from mongosim.oplog.clock import key_ts, ts_key
from mongosim.oplog.errors import MongoError
from mongosim.shardsim import snapshots
from mongosim.shardsim.query.values import hashable

SNAPSHOT_READ_COMMANDS = frozenset({"find", "aggregate", "distinct"})


class SnapshotView:
    """The documents of every collection as snapshot `seq` sees them."""

    def __init__(self, seq: int) -> None:
        self.seq = seq

    def get(self, coll: Any, id_value: Any) -> dict | None:
        return snapshots.visible(coll, hashable(id_value), self.seq)

    def scan(self, coll: Any) -> list[dict]:
        return [doc for _idk, doc in snapshots.scan(coll, self.seq)]

    def fetch(self, coll: Any, idk: Any) -> dict | None:
        return snapshots.visible(coll, idk, self.seq)

    def changed_ids(self, coll: Any) -> Any:
        """Documents written since the snapshot (their committed index keys may not be what it sees)."""
        return set(coll.versions) if coll.versions else ()


def requested_time(cmd: dict, cluster_time_key: int) -> int | None:
    """The `atClusterTime` of a snapshot read (as a clock key); None when the server picks it.
    Raises for a time that is not a timestamp or lies beyond the cluster time."""
    rc = cmd.get("readConcern")
    at = rc.get("atClusterTime") if isinstance(rc, dict) else None
    if at is None:
        return None
    if not isinstance(at, Timestamp):
        raise MongoError("TypeMismatch", "BSON field 'atClusterTime' is the wrong type, expected type 'timestamp'")
    if rc.get("level") != "snapshot":
        raise MongoError("InvalidOptions", "atClusterTime is only used with readConcern level snapshot")
    key = ts_key(at)
    if key > cluster_time_key:
        raise MongoError("InvalidOptions", "readConcern atClusterTime value must not be greater than the current "
                         f"clusterTime. Requested clusterTime: {at}; current clusterTime: {key_ts(cluster_time_key)}")
    return key


def is_snapshot_read(name: str, cmd: dict) -> bool:
    """A read command with readConcern snapshot outside a transaction (not a change stream; the
    commands that refuse the level were refused before: shardsim/read_concern_support.py)."""
    rc = cmd.get("readConcern")
    if not isinstance(rc, dict) or rc.get("level") != "snapshot":
        return False
    if name not in SNAPSHOT_READ_COMMANDS or "autocommit" in cmd:
        return False
    p = cmd.get("pipeline")
    return not (name == "aggregate" and isinstance(p, list) and p and isinstance(p[0], dict) and "$changeStream" in p[0])


def existed_at(node: Any, key: int) -> bool:
    """Whether `node` was part of the cluster at cluster time `key` (a shard added later held
    nothing then, and has no history to read at that time)."""
    return key >= node.joined_key


def pin(node: Any, key: int) -> int:
    """Pin `node`'s snapshot for cluster time `key`; its seq (SnapshotTooOld if history is gone)."""
    oplog = node.oplog

    def writes_between(a: int, b: int) -> bool:
        if oplog.start > 0 and a < oplog.first_key:
            return True  # entries after `a` were truncated away: they may have been writes
        pos = oplog.position_after(a)
        while pos < oplog.end and oplog.key_at(pos) <= b:
            if oplog.meta_at(pos)[1] != "n":  # a noop changes no data
                return True
            pos += 1
        return False

    return node.catalog.snapshots.pin(key, oplog.last_key, trio.current_time(), writes_between)


def open_view(node: Any, ctx: Any) -> None:
    """Set `ctx.snapshot` (and `ctx.at_cluster_time`) for a snapshot read on `node`."""
    key = requested_time(ctx.cmd, max(node.clock.key, node.oplog.last_key))
    if key is None:
        key = node.oplog.last_key  # the newest write: everything written so far is visible
    ctx.snapshot = SnapshotView(pin(node, key))
    ctx.at_cluster_time = key


def stamp_reply(name: str, reply: dict, key: int) -> dict:
    """Add `atClusterTime` where the server puts it: after the cursor's `ns`, or top level."""
    at = key_ts(key)
    if name in ("find", "aggregate") and isinstance(reply.get("cursor"), dict):
        reply["cursor"]["atClusterTime"] = at
    elif name == "distinct":
        ok = reply.pop("ok", 1.0)
        reply["atClusterTime"] = at
        reply["ok"] = ok
    return reply
