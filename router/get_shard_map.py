"""getShardMap on mongos: the shards the router's shard registry knows (cluster_get_shard_map_cmd.cpp,
ShardRegistry::toBSON).

`map`: each shard's id -> its connection string, in shard id order, then the config server's (`config`);
`hosts`: each member's `host:port` -> the shard id; `connStrings`: each connection string -> the shard
id (the server keeps those two in hash maps, so their order is unspecified; mongosim sorts them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mongosim.router.command_registry import router_command
from mongosim.router.request import Request
from mongosim.router.sharding import admin_only, shard_document

if TYPE_CHECKING:
    from mongosim.router.mongos import Router


def _config_connection_string(router: Router) -> str:
    config = router.config
    rs = config.replica_set
    return rs.connection_string() if rs is not None else f"config/{config.host}"


@router_command("getShardMap")
async def cmd_get_shard_map(router: Router, req: Request) -> dict:
    admin_only(req)
    shards = {name: shard_document(router, name)["host"] for name in sorted(router.shards)}
    shards["config"] = _config_connection_string(router)
    hosts: dict[str, str] = {}
    for shard_id, conn in shards.items():
        for host in conn.partition("/")[2].split(","):
            hosts[host] = shard_id
    return {"map": shards, "hosts": dict(sorted(hosts.items())),
            "connStrings": dict(sorted((conn, shard_id) for shard_id, conn in shards.items())), "ok": 1.0}
