"""The search index commands on mongos: parsed, then refused as on a deployment without search
(the router runs the same check before any shard is asked; see shardsim/search_indexes.py)."""

from __future__ import annotations

from mongosim.router.command_registry import router_command
from mongosim.shardsim.search_indexes import SEARCH_INDEX_COMMANDS, refuse_search_index_command


async def _search_index_command(router, req) -> dict:
    return refuse_search_index_command(req.name, req.cmd)


router_command(*SEARCH_INDEX_COMMANDS)(_search_index_command)
