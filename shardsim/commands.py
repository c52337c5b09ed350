"""Every command a node serves: importing this module registers them all.

The one place that imports the command modules (they register into
`shardsim.command_registry`); `shardsim.node` imports it, and no command
module imports the node back.
"""

from mongosim.shardsim import (  # noqa: F401
    bulk_write,
    capped_utils,
    coll_mod,
    collection_validation,
    dbhash,
    current_op_stage,
    ddl,
    fsync,
    kill_op,
    log_rotate,
    map_reduce,
    profiler,
    explain_cmd,
    index_stats_stage,
    plan_cache_commands,
    plan_cache_stats_stage,
    reads,
    rename_collection,
    repl_commands,
    script_engine,
    search_indexes,
    sharding_ops,
    storage_stats,
    sync_from,
    top,
    txn_commands,
    writes,
)
from mongosim.shardsim.changestream import aggregate  # noqa: F401
from mongosim.shardsim.command_registry import COMMANDS

__all__ = ["COMMANDS"]
