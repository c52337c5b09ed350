"""A command's Stable API parameters, checked as the server's initializeAPIParameters does.

`apiVersion` (a string), `apiStrict` and `apiDeprecationErrors` (bools: the IDL's TypeMismatch
otherwise) are generic arguments of every command.  The checks, in the server's order: apiStrict or
apiDeprecationErrors (even false) without an apiVersion is error 4886600; an apiVersion other than "1" is
APIVersionError (322) — "2" has its own message, as acceptApiVersion2 (a test parameter) is off.
The handshake and authentication commands skip them (`skipApiVersionCheck`: a driver declares its
API version on every command, the handshake included); `isMaster` does not.

`apiStrict: true` then refuses, with APIStrictError (323):
- a command outside API Version 1 (`Command::apiVersions()`: the IDL's `api_version: "1"`), named by
  its canonical name (an alias such as `ismaster` reports `isMaster`);
- a write (insert, update, delete, findAndModify) to `system.js`;
- a field the command's IDL marks `stability: unstable` (or internal, for a client):
  "BSON field 'find.returnKey' is not allowed with apiStrict:true.";
- an aggregation stage not in API Version 1 (`AllowedWithApiStrict::kNeverInVersion1`), at any depth
  of the pipeline of aggregate or of a view's definition (create, collMod): "$currentOp is not allowed
  with 'apiStrict: true' in API Version 1"; `$collStats` only with its `count` option.
No command of API Version 1 is deprecated, so `apiDeprecationErrors: true` refuses none.
mongos checks the client's command; what it sends a shard is internal and not checked again.

A transaction runs with the API parameters of its first command, and a cursor with those of the
command that opened it: a later statement of the transaction (commit and abort included) or a getMore
giving other ones — `{apiVersion: "1"}` and `{apiVersion: "1", apiStrict: false}` differ — fails with
APIMismatchError (`mismatch`).
"""

from __future__ import annotations

from typing import Any

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.fmt import bson_str
from mongosim.shardsim.query.idl_errors import wrong_type

__all__ = ["API_VERSIONS", "V1_COMMANDS", "check", "check_pipeline", "params_of", "mismatch"]

_PARAMETERS = ("apiVersion", "apiStrict", "apiDeprecationErrors")

API_VERSIONS = ("1",)
_SKIP = frozenset({"hello", "saslStart", "saslContinue", "authenticate", "logout", "getnonce"})
_STRUCT = "APIParametersFromClient"

# the commands whose IDL (or Command::apiVersions) says api_version "1"
V1_COMMANDS = frozenset({
    "abortTransaction", "aggregate", "authenticate", "bulkWrite", "collMod", "commitTransaction", "count",
    "create", "createIndexes", "delete", "drop", "dropDatabase", "dropIndexes", "endSessions", "explain", "find",
    "findAndModify", "getMore", "hello", "insert", "killCursors", "listCollections", "listDatabases",
    "listIndexes", "ping", "refreshSessions", "saslContinue", "saslStart", "update",
})
# an alias -> the command's name (Command::getName), which the error message gives
_CANONICAL = {
    "ismaster": "isMaster", "buildinfo": "buildInfo", "findandmodify": "findAndModify", "dbstats": "dbStats",
    "collstats": "collStats", "hostinfo": "hostInfo", "getlasterror": "getLastError",
}
_SYSTEM_JS_WRITES = frozenset({"insert", "update", "delete", "findAndModify"})
# command -> its top-level fields marked `stability: unstable` (or internal) in the command's IDL
_UNSTABLE_FIELDS = {
    "find": frozenset({
        "ntoreturn", "min", "max", "returnKey", "showRecordId", "$queryOptions", "tailable", "oplogReplay",
        "noCursorTimeout", "awaitData", "options", "term", "readOnce", "allowSpeculativeMajorityRead",
        "$_requestResumeToken", "$_resumeAfter", "runtimeConstants", "collectionUUID",
    }),
    "aggregate": frozenset({
        "explain", "$queryOptions", "$_requestReshardingResumeToken", "runtimeConstants", "isMapReduceCommand",
        "collectionUUID", "$_passthroughToShard", "encryptionInformation", "$_externalDataSources", "sampleId",
        "$_requestResumeToken", "$_resumeAfter", "needsMerge", "fromMongos", "$_isClusterQueryWithoutShardKeyCmd",
    }),
}
# collMod's `index` struct (CollModIndex): its unstable fields
_COLL_MOD_INDEX_UNSTABLE = frozenset({"prepareUnique"})
# aggregation stages registered AllowedWithApiStrict::kNeverInVersion1
NOT_IN_V1_STAGES = frozenset({
    "$currentOp", "$indexStats", "$listLocalSessions", "$listSessions", "$planCacheStats", "$listCatalog",
    "$listCachedAndActiveUsers", "$shardedDataDistribution", "$queryStats", "$listSampledQueries",
    "$operationMetrics", "$backupCursor", "$backupCursorExtend", "$querySettings",
})
_COLL_STATS_NOT_IN_V1 = ("latencyStats", "storageStats", "queryExecStats")
_PIPELINE_COMMANDS = frozenset({"aggregate", "create", "collMod"})


def check(name: str, cmd: dict) -> None:
    """Raise the server's error for bad API parameters on command `name`."""
    version = cmd.get("apiVersion")
    if version is not None and not isinstance(version, str):
        raise wrong_type(f"{_STRUCT}.apiVersion", version, "string")
    for flag in ("apiStrict", "apiDeprecationErrors"):
        if flag in cmd and not isinstance(cmd[flag], bool):
            raise wrong_type(f"{_STRUCT}.{flag}", cmd[flag], "bool")
    if name in _SKIP:
        return
    if ("apiStrict" in cmd or "apiDeprecationErrors" in cmd) and version is None:  # (given at all, even false)
        raise MongoError(4886600, "Provided apiStrict and/or apiDeprecationErrors without passing apiVersion")
    if version is not None and version not in API_VERSIONS:
        raise MongoError("APIVersionError", "Cannot accept API version 2" if version == "2"
                         else 'API version must be "1"')
    if cmd.get("apiStrict") is True:
        _check_strict(name, cmd, version)


def _check_strict(name: str, cmd: dict, version: str) -> None:
    """The apiStrict refusals: the command, a write to system.js, an unstable field, a stage."""
    canonical = _CANONICAL.get(name, name)
    if canonical not in V1_COMMANDS:
        raise MongoError("APIStrictError", f"Provided apiStrict:true, but the command {canonical} "
                         f"is not in API Version {version}. Information on supported commands and migrations "
                         f"in API Version {version} can be found at "
                         "https://dochub.mongodb.org/core/manual-versioned-api")
    if canonical in _SYSTEM_JS_WRITES and cmd[name] == "system.js":
        raise MongoError("APIStrictError", f"Provided apiStrict:true, but the command {canonical} "
                         "attempts to write to system.js")
    unstable = _UNSTABLE_FIELDS.get(canonical)
    if unstable is not None:
        for field in cmd:
            if field in unstable:
                raise _unstable(f"{canonical}.{field}")
    if name == "collMod" and isinstance(cmd.get("index"), dict):
        for field in cmd["index"]:
            if field in _COLL_MOD_INDEX_UNSTABLE:
                raise _unstable(f"collMod.index.{field}")
    if name in _PIPELINE_COMMANDS and isinstance(cmd.get("pipeline"), list):
        check_pipeline(cmd["pipeline"], version)


def _unstable(path: str) -> MongoError:
    return MongoError("APIStrictError", f"BSON field '{path}' is not allowed with apiStrict:true.")


def check_pipeline(pipeline: list, version: str = "1") -> None:
    """Refuse, under apiStrict, a stage not in API Version `version`, sub-pipelines included, in the
    order the server validates them (each stage, then its sub-pipelines).  A malformed stage is left to
    the pipeline's own parse."""
    for stage in pipeline:
        if not isinstance(stage, dict) or len(stage) != 1:
            return
        name, spec = next(iter(stage.items()))
        if name in NOT_IN_V1_STAGES:
            raise MongoError("APIStrictError", f"{name} is not allowed with 'apiStrict: true' in API Version {version}")
        if name == "$collStats" and isinstance(spec, dict) and any(
                spec.get(option) is not None for option in _COLL_STATS_NOT_IN_V1):
            raise MongoError("APIStrictError", "only the 'count' option to $collStats is supported in API Version 1")
        for sub in _sub_pipelines(name, spec):
            check_pipeline(sub, version)


def _sub_pipelines(name: str, spec: Any) -> list[list]:
    """The sub-pipelines of a stage: $lookup's and $unionWith's `pipeline`, each of $facet's."""
    if not isinstance(spec, dict):
        return []
    if name in ("$lookup", "$unionWith"):
        return [spec["pipeline"]] if isinstance(spec.get("pipeline"), list) else []
    if name == "$facet":
        return [p for p in spec.values() if isinstance(p, list)]
    return []


def params_of(cmd: dict) -> dict:
    """The command's API parameters, as APIParameters holds them (those given, in their order)."""
    return {k: cmd[k] for k in _PARAMETERS if k in cmd}


def mismatch(name: str, cmd: dict, first: dict, what: str = "the transaction's first command") -> None:
    """APIMismatchError when command `name` gives other API parameters than `first`, those of the
    transaction's first command (or of the command that opened a getMore's cursor)."""
    given = params_of(cmd)
    if given != first:
        raise MongoError("APIMismatchError", f"API parameter mismatch: {_CANONICAL.get(name, name)} used params "
                         f"{bson_str(given)}, {what} used {bson_str(first)}")
