"""Which readConcern a command accepts (the server's per-command `supportsReadConcern`).

Before a command runs outside a transaction, a mongod and a mongos check the
level of its readConcern (when it names one) against what the command
supports (service_entry_point_common.cpp `_extractReadConcern`, strategy.cpp):

- find, distinct and aggregate accept every level (snapshot included: the
  reads `shardsim/snapshot_reads.py` serves);
- count accepts every level but snapshot;
- dbHash accepts local, and snapshot (with the server's test commands on, as here);
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

The cluster-wide default read concern (`setDefaultRWConcern`'s
`defaultReadConcern`, `shardsim.rw_concern_defaults`) is applied first, to a
command whose readConcern is absent or empty (no level, afterClusterTime,
afterOpTime nor atClusterTime: a causally consistent read's `{afterClusterTime}`
keeps level local, as in 8.0), outside a transaction or on the statement that
starts one, and only when the command permits it (`defaultReadConcernPermit`):
find, count, distinct and aggregate — not an explain (the command, or
aggregate's `explain: true`), not a pipeline with a stage that accepts a
single level ($changeStream upconverts to majority by itself, $currentOp and
the list stages read local); not getMore (a cursor keeps the level it was
opened with), the writes (a transaction opened by a write stays local),
findAndModify, mapReduce, the list and stats commands.  The command then runs
as if it had named `{level: <default>, provenance: "customDefault"}`.  A
replica set's member applies it to its clients' commands, mongos to its
clients' (and sends it on to the shards, whose members apply none of their
own); mongos refuses a client's provenance other than "clientSupplied".
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
# local, or snapshot (the server's test commands, which mongosim enables): dbHash
LOCAL_OR_SNAPSHOT = frozenset({"dbHash", "dbhash"})
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
    if name in LOCAL_OR_SNAPSHOT:
        return _READ_CONCERN_NOT_SUPPORTED if level not in ("local", "snapshot") else None
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


# commands whose supportsReadConcern permits the default (defaultReadConcernPermit OK)
DEFAULT_PERMITTED = frozenset({"find", "count", "distinct", "aggregate"})
# stages that permit no default (onlySingleReadConcernSupported / onlyReadConcernLocalSupported)
_NO_DEFAULT_STAGES = frozenset({"$changeStream", "$listLocalSessions", "$listSessions", "$currentOp", "$listCatalog",
                                "$listClusterCatalog"})
_SPECIFYING = ("level", "afterClusterTime", "afterOpTime", "atClusterTime")


def _stages(pipeline: Any) -> list[str]:
    """The stage names of a pipeline and of the pipelines nested in its stages."""
    out: list[str] = []
    if not isinstance(pipeline, list):
        return out
    for stage in pipeline:
        if not isinstance(stage, dict) or not stage:
            continue
        name, spec = next(iter(stage.items()))
        out.append(name)
        if isinstance(spec, dict):
            if name == "$facet":
                for sub in spec.values():
                    out.extend(_stages(sub))
            else:
                out.extend(_stages(spec.get("pipeline")))
    return out


def default_permitted(name: str, cmd: dict) -> bool:
    """Whether the command lets the cluster-wide default read concern apply (defaultReadConcernPermit)."""
    if name not in DEFAULT_PERMITTED:
        return False
    if name == "aggregate":
        if cmd.get("explain"):
            return False
        return not any(s in _NO_DEFAULT_STAGES for s in _stages(cmd.get("pipeline")))
    return True


def read_concern_is_empty(rc: Any) -> bool:
    """ReadConcernArgs::isEmpty: absent, or naming none of level / afterClusterTime / afterOpTime /
    atClusterTime (a lone provenance, `{}`)."""
    return rc is None or (isinstance(rc, dict) and not any(k in rc for k in _SPECIFYING))


def with_default_read_concern(name: str, cmd: dict, default: dict | None) -> dict:
    """The command as it runs once the cluster-wide default read concern (`default`, None when
    unset) is applied, as _extractReadConcern does (see the module docstring): `cmd` itself when
    it does not apply."""
    if not default or not read_concern_is_empty(cmd.get("readConcern")):
        return cmd
    if "autocommit" in cmd and not cmd.get("startTransaction"):
        return cmd
    if not default_permitted(name, cmd):
        return cmd
    return {**cmd, "readConcern": {**default, "provenance": "customDefault"}}


def check_client_provenance(cmd: dict) -> None:
    """mongos: a client may name no provenance but clientSupplied (strategy.cpp; a readConcern
    naming nothing else is replaced by the default, its provenance with it)."""
    rc = cmd.get("readConcern")
    if isinstance(rc, dict) and not read_concern_is_empty(rc) and rc.get("provenance", "clientSupplied") != \
            "clientSupplied":
        raise MongoError("InvalidOptions", 'readConcern provenance must be unset or "clientSupplied"')
