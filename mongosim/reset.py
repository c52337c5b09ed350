"""Reset a running cluster between tests: what one test left behind must not reach the next.

The pytest plugin's fixtures call this before each test (unless the test opts out), on a cluster
shared by the whole session — starting a cluster per test would cost ~40 ms and its first change
event; a reset costs a few milliseconds (`benchmarks/reset.py` measures it). In order:

1. Cursors: every cursor on the router and on every node is killed (change streams included; an
   operation still waiting on one fails with CursorKilled). A driver that still holds one gets
   CursorNotFound on its next getMore, as after a server restart.
2. Transactions: every open transaction is ended (the router's, aborted on its participants; a
   node's own, in a replica set), so no document stays locked by a test that is gone.
3. Faults: the shards' injected faults, paused noop writers and clock skews are cleared (skews back
   to the cluster's options), and so are failpoints set with `configureFailPoint`.
4. Data: every user database is dropped with `dropDatabase` through the front door — the real
   command, so chunks and collection metadata go with it; `admin`, `config` and `local` stay.
   Zones go too: every zone range and every shard's zones (router/zones.py).

What a reset keeps: the shards (a shard added by a test stays: give such a test its own cluster
with `@pytest.mark.mongosim(isolated=True)`), users and roles, the oplogs (a later stream that starts now
does not see the old events; one resuming from an old token still can), the cluster clock.
"""

from __future__ import annotations

from typing import Any

from mongosim.faults import abort_open_transactions
from mongosim.oplog.errors import MongoError
from mongosim.router.failpoints import FailPoints
from mongosim.testing.client import AsyncClient

SYSTEM_DATABASES = ("admin", "config", "local")


async def reset_cluster(core: Any) -> list[str]:
    """Reset `core` (a running `ClusterCore`, on its own event loop); returns the databases dropped."""
    router = core.router
    frontend = core.frontend
    # 1. cursors
    interrupt = MongoError("CursorKilled", "cursor killed: the cluster was reset between tests")
    if router is not None:
        router.cursors.kill_all(interrupt)
    for node in core.nodes.values():
        node.cursors.kill_all(interrupt)
    # 2. transactions
    if router is not None and router.txns is not None:
        await router.txns.end_sessions({"endSessions": [txn.lsid for txn in list(router.txns._txns.values())]})
    for node in core.nodes.values():
        abort_open_transactions(node)
    # 3. faults, skews, failpoints
    if core.faults is not None:
        core.faults.clear()
    for name, node in core.nodes.items():
        node.noop_paused = False
        node.wall.skew = core.opts.skews.get(name, 0.0)
    frontend.failpoints = FailPoints()
    # 4. user databases, dropped by the cluster itself: with --auth its own commands are not checked
    # (nothing else runs meanwhile: the fixtures reset between tests, with the last test's clients closed)
    auth = getattr(frontend, "auth", None)
    enforced = auth is not None and auth.enabled
    if enforced:
        auth.enabled = False
    try:
        client = AsyncClient(frontend)
        listed = await client.admin({"listDatabases": 1, "nameOnly": True})
        dropped = [d["name"] for d in listed["databases"] if d["name"] not in SYSTEM_DATABASES]
        for name in dropped:
            await client.command(name, {"dropDatabase": 1})
        if router is not None and router.config is not None:
            await _clear_zones(router)
    finally:
        if enforced:
            auth.enabled = True
    return dropped


async def _clear_zones(router: Any) -> None:
    """No zone range left (a range may name a namespace that never existed), and no shard in a zone."""
    from mongosim.router.sharding import config_write

    shards = router.config.catalog.collection("config", "shards")
    tags = router.config.catalog.collection("config", "tags")
    if tags is not None and len(tags):
        await config_write(router, {"delete": "tags", "deletes": [{"q": {}, "limit": 0}]})
    if shards is not None and any(d.get("tags") for d in shards.docs.values()):
        await config_write(router, {"update": "shards", "updates": [
            {"q": {"tags": {"$exists": True}}, "u": {"$unset": {"tags": 1}}, "multi": True}]})
