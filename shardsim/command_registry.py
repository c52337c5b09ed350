"""The node's command table: handlers register here by name; the node dispatches from it.

Command modules (reads, writes, ddl, ...) decorate their handlers with
`@command("find")`; `Node.run_command` looks the name up in `COMMANDS`.  The
modules that register are imported once, by `shardsim.commands`, which the
node imports: nothing a command module imports leads back to the node.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Awaitable, Callable

from mongosim.shardsim.operation_context import OpCtx

if TYPE_CHECKING:
    from mongosim.shardsim.node import Node

Handler = Callable[["Node", OpCtx], Awaitable[dict] | dict]

COMMANDS: dict[str, Handler] = {}


def command(*names: str) -> Callable[[Handler], Handler]:
    """Register a node command handler under one or more (case-sensitive) names."""

    def deco(fn: Handler) -> Handler:
        for n in names:
            COMMANDS[n] = fn
        return fn

    return deco
