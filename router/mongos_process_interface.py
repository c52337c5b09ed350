"""mongos's process interface: the foreign collections of a pipeline that runs on the router.

When mongos runs (part of) a pipeline itself — its collection is sharded, or a
`$lookup`/`$graphLookup`/`$unionWith` reads a sharded collection (8.0 allows a
sharded foreign collection outside transactions) — the stages' foreign reads
cross the shards.  Before the pipeline runs, mongos reads the database's view
definitions from its primary shard (`system.views`), and gathers every collection
the pipeline involves (`pipeline_shape.involved_collections`, a view's backing
collection in its place) from the shards that own it, inside the command's
transaction or snapshot when it has one; the stages then read them from memory
(`InMemoryProcessInterface`: a view's pipeline runs over its backing documents).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mongosim.router.commands_crud import _gather, _read_targets, _session_fields
from mongosim.router.request import Request
from mongosim.shardsim.query.process_interface import InMemoryProcessInterface

if TYPE_CHECKING:
    from mongosim.router.mongos import Router

__all__ = ["view_definitions", "backing_of", "gather_foreign"]


async def view_definitions(router: Router, db: str) -> dict[tuple[str, str], tuple[str, list]]:
    """{(db, view): (viewOn, pipeline)} of `db`, read from its primary shard's system.views."""
    primary = router.catalog.primary_of(db)
    if primary is None:
        return {}
    reply = await router.shard(primary).command(db, {"find": "system.views", "batchSize": 2**31 - 1})
    out = {}
    for v in reply["cursor"]["firstBatch"]:
        _, _, name = v["_id"].partition(".")
        out[(db, name)] = (v["viewOn"], list(v.get("pipeline") or []))
    return out


def backing_of(views: dict, db: str, name: str) -> str:
    """The collection under a chain of views (itself if `name` is not a view)."""
    seen = 0
    while (db, name) in views and seen <= 20:
        name = views[(db, name)][0]
        seen += 1
    return name


async def gather_foreign(router: Router, req: Request, db: str, names: list[str], views: dict
                         ) -> InMemoryProcessInterface:
    """A process interface holding every collection `names` (and the views among them) stand on."""
    collections = {}
    sharded = set()
    fields = _session_fields(req)
    for name in dict.fromkeys(backing_of(views, db, n) for n in names):
        ns = f"{db}.{name}"
        if router.catalog.routing(ns) is not None:
            sharded.add((db, name))
        shards = _read_targets(router, req, ns, None)
        collections[(db, name)] = await _gather(router, req, db, shards, {"find": name, **fields}) if shards else []
    for n in names:  # a view on a sharded collection counts as sharded for the transaction rule
        if (db, backing_of(views, db, n)) in sharded:
            sharded.add((db, n))
    return InMemoryProcessInterface(collections, views, sharded, in_transaction=req.cmd.get("autocommit") is False)
