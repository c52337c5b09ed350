"""Helpers for several routers in one process (virtual time)."""

from __future__ import annotations

from mongosim.router.mongos import Router


def another_router(core, name: str = "router01") -> Router:
    """A second mongos of `core`'s cluster: its own cache, cursors and transactions."""
    router = Router(core.router.manager, name=name, instant_hwm=core.opts.instant_hwm)
    router.nursery = core.nursery
    router.auth = core.router.auth
    return router
