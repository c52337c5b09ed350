"""The log as mongod writes it: one JSON object per line (`mongosim serve -v` logs every command).

mongod's structured log line (logv2) is

    {"t": {"$date": "2026-11-23T10:00:00.123+00:00"}, "s": "I", "c": "COMMAND", "id": 51803,
     "ctx": "conn12", "msg": "Slow query", "attr": {"type": "command", "ns": "shop.orders",
     "appName": "...", "command": {...}, "ok": 0, "errMsg": "...", "errName": "...", "errCode": 11000,
     "remote": "127.0.0.1:50312", "protocol": "op_msg", "durationMillis": 0}}

At verbosity 1 (`-v`) mongod logs every operation this way, slow or not (the "Slow query" message, id
51803, attributes in the order of the server's OpDebug::report). `CommandLog` wraps the wire service
and does the same for each command the server answers; `JsonLineFormatter` writes any `logging`
record in that shape (component from the logger's name, `attr` from the record's extras).

The log goes through the standard `logging` module (logger `mongosim.command`, level INFO), so an
in-process `Cluster` logs its commands too when that logger is enabled before it starts.
"""

from __future__ import annotations

import json
import logging
import time
from datetime import datetime, timezone
from typing import Any

from bson import json_util

from mongosim.oplog.errors import MongoError
from mongosim.shardsim import ram_log

log = logging.getLogger("mongosim.command")

SLOW_QUERY_ID = 51803  # LOGV2 id of mongod's operation log line
MAX_COMMAND_CHARS = 10 * 1024  # logv2's maxLogSizeKB: a longer attribute is truncated
# fields whose values mongod's snipForLogging hides (SASL payloads, passwords)
_SNIPPED = {"payload", "pwd", "digestPassword"}
_COMPONENTS = {"mongosim.command": "COMMAND", "mongosim.server": "NETWORK", "mongosim.durability": "STORAGE",
               "mongosim.persistence": "STORAGE"}
_SEVERITY = {logging.DEBUG: "D1", logging.INFO: "I", logging.WARNING: "W", logging.ERROR: "E", logging.CRITICAL: "F"}


def enabled() -> bool:
    return log.isEnabledFor(logging.INFO)


def namespace(db: str, cmd: dict) -> str:
    """The operation's namespace as mongod logs it: db.collection, or db.$cmd for a command on a database."""
    if not cmd:
        return f"{db}.$cmd"
    name, target = next(iter(cmd.items()))
    if name == "getMore" and isinstance(cmd.get("collection"), str):
        return f"{db}.{cmd['collection']}"
    if isinstance(target, str) and target and name not in ("mongosimFault",):
        return f"{db}.{target}"
    return f"{db}.$cmd"


def _command_for_log(cmd: dict) -> Any:
    shown = {k: ("###" if k in _SNIPPED else v) for k, v in cmd.items()}
    try:
        text = json_util.dumps(shown, json_options=json_util.RELAXED_JSON_OPTIONS)
    except Exception:  # a value JSON cannot hold: name the command only
        return {next(iter(cmd), "?"): "unrenderable"}
    if len(text) > MAX_COMMAND_CHARS:
        return {"$truncated": text[: MAX_COMMAND_CHARS - 3] + "...", "$size": len(text)}
    return json.loads(text)


def command_attr(db: str, cmd: dict, conn: Any, millis: int, error: MongoError | None) -> dict:
    """The attributes of one operation's log line, in mongod's order."""
    attr: dict[str, Any] = {"type": "command", "ns": namespace(db, cmd)}
    app = ((getattr(conn, "client", None) or {}).get("application") or {}).get("name")
    if app:
        attr["appName"] = app
    attr["command"] = _command_for_log(cmd)
    if error is not None:
        attr["ok"] = 0
        attr["errMsg"] = error.errmsg
        attr["errName"] = error.code_name
        attr["errCode"] = error.code
    attr["remote"] = getattr(conn, "peer", "")
    attr["protocol"] = "op_msg"
    attr["durationMillis"] = millis
    return attr


class CommandLog:
    """Wraps the wire service: logs every command it answers (with its duration and result code)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def run_command(self, db: str, cmd: dict, conn: Any) -> dict:
        start = time.perf_counter()
        try:
            reply = await self._inner.run_command(db, cmd, conn)
        except MongoError as err:
            self._log(db, cmd, conn, start, err)
            raise
        except Exception as exc:  # the wire server answers it as InternalError
            self._log(db, cmd, conn, start, MongoError("InternalError", f"mongosim internal error: {exc!r}"))
            raise
        self._log(db, cmd, conn, start, None)
        return reply

    @staticmethod
    def _log(db: str, cmd: dict, conn: Any, start: float, error: MongoError | None) -> None:
        millis = int((time.perf_counter() - start) * 1000)
        log.info("Slow query", extra={"component": "COMMAND", "log_id": SLOW_QUERY_ID,
                                      "ctx": f"conn{getattr(conn, 'id', 0)}",
                                      "attr": command_attr(db, cmd, conn, millis, error)})


class JsonLineFormatter(logging.Formatter):
    """Any log record as one mongod-style JSON line: t, s, c, id, ctx, msg[, attr]."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "t": {"$date": datetime.fromtimestamp(record.created, timezone.utc).isoformat(timespec="milliseconds")},
            "s": _SEVERITY.get(record.levelno, "I"),
            "c": getattr(record, "component", None) or _COMPONENTS.get(record.name, "-"),
            "id": getattr(record, "log_id", 0),
            "ctx": getattr(record, "ctx", None) or record.threadName,
            "msg": record.getMessage(),
        }
        attr = getattr(record, "attr", None)
        if record.exc_info:
            attr = {**(attr or {}), "error": self.formatException(record.exc_info)}
        if attr is not None:
            line["attr"] = attr
        return json.dumps(line, default=str)


# the lines logged are kept in the process's RamLog too (getLog: shardsim/ram_log.py)
ram_log.install(JsonLineFormatter())


def configure(verbose: bool, stream: Any = None) -> None:
    """`mongosim serve` logging: mongod-style JSON lines on stderr; `-v` adds every command."""
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonLineFormatter())
    root = logging.getLogger("mongosim")
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    ram_log.install(JsonLineFormatter())
    root.setLevel(logging.INFO if verbose else logging.WARNING)
    root.propagate = False
