"""Which readConcern a command accepts (the server's per-command `supportsReadConcern`).

Before a command runs outside a transaction, a mongod and a mongos check the
level of its readConcern (when it names one) against what the command
supports (service_entry_point_common.cpp `_extractReadConcern`, strategy.cpp):

- find, distinct and aggregate accept every level (snapshot included: the
  reads `shardsim/snapshot_reads.py` serves);
- count accepts every level but snapshot;
- an aggregate whose pipeline opens with `$changeStream` accepts only
  majority (a change stream reads majority-committed data; with no level it
  upconverts by itself), one with `$listLocalSessions` or `$listSessions`
  only local;
- the other commands keep the default of the server's Command class: local
  only.  mongosim applies that default to the commands listed in `LOCAL_ONLY`
  (writes, DDL, list commands) and leaves the others as they were.

The refusal is InvalidOptions (72): "Command <name> does not support
{ readConcern: {...} } :: caused by :: <the command's reason>".  A transaction
statement is checked when the transaction starts instead: its level must be
local, majority or snapshot.
"""

from __future__ import annotations

from typing import Any

from bson import Timestamp
from mongosim.oplog.errors import MongoError

_READ_CONCERN_NOT_SUPPORTED = "read concern not supported"
_SNAPSHOT_NOT_SUPPORTED = "read concern snapshot not supported"

LOCAL_ONLY = frozenset({
    "insert", "update", "delete", "findAndModify", "findandmodify", "listDatabases", "listCollections", "listIndexes",
    "create", "drop", "dropDatabase", "createIndexes", "dropIndexes", "deleteIndexes", "collMod", "renameCollection",
})
NO_SNAPSHOT = frozenset({"count"})
_IN_TRANSACTION_LEVELS = frozenset({"local", "majority", "snapshot"})


def _bson_string(value: Any) -> str:
    """A value as the server's BSONObj::toString writes it (the few types a readConcern holds)."""
    if isinstance(value, dict):
        if not value:
            return "{}"
        return "{ " + ", ".join(f"{k}: {_bson_string(v)}" for k, v in value.items()) + " }"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, Timestamp):
        return f"Timestamp({value.time}, {value.inc})"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def describe(read_concern: dict) -> str:
    """ReadConcernArgs::toString for a client's readConcern: its fields in the server's order, with
    the provenance the server gives one the client supplied."""
    inner = {k: read_concern[k] for k in ("level", "afterOpTime", "afterClusterTime", "atClusterTime")
             if k in read_concern}
    inner["provenance"] = read_concern.get("provenance", "clientSupplied")
    return _bson_string({"readConcern": inner})


def _first_stage(cmd: dict) -> str | None:
    p = cmd.get("pipeline")
    if isinstance(p, list) and p and isinstance(p[0], dict) and p[0]:
        return next(iter(p[0]))
    return None


# the only level a pipeline led by one of these stages accepts (onlySingleReadConcernSupported)
_STAGE_LEVEL = {"$changeStream": "majority", "$listLocalSessions": "local", "$listSessions": "local"}


def _unsupported_reason(name: str, cmd: dict, level: str) -> str | None:
    if name in LOCAL_ONLY:
        return _READ_CONCERN_NOT_SUPPORTED if level != "local" else None
    if name in NO_SNAPSHOT:
        return _SNAPSHOT_NOT_SUPPORTED if level == "snapshot" else None
    if name == "aggregate":
        stage = _first_stage(cmd)
        only = _STAGE_LEVEL.get(stage) if stage is not None else None
        if only is not None and level != only:
            return f"Aggregation stage {stage} cannot run with a readConcern other than '{only}'. Current readConcern: {level}"
    return None


def check_read_concern_support(name: str, cmd: dict) -> None:
    """Refuse a readConcern level the command does not support, as the server does before running it."""
    rc = cmd.get("readConcern")
    if not isinstance(rc, dict) or not isinstance(rc.get("level"), str):
        return
    level = rc["level"]
    if "autocommit" in cmd:
        if cmd.get("startTransaction") and level not in _IN_TRANSACTION_LEVELS:
            raise MongoError("InvalidOptions", "The readConcern level must be either 'local' (default), 'majority' or "
                                               "'snapshot' in order to run in a transaction")
        return
    reason = _unsupported_reason(name, cmd, level)
    if reason is not None:
        raise MongoError("InvalidOptions", f"Command {name} does not support {describe(rc)} :: caused by :: {reason}")
