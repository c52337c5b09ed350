"""compact through mongos (s/commands/cluster_compact_cmd.cpp): refused.

mongos registers a `compact` command only to refuse it: compaction is a
member's maintenance, run on each shard's members one by one.  Whatever its
arguments, it answers CommandNotSupported (115) "compact not allowed through
mongos".  (A replica-set member's own compact is not emulated: CommandNotFound.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mongosim.oplog.errors import MongoError
from mongosim.router.command_registry import router_command
from mongosim.router.request import Request

if TYPE_CHECKING:
    from mongosim.router.mongos import Router


@router_command("compact")
async def cmd_compact(router: Router, req: Request) -> dict:
    raise MongoError("CommandNotSupported", "compact not allowed through mongos")
