"""The router's command table: handlers register here by name; the router dispatches from it.

Command modules decorate their handlers with `@router_command("find")` (and an
aggregate option that hands the whole command to its own module, such as
`$_passthroughToShard`, with `@aggregate_option`); they are imported once, by `router.commands`, which `router.mongos` imports, so no
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


# Aggregate options that hand the whole aggregate to the module that registered them (checked by
# `aggregate` before its own forms): `$_passthroughToShard` (router/merge/passthrough_to_shard.py).
AGGREGATE_OPTIONS: dict[str, RouterHandler] = {}


def aggregate_option(name: str) -> Callable[[RouterHandler], RouterHandler]:
    """Register the handler of an aggregate carrying the option `name`."""

    def deco(fn: RouterHandler) -> RouterHandler:
        AGGREGATE_OPTIONS[name] = fn
        return fn

    return deco
