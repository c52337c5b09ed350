"""Read and write concern defaults: the cluster-wide ones (`setDefaultRWConcern`) and the implicit ones.

The server's ReadWriteConcernDefaults, as 8.0 has it:

- A write that names no write concern gets the cluster-wide default write
  concern (CWWC) when one is set (provenance "customDefault"); otherwise the
  implicit default: `{w: "majority", wtimeout: 0}`, except in a set whose
  voting data-bearing members do not outnumber the voting majority because
  of arbiters (PSA), where it is `{w: 1}` (ReplSetConfig::
  isImplicitDefaultWriteConcernMajority) — and `getDefaultRWConcern` then
  reports no `defaultWriteConcern` at all, only its source "implicit".
- `setDefaultRWConcern` (on a replica set's primary, or on mongos: the
  config server keeps the document) sets either default.  The write concern
  must be acknowledged (not w: 0) and cannot be unset once set; the read
  concern cannot be snapshot or linearizable.  Shard members refuse both
  commands (51301): in a sharded cluster, mongos applies the defaults.
- Once a CWWC is set, a reconfig may change the implicit default (add or
  remove an arbiter); without one it may not (`shardsim.repl_commands`).

One object per deployment: a replica set's own (`--topology replset`), or
the sharded cluster's, kept by the config server and shared by every shard's
set (mongos applies it to the writes it sends them).  The default read
concern is applied where `shardsim.read_concern_support` says (a replica
set's members to their clients' reads; mongos to its clients', sent on to the
shards).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from bson import Int64, Timestamp

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.idl_errors import wrong_type

if TYPE_CHECKING:
    from mongosim.shardsim.replica_set import ReplicaSet

_UNSUITABLE_READ_LEVELS = ("snapshot", "linearizable")


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None, microsecond=0)


def normalise_write_concern(wc: dict) -> dict:
    """A write concern document as WriteConcernOptions::toBSON writes it: w, [j], wtimeout."""
    w = wc.get("w", 1)
    if isinstance(w, float):
        w = int(w)
    out: dict[str, Any] = {"w": int(w) if isinstance(w, (int, Int64)) and not isinstance(w, bool) else w}
    if "j" in wc:
        out["j"] = bool(wc["j"])
    out["wtimeout"] = int(wc.get("wtimeout", 0) or 0)
    return out


class RWConcernDefaults:
    """The defaults document (config.settings `ReadWriteConcernDefaults` on the server)."""

    def __init__(self) -> None:
        self.write_concern: dict | None = None  # the CWWC, as stored
        self.read_concern: dict | None = None  # the CWRC, as stored
        self.update_op_time: Timestamp | None = None
        self.update_wall: datetime | None = None
        self.local_update_wall = _now()

    @property
    def cwwc_set(self) -> bool:
        return self.write_concern is not None

    def set(self, read_concern: Any, write_concern: Any, op_time: Timestamp) -> None:
        """setDefaultRWConcern's checks and update (generateNewCWRWCToBeSavedOnDisk)."""
        if read_concern is None and write_concern is None:
            raise MongoError("BadValue", 'At least one of the "defaultReadConcern" or "defaultWriteConcern" '
                                         "fields must be present")
        for name, value in (("defaultReadConcern", read_concern), ("defaultWriteConcern", write_concern)):
            if value is not None and not isinstance(value, dict):
                raise wrong_type(f"setDefaultRWConcern.{name}", value, "object")
        rc = None
        if read_concern:
            level = read_concern.get("level", "local")
            if level in _UNSUITABLE_READ_LEVELS:
                raise MongoError("BadValue", f"level: '{level}' is not suitable for the default read concern")
            for field in ("afterOpTime", "afterClusterTime", "atClusterTime"):
                if field in read_concern:
                    raise MongoError("BadValue", f"'{field}' is not suitable for the default read concern")
            if "provenance" in read_concern:
                raise MongoError("BadValue", "'provenance' must be unset in default read concern")
            rc = {"level": level}
        wc = None
        if write_concern:
            if "provenance" in write_concern:
                raise MongoError("BadValue", "'provenance' must be unset in default write concern")
            w = write_concern.get("w", 1)
            if not isinstance(w, str) and isinstance(w, (int, float, Int64)) and int(w) < 1:
                raise MongoError("BadValue", "Unacknowledged write concern is not suitable for the default write "
                                             "concern")
            wc = normalise_write_concern(write_concern)
        if write_concern is not None and wc is None and self.write_concern is not None:
            raise MongoError("IllegalOperation", "The global default write concern cannot be unset once it is set.")
        if read_concern is not None:
            self.read_concern = rc
        if write_concern is not None:
            self.write_concern = wc
        self.update_op_time = op_time
        self.update_wall = _now()
        self.local_update_wall = _now()

    def implicit_write_concern(self, rs: "ReplicaSet | None") -> dict | None:
        """The write concern a write naming none gets, and None for w: 1 (the implicit PSA default)."""
        if self.write_concern is not None:
            return self.write_concern
        if rs is not None and not rs.implicit_default_majority:
            return None
        return {"w": "majority", "wtimeout": 0}

    def describe(self, rs: "ReplicaSet | None") -> dict:
        """getDefaultRWConcern's reply (RWConcernDefault's fields in the IDL's order, then
        localUpdateWallClockTime)."""
        out: dict[str, Any] = {"defaultReadConcern": self.read_concern or {"level": "local"}}
        wc = self.implicit_write_concern(rs)
        if wc is not None:
            out["defaultWriteConcern"] = dict(wc)
        if self.update_op_time is not None:
            out["updateOpTime"] = self.update_op_time
            out["updateWallClockTime"] = self.update_wall
        out["defaultWriteConcernSource"] = "global" if self.write_concern is not None else "implicit"
        out["defaultReadConcernSource"] = "global" if self.read_concern else "implicit"
        out["localUpdateWallClockTime"] = self.local_update_wall
        return out
