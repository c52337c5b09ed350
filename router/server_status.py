"""serverStatus: the process's counters and state, section by section (db/commands/server_status*.cpp).

Each front door (a mongos, a replica-set member) keeps its `ServerCounters`:
the wire server (router/server.py) counts every request (`network.numRequests`,
bytes in and out), every operation by kind (`opcounters`: insert and update and
delete per statement, query per find, getmore, command for the rest) and every
command that failed (`asserts.user`).  `server_status` answers with the base
fields (host, version, process, pid, uptime..., connections) and the sections:
`asserts`, `mem` (resident and virtual MB of the process), `network`,
`opcounters`, and on a mongod `opcountersRepl` and `repl` (its replica set as
hello describes it), on a mongos `sharding` (the config server's connection
string, the last config optime seen, the chunk size).  A section
named with a false value in the command (`{serverStatus: 1, repl: 0}`) is left
out, as the server's ServerStatusSection::includeByDefault is overridden.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bson import Int64

__all__ = ["ServerCounters", "server_status_sections"]

_PER_STATEMENT = {"insert": ("insert", "documents"), "update": ("update", "updates"),
                  "delete": ("delete", "deletes")}


@dataclass
class ServerCounters:
    """A front door's counters since it started."""

    opcounters: dict[str, int] = field(default_factory=lambda: dict.fromkeys(
        ("insert", "query", "update", "delete", "getmore", "command"), 0))
    user_asserts: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    requests: int = 0

    def note_command(self, name: str, cmd: dict) -> None:
        """One command received: its operations counted as the server's OpCounters count them."""
        kind = _PER_STATEMENT.get(name)
        if kind is not None:
            items = cmd.get(kind[1])
            self.opcounters[kind[0]] += len(items) if isinstance(items, list) else 1
        elif name == "find":
            self.opcounters["query"] += 1
        elif name == "getMore":
            self.opcounters["getmore"] += 1
        else:
            self.opcounters["command"] += 1


def _mem() -> dict[str, Any]:
    """Resident and virtual size in MB (/proc/self/status: VmRSS, VmSize)."""
    out: dict[str, Any] = {"bits": 64}
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as f:
            status = dict(line.split(":", 1) for line in f if ":" in line)
        out["resident"] = int(status["VmRSS"].split()[0]) // 1024
        out["virtual"] = int(status["VmSize"].split()[0]) // 1024
        out["supported"] = True
    except (OSError, KeyError, ValueError, IndexError):
        out["supported"] = False
    return out


def server_status_sections(counters: ServerCounters, cmd: dict, *, repl: dict | None = None,
                           sharding: dict | None = None, is_mongos: bool) -> dict[str, Any]:
    """The sections after the base fields, in the server's order; those the command turns off left out."""
    sections: dict[str, Any] = {
        "asserts": {"regular": 0, "warning": 0, "msg": 0, "user": counters.user_asserts, "tripwire": 0,
                    "rollovers": 0},
        "mem": _mem(),
        "network": {"bytesIn": Int64(counters.bytes_in), "bytesOut": Int64(counters.bytes_out),
                    "physicalBytesIn": Int64(counters.bytes_in), "physicalBytesOut": Int64(counters.bytes_out),
                    "numSlowDNSOperations": Int64(0), "numSlowSSLOperations": Int64(0),
                    "numRequests": Int64(counters.requests)},
        "opcounters": {k: Int64(v) for k, v in counters.opcounters.items()},
    }
    if not is_mongos:
        sections["opcountersRepl"] = {k: Int64(0) for k in counters.opcounters}
    if repl is not None:
        sections["repl"] = repl
    if sharding is not None:
        sections["sharding"] = sharding
    return {name: value for name, value in sections.items() if _included(cmd, name)}


def _included(cmd: dict, name: str) -> bool:
    if name not in cmd:
        return True
    v = cmd[name]
    return bool(v) if isinstance(v, (bool, int, float)) else True
