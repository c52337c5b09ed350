"""`mongosimStatus`: what a running sharded cluster holds, for `mongosim status`.

A test command on the router (like `mongosimFault`, refused when test commands are off):

    {mongosimStatus: 1}  ->  {shards: [{name, host, chunks}],
                              collections: [{ns, key, unique, chunks: {<shard>: n}}],
                              databases: [{name, primary}],
                              streams: [{id, ns, type, remotes: [...], gate: {...}}],
                              clusterTime, ok: 1}

Each open change stream (a `ClusterChangeStreamCursor` in the router's cursor table) is shown with
its remotes — the shard cursors and the config server's — each with its buffered events, its promise
(the cluster time of its postBatchResumeToken) and whether a getMore is in flight, and its gate: the
AsyncResultsMerger releases the smallest buffered event only once every remote has promised past it,
so the gate is `closed` while some remote's promise is below that event (`waitingOn` names them),
`open` when the event can go, and `empty` when nothing is buffered.

The command is registered here, in the app layer, from `mongosim.core` (no router module imports it).
"""

from __future__ import annotations

from typing import Any

from bson import Timestamp

from mongosim.oplog.clock import key_ts
from mongosim.oplog.errors import MongoError
from mongosim.oplog.resume_token import decode_resume_token
from mongosim.router.command_registry import router_command
from mongosim.router.mongos import Router
from mongosim.router.request import Request


def _token_time(key: str | None) -> Timestamp | None:
    if key is None:
        return None
    return decode_resume_token({"_data": key}).cluster_time


def _stream_type(cursor: Any) -> str:
    if isinstance(cursor.target, str):
        return "collection"
    return "cluster" if cursor.db == "admin" else "database"


def stream_status(cid: int, cursor: Any) -> dict:
    """One merged change stream: its remotes' buffers and promises, and its gate."""
    arm = cursor.arm
    remotes = [{"shard": rc.shard, "buffered": len(rc.buffer), "promise": _token_time(rc.promised_key),
                "inFlight": bool(rc.pending)} for rc in arm.remotes]
    fronts = [(rc.buffer[0][0], rc) for rc in arm.remotes if rc.buffer]
    if not fronts:
        gate: dict = {"state": "empty"}
    else:
        key, holder = min(fronts, key=lambda f: f[0])
        waiting = sorted(rc.shard for rc in arm.remotes if rc.promised_key is None or rc.promised_key < key)
        gate = {"state": "closed" if waiting else "open",
                "next": {"shard": holder.shard, "clusterTime": _token_time(key), "operationType": holder.buffer[0][4]},
                "waitingOn": waiting}
    return {"id": cid, "ns": cursor.ns, "type": _stream_type(cursor), "remotes": remotes, "gate": gate}


def cluster_status(router: Router) -> dict:
    """The status document (see the module docstring)."""
    catalog = router.catalog
    chunks_per_shard: dict[str, int] = {name: 0 for name in router.shards}
    collections = []
    for ns in sorted(catalog.collections):
        routing = catalog.collections[ns]
        per_shard: dict[str, int] = {}
        for chunk in routing.chunks:
            per_shard[chunk.shard] = per_shard.get(chunk.shard, 0) + 1
            chunks_per_shard[chunk.shard] = chunks_per_shard.get(chunk.shard, 0) + 1
        collections.append({"ns": ns, "key": dict(routing.pattern.key), "unique": routing.unique,
                            "chunks": dict(sorted(per_shard.items()))})
    shards = [{"name": name, "host": f"{name}/{remote.node.host}", "chunks": chunks_per_shard.get(name, 0)}
              for name, remote in sorted(router.shards.items())]
    databases = [{"name": name, "primary": d.primary} for name, d in sorted(catalog.databases.items())]
    streams = [stream_status(cid, cur) for cid, cur in sorted(router.cursors._cursors.items())
               if getattr(cur, "is_change_stream", False) and hasattr(cur, "arm")]
    return {"shards": shards, "collections": collections, "databases": databases, "streams": streams,
            "clusterTime": key_ts(router.clock.key)}


@router_command("mongosimStatus")
async def cmd_mongosim_status(router: Router, req: Request) -> dict:
    """Test command: the cluster's shards, chunks and open change streams (see the module docstring)."""
    if not router.identity.parameters.get("enableTestCommands", 1):
        raise MongoError("CommandNotFound", "no such command: 'mongosimStatus'")
    return {**cluster_status(router), "ok": 1.0}
