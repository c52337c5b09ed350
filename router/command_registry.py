"""The router's command table: handlers register here by name; the router dispatches from it.

Command modules decorate their handlers with `@router_command("find")`; they
are imported once, by `router.commands`, which `router.mongos` imports, so no
command module imports the router back (they name `Router` for types only).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Awaitable, Callable

from mongosim.router.request import Request

if TYPE_CHECKING:
    from mongosim.router.mongos import Router

RouterHandler = Callable[["Router", "Request"], Awaitable[dict]]
ROUTER_COMMANDS: dict[str, RouterHandler] = {}


def router_command(*names: str) -> Callable[[RouterHandler], RouterHandler]:
    """Register a router command handler under one or more (case-sensitive) names."""

    def deco(fn: RouterHandler) -> RouterHandler:
        for n in names:
            ROUTER_COMMANDS[n] = fn
        return fn

    return deco
