"""The handshake and server-information commands, as mongos 8.0 or a replica-set primary answers them.

`hello`/`isMaster` is what drivers classify a server by: a mongos says
`msg: "isdbgrid"` and has no `setName`; a replica-set primary reports
`setName`, `hosts`, `primary`, `me`.  Both report `topologyVersion` (which
turns on streaming monitoring), `logicalSessionTimeoutMinutes` (which turns on
sessions) and the wire versions (8.0 is maxWireVersion 25).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from bson import Binary, Int64, ObjectId, Timestamp

from mongosim.oplog import bsonutil
from mongosim.shardsim.build_info import GIT_VERSION, SERVER_VERSION

VERSION_ARRAY = [8, 0, 4, 0]
MAX_WIRE_VERSION = 25
LOGICAL_SESSION_TIMEOUT_MINUTES = 30
DUMMY_SIGNATURE = {"hash": Binary(b"\x00" * 20, 0), "keyId": Int64(0)}


@dataclass
class ServerIdentity:
    """Who this front door claims to be."""

    host: str = "localhost"
    port: int = 27017
    is_mongos: bool = True
    set_name: str | None = None
    process_id: ObjectId = field(default_factory=ObjectId)
    topology_counter: int = 0
    started_at: float = 0.0
    argv: list[str] = field(default_factory=lambda: list(sys.argv))
    parameters: dict[str, Any] = field(default_factory=dict)
    auth_mechanisms: list[str] = field(default_factory=lambda: ["SCRAM-SHA-1", "SCRAM-SHA-256"])

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def topology_version(self) -> dict:
        return {"processId": self.process_id, "counter": Int64(self.topology_counter)}


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None, microsecond=(datetime.now().microsecond // 1000) * 1000)


HELLO_NAMES = ("hello", "isMaster", "ismaster")


def is_streaming_hello(name: str, cmd: dict) -> bool:
    """An awaitable hello (`topologyVersion` + `maxAwaitTimeMS`): the server answers when its
    topology changes or the time is up.  It waits inside the command, so failCommand fires first."""
    return name in HELLO_NAMES and "topologyVersion" in cmd and "maxAwaitTimeMS" in cmd


def hello_reply(ident: ServerIdentity, cmd: dict, connection_id: int, *, last_write: dict | None = None,
                replica_set: dict | None = None) -> dict:
    """`replica_set`: a replica-set member's own fields (topologyVersion ... lastWrite, see
    router.replset), with `isWritablePrimary` under its legacy name `ismaster` for isMaster."""
    legacy = next(iter(cmd)).lower() == "ismaster"
    r: dict[str, Any] = {}
    if cmd.get("helloOk"):
        r["helloOk"] = True
    if ident.is_mongos:
        r["ismaster" if legacy else "isWritablePrimary"] = True
        r["msg"] = "isdbgrid"
        r["topologyVersion"] = ident.topology_version()
    elif replica_set is not None:
        for k, v in replica_set.items():
            r["ismaster" if legacy and k == "isWritablePrimary" else k] = v
    else:
        r["topologyVersion"] = ident.topology_version()
        r["hosts"] = [ident.address]
        r["setName"] = ident.set_name
        r["setVersion"] = 1
        r["ismaster" if legacy else "isWritablePrimary"] = True
        r["secondary"] = False
        r["primary"] = ident.address
        r["me"] = ident.address
        r["electionId"] = ObjectId("7fffffff0000000000000001")
        if last_write is not None:
            r["lastWrite"] = last_write
    r["maxBsonObjectSize"] = bsonutil.MAX_BSON_OBJECT_SIZE
    r["maxMessageSizeBytes"] = bsonutil.MAX_MESSAGE_SIZE_BYTES
    r["maxWriteBatchSize"] = bsonutil.MAX_WRITE_BATCH_SIZE
    r["localTime"] = _now()
    r["logicalSessionTimeoutMinutes"] = LOGICAL_SESSION_TIMEOUT_MINUTES
    r["connectionId"] = connection_id
    r["minWireVersion"] = 0
    r["maxWireVersion"] = MAX_WIRE_VERSION
    if not ident.is_mongos:
        r["readOnly"] = False
    mechs_for = cmd.get("saslSupportedMechs")
    if isinstance(mechs_for, str):
        r["saslSupportedMechs"] = list(ident.auth_mechanisms)
    r["ok"] = 1.0
    return r


def build_info() -> dict:
    """`javascriptEngine` is what the binary was built with (util/version_impl.tpl.cpp: a build-time
    string), "mozjs" whether or not `--noscripting` turned server-side JavaScript off."""
    return {
        "version": SERVER_VERSION,
        "gitVersion": GIT_VERSION,
        "modules": [],
        "allocator": "system",
        "javascriptEngine": "mozjs",
        "sysInfo": "deprecated",
        "versionArray": list(VERSION_ARRAY),
        "bits": 64,
        "debug": False,
        "maxBsonObjectSize": bsonutil.MAX_BSON_OBJECT_SIZE,
        "storageEngines": ["devnull", "wiredTiger"],
        "ok": 1.0,
    }


def cmd_line_opts(ident: ServerIdentity, config_db: str | None = None, javascript: bool = True) -> dict:
    """`config_db`: a mongos's config server, as its connection string (`configRepl/host:port,...`);
    `javascript` off (`--noscripting`) is the option `security.javascriptEnabled: false`."""
    parsed: dict[str, Any] = {"net": {"bindIp": ident.host, "port": ident.port}}
    if ident.is_mongos:
        parsed["sharding"] = {"configDB": config_db or "configRepl/localhost"}
    else:
        parsed["replication"] = {"replSet": ident.set_name}
    if not javascript:
        parsed["security"] = {"javascriptEnabled": False}
    parsed["setParameter"] = {"enableTestCommands": "1"}
    return {"argv": list(ident.argv), "parsed": parsed, "ok": 1.0}


def server_status(ident: ServerIdentity, uptime: float, connections: int, extra: dict | None = None) -> dict:
    r: dict[str, Any] = {
        "host": ident.address,
        "version": SERVER_VERSION,
        "process": "mongos" if ident.is_mongos else "mongod",
        "pid": Int64(os.getpid()),
        "uptime": float(int(uptime)),
        "uptimeMillis": Int64(int(uptime * 1000)),
        "uptimeEstimate": Int64(int(uptime)),
        "localTime": _now(),
        "connections": {"current": connections, "available": 838860, "totalCreated": connections},
    }
    if extra:
        r.update(extra)
    r["ok"] = 1.0
    return r


def cluster_time_doc(ts: Timestamp) -> dict:
    return {"clusterTime": ts, "signature": dict(DUMMY_SIGNATURE)}
