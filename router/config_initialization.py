"""The config database of a new cluster (ShardingCatalogManager::initializeConfigDatabaseIfNeeded).

When the config server first starts it writes `config.version`, the cluster's
identity: `{_id: 1, clusterId: ObjectId}` (since 5.0 without the old
`currentVersion`/`minCompatibleVersion` fields).  Tools read it to tell a
sharded cluster's config database from any other (mongosh's `sh.status()`
refuses a cluster without it).  Then the cluster's first shards are
registered in `config.shards`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bson import ObjectId

from mongosim.router.sharding import config_write, shard_document

if TYPE_CHECKING:
    from mongosim.router.mongos import Router

VERSION_ID = 1


async def initialize_config_database(router: Router, shards: list[str]) -> None:
    """`config.version` (once per cluster), then a `config.shards` document for each shard."""
    versions = router.config.catalog.collection("config", "version")
    if versions is None or versions.get(VERSION_ID) is None:
        await config_write(router, {"insert": "version", "documents": [{"_id": VERSION_ID, "clusterId": ObjectId()}]})
    if shards:
        await config_write(router, {"insert": "shards", "documents": [shard_document(router, n) for n in shards]})
