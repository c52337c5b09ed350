"""User and role names, and the IDL-style argument checks the auth commands share.

`UserName` / `RoleName` follow the server's AuthName: displayed ``user@db``,
stored as ``{user, db}`` / ``{role, db}``, unambiguous name ``db.user`` (the
``_id`` of an ``admin.system.users`` document). Parsing from BSON gives the
server's BadValue messages (``UserName must contain a field named: db``, ...).

The ``BSON field 'cmd.field' ...`` errors are the server's IDL parser errors
(codes 40414 missing field, 40415 unknown field; 14 TypeMismatch is `query.idl_errors.wrong_type`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

from mongosim.oplog.error_codes import CODES
from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.idl_errors import wrong_type
from mongosim.shardsim.query.values import describe_type

__all__ = [
    "GENERIC_ARGUMENTS",
    "auth_error",
    "RoleName",
    "UserName",
    "check_fields",
    "missing_field",
    "parse_role_names",
    "parse_user_name",
    "unknown_field",
]

# Codes the auth layer raises; used when oplog.error_codes (a subset for now) lacks the name.
AUTH_CODES = {
    "BadValue": 2,
    "FailedToParse": 9,
    "UserNotFound": 11,
    "Unauthorized": 13,
    "TypeMismatch": 14,
    "ProtocolError": 17,
    "AuthenticationFailed": 18,
    "IllegalOperation": 20,
    "RoleNotFound": 31,
    "CommandNotFound": 59,
    "UnsupportedFormat": 100,
    "MechanismUnavailable": 334,
}


def auth_error(code: str | int, errmsg: str, **extra: Any) -> MongoError:
    """`MongoError` by name or number, keeping the right codeName for names missing from CODES."""
    if isinstance(code, str) and code not in CODES:
        err = MongoError(AUTH_CODES[code], errmsg, **extra)
        err.code_name = code
        Exception.__init__(err, f"{code} ({err.code}): {errmsg}")
        return err
    return MongoError(code, errmsg, **extra)


IDL_MISSING_FIELD = 40414
IDL_UNKNOWN_FIELD = 40415

# Arguments every command accepts (the server's generic_argument.idl), plus anything "$"-prefixed.
GENERIC_ARGUMENTS = frozenset(
    {
        "apiVersion",
        "apiStrict",
        "apiDeprecationErrors",
        "maxTimeMS",
        "readConcern",
        "writeConcern",
        "lsid",
        "clientOperationKey",
        "txnNumber",
        "autocommit",
        "startTransaction",
        "stmtId",
        "comment",
        "allowImplicitCollectionCreation",
        "databaseVersion",
        "shardVersion",
        "mayBypassWriteBlocking",
        "txnRetryCounter",
        "maxTimeMSOpOnly",
        "usesDefaultMaxTimeMS",
        "readPreference",
        "requestGossipRoutingCache",
        "rawData",
    }
)


class UserName(NamedTuple):
    user: str
    db: str

    def __str__(self) -> str:  # the server's display form
        return f"{self.user}@{self.db}"

    @property
    def unambiguous(self) -> str:
        return f"{self.db}.{self.user}"

    def to_doc(self) -> dict[str, str]:
        return {"user": self.user, "db": self.db}


class RoleName(NamedTuple):
    role: str
    db: str

    def __str__(self) -> str:
        return f"{self.role}@{self.db}"

    def to_doc(self) -> dict[str, str]:
        return {"role": self.role, "db": self.db}


def missing_field(command: str, field: str) -> MongoError:
    return auth_error(IDL_MISSING_FIELD, f"BSON field '{command}.{field}' is missing but a required field")


def unknown_field(command: str, field: str) -> MongoError:
    return auth_error(IDL_UNKNOWN_FIELD, f"BSON field '{command}.{field}' is an unknown field.")


def check_fields(command: str, cmd: dict[str, Any], known: Iterable[str]) -> None:
    """Raise the IDL unknown-field error for a field that is neither `known` nor generic."""
    allowed = set(known)
    for i, name in enumerate(cmd):
        if i == 0 or name in allowed or name in GENERIC_ARGUMENTS or name.startswith("$"):
            continue
        raise unknown_field(command, name)


def _parse_name_obj(kind: str, name_field: str, obj: dict[str, Any], strict: bool) -> tuple[str, str]:
    name = db = None
    for field, value in obj.items():
        if field in (name_field, "db"):
            if not isinstance(value, str):
                raise auth_error(
                    "BadValue",
                    f"{kind} must contain a string field named: {field}. But, has type {describe_type(value)}",
                )
            if (name if field == name_field else db) is not None:
                raise auth_error("BadValue", f"{kind} has more than one field named: {field}")
            if field == name_field:
                name = value
            else:
                db = value
        elif strict:
            # sic: the server's message lacks the closing quote
            raise auth_error("BadValue", f"{kind} contains an unknown field named: '{field}")
    if name is None:
        raise auth_error("BadValue", f"{kind} must contain a field named: {name_field}")
    if db is None:
        raise auth_error("BadValue", f"{kind} must contain a field named: db")
    return name, db


def parse_user_name(value: Any, dbname: str) -> UserName:
    """A user named by a string (on `dbname`) or by ``{user, db}``."""
    if isinstance(value, str):
        return UserName(value, dbname)
    if isinstance(value, dict):
        return UserName(*_parse_name_obj("UserName", "user", value, strict=True))
    raise auth_error("BadValue", "UserName must be either a string or an object")


def parse_role_name(value: Any, dbname: str) -> RoleName:
    """A role named by a string (on `dbname`) or by ``{role, db}`` (extra fields ignored, as the server does)."""
    if isinstance(value, str):
        return RoleName(value, dbname)
    if isinstance(value, dict):
        return RoleName(*_parse_name_obj("RoleName", "role", value, strict=False))
    raise auth_error("BadValue", "RoleName must be either a string or an object")


def parse_role_names(command: str, field: str, value: Any, dbname: str) -> list[RoleName]:
    """The ``roles`` array of a user management command, resolved against `dbname`."""
    if not isinstance(value, (list, tuple)):
        raise wrong_type(f"{command}.{field}", value, "array")
    return [parse_role_name(item, dbname) for item in value]
