"""`validate` through mongos (the server's cluster ValidateCmd).

The command goes to every shard holding the collection.  Each shard's reply
is kept under `raw`, keyed by shard name.  For an unsharded collection the
reply is its one shard's, with `raw` after it; for a sharded one it is
`{valid: <every shard's valid>, raw}`.  A shard's error fails the command
(the first one, as the server raises it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mongosim.oplog.errors import MongoError
from mongosim.router.command_registry import router_command
from mongosim.router.commands_ddl import shards_holding
from mongosim.router.request import GENERIC_FIELDS, Request
from mongosim.shardsim.create_collection import check_namespace

if TYPE_CHECKING:
    from mongosim.router.mongos import Router


@router_command("validate")
async def cmd_validate(router: Router, req: Request) -> dict:
    name = check_namespace(req.db, req.cmd["validate"])
    ns = f"{req.db}.{name}"
    primary = router.catalog.primary_of(req.db)
    holders = shards_holding(router, req.db, name) or ([primary] if primary else [])
    if not holders:
        raise MongoError("NamespaceNotFound", f"Collection '{ns}' does not exist to validate.")
    cmd = {k: v for k, v in req.cmd.items() if k not in GENERIC_FIELDS}
    raw: dict[str, dict] = {}
    first_error: MongoError | None = None
    for shard in holders:
        try:
            reply = await router.shard(shard).command(req.db, dict(cmd))
        except MongoError as err:
            first_error = first_error or err
            raw[shard] = {"error": f"{err.code_name}: {err.errmsg}"}
            continue
        raw[shard] = {k: v for k, v in reply.items() if not k.startswith("_")}
    if first_error is not None:
        raise first_error
    if router.catalog.routing(ns) is None:
        out = {k: v for k, v in raw[holders[0]].items() if k != "ok"}
    else:
        out = {"valid": all(r.get("valid") for r in raw.values())}
    out["raw"] = raw
    out["ok"] = 1.0
    return out
