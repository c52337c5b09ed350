"""validate through mongos: every shard holding the collection validates its part.

The reply gathers each shard's answer under `raw` (keyed `<shard>/<host>`),
and is `valid` when all of them are (ClusterValidateCmd).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mongosim.oplog.errors import MongoError
from mongosim.router.command_registry import router_command
from mongosim.router.commands_ddl import shards_holding
from mongosim.router.request import GENERIC_FIELDS, Request

if TYPE_CHECKING:
    from mongosim.router.mongos import Router


@router_command("validate")
async def cmd_validate(router: Router, req: Request) -> dict:
    coll = req.cmd["validate"]
    if not isinstance(coll, str):
        raise MongoError("InvalidNamespace", f"collection name has invalid type {type(coll).__name__}")
    cmd = {k: v for k, v in req.cmd.items() if k not in GENERIC_FIELDS or k == "comment"}
    holders = shards_holding(router, req.db, coll)
    if not holders:
        primary = router.catalog.primary_of(req.db)
        if primary is None:
            raise MongoError("NamespaceNotFound", f"Collection '{req.db}.{coll}' does not exist to validate.")
        holders = [primary]
    raw = {}
    valid = True
    for shard in holders:
        reply = await router.shard(shard).command(req.db, cmd)
        raw[f"{shard}/{router.shard(shard).node.host}"] = {k: v for k, v in reply.items() if k != "ok"}
        valid = valid and bool(reply.get("valid"))
    return {"raw": raw, "valid": valid, "ok": 1.0}
