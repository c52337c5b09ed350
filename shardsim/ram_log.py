"""The process's RamLogs: its last log lines kept in memory, which `getLog` answers from.

The server keeps named in-memory logs (logv2/ramlog.cpp): `global` holds the
last 1024 lines the process logged (each a JSON line, as in the log file),
`startupWarnings` the warnings of its start; each counts every line ever
written (`totalLinesWritten`), the ring only the newest.  Here the lines are the
`mongosim` loggers' records: `RamLogHandler` is a `logging.Handler` that the
command log (mongosim/command_log.py, `serve -v`) installs with its mongod-style
formatter, so the ring sees what the log shows.  One process runs every node of
an in-process cluster: they share the rings.

`get_log` is the getLog command (db/commands/generic_servers.cpp): `"*"` ->
`{names}`, a log's name -> `{totalLinesWritten, log}`, another name an errmsg
reply `"no RamLog named: ..."` without a code; an argument that is not a string
TypeMismatch.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from typing import Any

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.fmt import bson_str
from mongosim.shardsim.query.values import type_name

__all__ = ["RamLog", "RamLogHandler", "RAM_LOGS", "get_log", "clear_log", "install"]

MAX_LINES = 1024  # ramlog.cpp's kMaxLines


class RamLog:
    """A ring of the newest lines, and the count of all lines written."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._lines: deque[str] = deque(maxlen=MAX_LINES)
        self.total_lines_written = 0
        self._lock = threading.Lock()  # (logging may come from a helper thread)

    def write(self, line: str) -> None:
        with self._lock:
            self._lines.append(line)
            self.total_lines_written += 1

    def lines(self) -> list[str]:
        with self._lock:
            return list(self._lines)

    def clear(self) -> None:
        with self._lock:
            self._lines.clear()
            self.total_lines_written = 0


RAM_LOGS: dict[str, RamLog] = {name: RamLog(name) for name in ("global", "startupWarnings")}


class RamLogHandler(logging.Handler):
    """Every record it handles becomes a line of the `global` RamLog (formatted by its formatter)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            RAM_LOGS["global"].write(self.format(record))
        except Exception:  # (a log line that cannot be formatted is lost, never the command)
            self.handleError(record)


def install(formatter: logging.Formatter | None = None, logger: str = "mongosim") -> RamLogHandler:
    """Attach the (one) RamLogHandler to `logger`, with `formatter` when given; returns it."""
    target = logging.getLogger(logger)
    handler = next((h for h in target.handlers if isinstance(h, RamLogHandler)), None)
    if handler is None:
        handler = RamLogHandler()
        target.addHandler(handler)
    if formatter is not None:
        handler.setFormatter(formatter)
    return handler


def get_log(arg: Any) -> dict:
    if not isinstance(arg, str):
        raise MongoError("TypeMismatch", f"Argument to getLog must be of type String; found {bson_str(arg)} of type "
                                         f"{type_name(arg)}")
    if arg == "*":
        return {"names": list(RAM_LOGS), "ok": 1.0}
    log = RAM_LOGS.get(arg)
    if log is None:
        return {"ok": 0.0, "errmsg": f"no RamLog named: {arg}"}
    return {"totalLinesWritten": log.total_lines_written, "log": log.lines(), "ok": 1.0}


def clear_log(arg: Any) -> dict:
    """The test command clearLog: only `global` may be cleared."""
    if not isinstance(arg, str):
        raise MongoError("TypeMismatch", f"\"clearLog\" had the wrong type. Expected string, found {type_name(arg)}")
    if arg != "global":
        raise MongoError("InvalidOptions", "Only the 'global' log can be cleared")
    RAM_LOGS["global"].clear()
    return {"ok": 1.0}
