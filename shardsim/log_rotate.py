"""logRotate: rotate the process's log files (db/commands/generic_servers.cpp, logv2/log_util.cpp rotateLogs).

`{logRotate: 1}` (any bool or number) runs every log rotator the process
registered; `{logRotate: "<type>"}` only that one.  Every process registers
"server" (logv2's global log domain, log_manager.cpp): it renames the file of
--logpath with the suffix and opens a new one — and, logging to the console
only, has nothing to rotate and succeeds.  "audit" exists only on an
enterprise server auditing to a file.  The server logs "Log rotation
initiated" (id 23166) with the suffix (".<UTC time>") and answers `{ok: 1}`.  A
type with no rotator fails with NoSuchKey (4) — and whatever the cause, a failed
rotation answers with its code and the masked message "Log rotation failed due
to one or more errors" (the detail goes to the log: "Unknown log type for
rotate", warning 6221500).  Its argument is an IDL variant [safeBool, string]:
another type is TypeMismatch, and the command is strict (an unknown field:
40415); parsed before the admin-only check.  mongod and mongos alike
(forRouter().forShard()).

mongosim logs to a stream (stderr, and the RamLog getLog reads), never to a
file, like a mongod started without --logpath: "server" is registered and
rotates nothing; there is no "audit".
"""

from __future__ import annotations

import logging
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Callable

from bson import Decimal128

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.command_registry import command
from mongosim.shardsim.generic_args import GENERIC_ARGUMENTS
from mongosim.shardsim.query.idl_errors import wrong_type

if TYPE_CHECKING:
    from mongosim.shardsim.node import Node
    from mongosim.shardsim.operation_context import OpCtx

__all__ = ["ROTATORS", "log_rotate"]

log = logging.getLogger("mongosim.control")


def _rotate_server_log(suffix: str) -> None:
    """The global log domain's rotation: no file sink (mongosim logs to a stream), nothing to rename."""


# log type -> its rotator (given the suffix: renames its file, opens a new one)
ROTATORS: dict[str, Callable[[str], None]] = {"server": _rotate_server_log}
_VARIANT = ("bool", "long", "int", "decimal", "double", "string")
ROTATE_ERRMSG = "Log rotation failed due to one or more errors"


def _log_type(value: Any) -> str | None:
    """The command's argument: a log type, or None (a bool or a number: every log)."""
    if isinstance(value, str):
        return value
    if isinstance(value, (bool, int, float, Decimal128)):
        return None
    raise wrong_type("logRotate.logRotate", value, _VARIANT)


def log_rotate(db: str, cmd: dict) -> dict:
    """The logRotate command on `db` (the process's, a mongod's or mongos's): `{ok: 1}` or the error."""
    log_type = _log_type(cmd["logRotate"])  # (the request is parsed before the admin-only check)
    for field in list(cmd)[1:]:
        if field not in GENERIC_ARGUMENTS:
            raise MongoError(40415, f"BSON field 'logRotate.{field}' is an unknown field.")
    if db != "admin":
        raise MongoError("Unauthorized", "logRotate may only be run against the admin database.")
    suffix = "." + datetime.now(timezone.utc).strftime("%Y-%m-%dT%H-%M-%S")
    log.info("Log rotation initiated", extra={"component": "CONTROL", "log_id": 23166,
                                              "attr": {"suffix": suffix, "logType": log_type}})
    if log_type is not None and log_type not in ROTATORS:
        log.warning("Unknown log type for rotate", extra={"component": "CONTROL", "log_id": 6221500,
                                                          "attr": {"logType": log_type}})
        raise MongoError("NoSuchKey", ROTATE_ERRMSG)
    for name, rotate in ROTATORS.items():
        if log_type is None or name == log_type:
            rotate(suffix)
    return {"ok": 1.0}


@command("logRotate")
def cmd_log_rotate(node: Node, ctx: OpCtx) -> dict:
    return log_rotate(ctx.db, ctx.cmd)
