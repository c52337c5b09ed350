"""`--data-dir`: wiring the store (shardsim.persistence) into a cluster's start-up."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from mongosim.oplog import bsonutil
from mongosim.shardsim.persistence import PersistenceError, Store

if TYPE_CHECKING:
    from mongosim.core import ClusterCore, ClusterOptions

log = logging.getLogger("mongosim.durability")
USERS_FILE = "users.bin"


def open_store(opts: "ClusterOptions") -> tuple[Store, list[str] | None]:
    """Lock and load the data directory; the saved node names (None for a new directory)."""
    store = Store(opts.data_dir)
    saved = store.node_names
    if saved is not None:
        sharded = "config" in saved
        if sharded != (opts.topology == "sharded"):
            store.close()
            raise PersistenceError(f"{opts.data_dir} holds a {'sharded' if sharded else 'replset'} cluster; "
                                   f"it cannot be served as {opts.topology}")
        if sharded and len(saved) - 1 != opts.shards:
            log.warning("%s holds %d shards; --shards %d ignored", opts.data_dir, len(saved) - 1, opts.shards)
    return store, saved


def finish_restore(core: "ClusterCore") -> None:
    """After every node is built: replay the journal, refresh the router, start the flusher."""
    store = core.store
    n = store.replay()
    if store.restored is not None:
        log.info("restored %s: %d journal records replayed%s", store.dir, n,
                 f"; stopped at {store.stopped_at}" if store.stopped_at else "")
    if core.router is not None:  # a shard removed before the restart is no shard of the cluster
        docs = core.config.catalog.collection("config", "shards")
        listed = {d["_id"] for d in docs.docs.values()} if docs is not None else set()
        for name in [n for n in core.router.registry.nodes if n not in listed]:
            core.router.registry.retire(name, 0)
    for router in core.routers:
        for node in core.nodes.values():
            router.clock.advance(node.clock.key)
        router.refresh_catalog()
    keep_users(core)
    core.nursery.start_soon(store.run, name="data-dir-flusher")


def keep_users(core: "ClusterCore") -> None:
    """The users and roles: those saved in the data directory come back (over a `--users` entry of
    the same name), and every change is saved before the command that made it is answered."""
    auth = getattr(core.frontend, "auth", None)
    if auth is None:
        return
    users, store = auth.store, core.store
    saved = store.read_record_file(USERS_FILE)
    if saved is not None:
        users.restore(bsonutil.decode(saved))
    users.on_change.append(lambda: store.write_record_file(USERS_FILE, bsonutil.encode(users.export())))


def status(core: "ClusterCore") -> dict[str, Any]:
    store = core.store
    return {"dir": str(store.dir), "generation": store.gen, "snapshots": store.snapshots_written,
            "replayed": store.replayed, "stoppedAt": store.stopped_at}
