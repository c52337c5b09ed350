"""Every command the router serves: importing this module registers them all.

The one place that imports the command modules (they register into
`router.command_registry`); `router.mongos` and the replica-set front end
import it, nothing imports it back, and no command module imports the router.
"""

from mongosim.router import (  # noqa: F401
    balancer,
    bulk_write,
    check_metadata_consistency,
    clear_jumbo_flag,
    cluster_aggregate,
    cluster_compact,
    cluster_source_stages,
    cluster_storage_stats,
    cluster_explain,
    cluster_fsync,
    cluster_kill_op,
    cluster_validate,
    commands_admin,
    commands_crud,
    commands_ddl,
    configure_collection_balancing,
    feature_compatibility_version,
    get_shard_map,
    get_shard_version,
    map_reduce,
    merge_chunks,
    move_primary,
    remove_shard,
    search_indexes,
    sharding,
    transactions,
    views,
    zones,
)
from mongosim.router.command_registry import ROUTER_COMMANDS
from mongosim.router.merge import cluster_change_stream, passthrough_to_shard  # noqa: F401

__all__ = ["ROUTER_COMMANDS"]
