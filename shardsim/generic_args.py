"""Type checks of the generic command arguments, as the server's IDL parser does them.

Every command accepts the generic arguments (generic_argument.idl): `lsid`,
`txnNumber`, `autocommit`, `startTransaction`, `maxTimeMS`, `writeConcern`,
`readConcern`, `$readPreference`, `$clusterTime`, ...  The server rejects a
wrong type before the command runs with TypeMismatch (14): "BSON field
'<struct>.<field>' is the wrong type '<type>', expected type '<type>'".
Checked here once, on the router and on every node, so that no handler meets
e.g. a `txnNumber` that is an array.  Only types that are certainly wrong are
refused (a number where the server takes a number, etc.); `$readPreference` is then
parsed as the server parses it (`shardsim.read_preference`), and the Stable API
parameters checked (`shardsim.api_parameters`).
"""

from __future__ import annotations

from typing import Any

from bson import Binary

from mongosim.oplog.errors import MongoError
from mongosim.shardsim import api_parameters, read_preference
from mongosim.shardsim.query.idl_errors import wrong_bindata_type, wrong_type

_NUMBER = (int, float)


def _is_number(v: Any) -> bool:
    if isinstance(v, bool):
        return False
    if isinstance(v, _NUMBER):
        return True
    return type(v).__name__ == "Decimal128"


# every generic argument (generic_argument.idl), and the internal fields mongos adds
GENERIC_ARGUMENTS = frozenset({
    "$db", "lsid", "txnNumber", "autocommit", "startTransaction", "stmtId", "stmtIds", "maxTimeMS", "readConcern",
    "writeConcern", "$readPreference", "$clusterTime", "comment", "apiVersion", "apiStrict", "apiDeprecationErrors",
    "$audit", "$client", "$configServerState", "$gleStats", "$oplogQueryData", "$replData", "mayBypassWriteBlocking",
    "clientOperationKey", "databaseVersion", "shardVersion", "tracking_info", "coordinator", "$configTime",
    "$topologyTime", "readOnly", "maxTimeMSOpOnly", "usesDefaultMaxTimeMS", "fromMigrate",
})
# field -> (IDL struct name in the message, check, expected type text)
_GENERIC: dict[str, tuple[str, Any, str]] = {
    "lsid": ("OperationSessionInfo", lambda v: isinstance(v, dict), "object"),
    "txnNumber": ("OperationSessionInfo", lambda v: isinstance(v, int) and not isinstance(v, bool), "long"),
    "autocommit": ("OperationSessionInfo", lambda v: isinstance(v, bool), "bool"),
    "startTransaction": ("OperationSessionInfo", lambda v: isinstance(v, bool), "bool"),
    "maxTimeMS": ("{cmd}", _is_number, "int"),
    "writeConcern": ("{cmd}", lambda v: isinstance(v, dict), "object"),
    "readConcern": ("{cmd}", lambda v: isinstance(v, dict), "object"),
    "$readPreference": ("{cmd}", lambda v: isinstance(v, dict), "object"),
    "$clusterTime": ("{cmd}", lambda v: isinstance(v, dict), "object"),
}
# command -> fields holding an object (the cursor options of the cursor-returning commands)
_CURSOR_COMMANDS = {"aggregate", "find", "listCollections", "listIndexes"}
_SESSION_LIST_COMMANDS = {"endSessions", "killSessions", "refreshSessions"}


def check_generic_arguments(name: str, cmd: dict) -> None:
    """Raise TypeMismatch for a generic argument of the wrong type."""
    for field in _GENERIC.keys() & cmd.keys():  # (those present: usually lsid and $clusterTime)
        if not _GENERIC[field][1](cmd[field]):
            _raise_first_wrong_type(name, cmd)
    if "lsid" in cmd:
        check_lsid(cmd["lsid"])
    if "$readPreference" in cmd:
        read_preference.check(cmd["$readPreference"])
    if "apiVersion" in cmd or "apiStrict" in cmd or "apiDeprecationErrors" in cmd:
        api_parameters.check(name, cmd)
    if "maxTimeMS" in cmd:
        max_time_ms(cmd)
    if name in _CURSOR_COMMANDS and "cursor" in cmd and not isinstance(cmd["cursor"], dict):
        raise wrong_type(f"{name}.cursor", cmd["cursor"], "object")
    if name in _SESSION_LIST_COMMANDS:
        sessions = cmd[name]
        if not isinstance(sessions, list):
            raise wrong_type(f"{name}.{name}", sessions, "array")
        for i, s in enumerate(sessions):
            if not isinstance(s, dict):
                raise wrong_type(f"{name}.{name}.{i}", s, "object")


def _raise_first_wrong_type(name: str, cmd: dict) -> None:
    """The TypeMismatch of the first generic argument of the wrong type, in the command's order."""
    for field, v in cmd.items():
        check = _GENERIC.get(field)
        if check is not None and not check[1](v):
            struct, _ok, expected = check
            raise wrong_type(f"{struct.format(cmd=name)}.{field}", v, expected)


# -- lsid (LogicalSessionFromClient: id, and from internal clients uid, txnNumber, txnUUID) --
_LSID = "OperationSessionInfo.lsid"


def _check_uuid(field: str, v: Any) -> None:
    if not isinstance(v, Binary):
        raise wrong_type(f"{_LSID}.{field}", v, "binData")
    if v.subtype != 4:
        raise wrong_bindata_type(f"{_LSID}.{field}", v)
    if len(v) != 16:
        raise MongoError("InvalidUUID", "uuid must be a 16-byte binary field with UUID (4) subtype")


def check_lsid(lsid: dict) -> None:
    """The IDL parse of `lsid`: a UUID `id` (required); `uid` (binData), `txnNumber` (long) and
    `txnUUID` (UUID) of child sessions; no other field."""
    if len(lsid) == 1:  # a driver's {id: UUID}, the common case first
        v = lsid.get("id")
        if v.__class__ is Binary and v.subtype == 4 and len(v) == 16:
            return
    for field, v in lsid.items():
        if field in ("id", "txnUUID"):
            _check_uuid(field, v)
        elif field == "uid":
            if not isinstance(v, Binary):
                raise wrong_type(f"{_LSID}.{field}", v, "binData")
        elif field == "txnNumber":
            if not isinstance(v, int) or isinstance(v, bool):
                raise wrong_type(f"{_LSID}.{field}", v, "long")
        else:
            raise MongoError("IDLUnknownField", f"BSON field '{_LSID}.{field}' is an unknown field.")
    if "id" not in lsid:
        raise MongoError("IDLFailedToParse", f"BSON field '{_LSID}.id' is missing but a required field")


# -- maxTimeMS ----------------------------------------------------------------------------
_INT_MAX = 2**31 - 1


def max_time_ms(cmd: dict) -> int | None:
    """`maxTimeMS` as the server parses it (parseMaxTimeMS): a number in [0, 2^31 - 1], integral
    if a double; BadValue otherwise. None when absent; 0 means no limit."""
    v = cmd.get("maxTimeMS")
    if v is None:
        return None
    if not _is_number(v):
        raise wrong_type(f"{next(iter(cmd))}.maxTimeMS", v, "int")
    try:
        number = float(v.to_decimal()) if type(v).__name__ == "Decimal128" else float(v)
    except (ValueError, OverflowError):  # a signalling NaN
        number = float("nan")
    if number != number:  # NaN converts to 0 but is not integral
        raise MongoError("BadValue", "maxTimeMS has non-integral value")
    if number < 0 or number > _INT_MAX:
        raise MongoError("BadValue", "maxTimeMS is out of range")
    if isinstance(v, float) and number != int(number):
        raise MongoError("BadValue", "maxTimeMS has non-integral value")
    return int(number)
