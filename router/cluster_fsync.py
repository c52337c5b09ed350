"""fsync and fsyncUnlock through mongos (s/commands/cluster_fsync_cmd.cpp, cluster_fsync_unlock_cmd.cpp).

Both go to the config server and every shard (their primaries: shardsim/fsync.py
does the work) and report each one's reply under `raw`, keyed by its connection
string (`shard00/host:port,...`), as appendRawResponses does.  fsync answers
`{numFiles: 1, all: {raw}}` and, with `lock: true` (sent on with `forBackup:
true`), locks the whole cluster against writes; if a node fails, the nodes
already locked are unlocked again and the reply is `ok: 0` with the errors as
errmsg.  fsyncUnlock answers `{raw}`; a node that was not locked makes it
`ok: 0` with the errors as errmsg.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mongosim.oplog.errors import MongoError
from mongosim.router.command_registry import router_command
from mongosim.router.request import Request
from mongosim.shardsim.query.fmt import bson_str

if TYPE_CHECKING:
    from mongosim.router.mongos import Router


def _connection_string(name: str, node: Any) -> str:
    rs = getattr(node, "replica_set", None)
    return rs.connection_string() if rs is not None else f"{name}/{node.host}"


async def _scatter(router: Router, cmd: dict) -> tuple[dict, dict]:
    """`cmd` on the config server and each shard: (raw replies by connection string, errmsgs of the failed)."""
    raw: dict[str, dict] = {}
    errors: dict[str, str] = {}
    targets = [("config", router.config_remote)] + [(n, router.shard(n)) for n in sorted(router.shards)]
    for name, remote in targets:
        key = _connection_string(name, remote.node)
        try:
            reply = await remote.command("admin", dict(cmd))
        except MongoError as err:
            reply = {"ok": 0.0, "errmsg": err.errmsg, "code": err.code, "codeName": err.code_name}
        reply = {k: v for k, v in reply.items() if not k.startswith("_") and k not in ("$clusterTime", "operationTime")}
        raw[key] = reply
        if not reply.get("ok"):
            errors[key] = reply.get("errmsg", "")
    return raw, errors


def _admin_only(req: Request) -> None:
    if req.db != "admin":
        raise MongoError("Unauthorized", f"{req.name} may only be run against the admin database.")


@router_command("fsync")
async def cmd_fsync(router: Router, req: Request) -> dict:
    _admin_only(req)
    lock = bool(req.cmd.get("lock"))
    cmd: dict[str, Any] = {"fsync": 1}
    if lock:
        cmd.update(lock=True, forBackup=True)
    raw, errors = await _scatter(router, cmd)
    reply: dict[str, Any] = {"numFiles": 1, "all": {"raw": raw}}
    if errors:
        if lock:
            await _scatter(router, {"fsyncUnlock": 1})
        return {**reply, "ok": 0.0, "errmsg": bson_str(errors)}
    return {**reply, "ok": 1.0}


@router_command("fsyncUnlock")
async def cmd_fsync_unlock(router: Router, req: Request) -> dict:
    _admin_only(req)
    raw, errors = await _scatter(router, {"fsyncUnlock": 1})
    if errors:
        return {"raw": raw, "ok": 0.0, "errmsg": bson_str(errors)}
    return {"raw": raw, "ok": 1.0}
