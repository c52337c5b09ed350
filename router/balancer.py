"""The balancer: moves the chunks of draining shards off them, and chunks into their zones.

The server's balancer runs on the config server primary in rounds: every
10 s, or 1 s after a round that moved something
(kBalanceRoundDefaultInterval / kShortBalanceRoundInterval).  mongosim's
balancer does the first two of the server's three duties (BalancerPolicy::balance):

1. drain: a shard being removed (`draining: true` in `config.shards`, set by
   removeShard) has every chunk it owns migrated to the other shards, each to
   the shard that owns the fewest chunks of that collection (in the chunk's
   zone, if it has one);
2. zones (router/zones.py): chunks are split at the bounds of the
   collection's zone ranges, and every chunk in a zone range that sits on a
   shard outside the zone moves to the zone's shard owning the fewest chunks.

Its AutoMerger (router/auto_merger_policy.py) merges the chunks that have
long stayed together on a shard.  It does not even out chunk counts between
shards (a test's chunk placement stays as the test made it, zones and the
AutoMerger aside).  A round starts at once when a shard
starts draining or a zone changes (mongosim does not make you wait for the
next round).

`balancerStart`, `balancerStop`, `balancerStatus` switch and report it
(`config.settings` `{_id: "balancer", mode, stopped}`); with the balancer
stopped, draining waits for moveChunk / moveRange by hand, as on a real
cluster.  Migrations are run by the config server's own router (its catalog
cache and remotes), under the cluster's DDL lock like any moveChunk.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import trio
from bson import Int64

from mongosim.router.command_registry import router_command
from mongosim.router.request import Request
from mongosim.oplog.errors import MongoError
from mongosim.router import zone_info as zones
from mongosim.router.auto_merger_policy import AutoMergerPolicy
from mongosim.router.sharding import admin_only, config_write, migrate_chunk, split_chunk

if TYPE_CHECKING:
    from mongosim.router.mongos import Router

log = logging.getLogger(__name__)

ROUND_INTERVAL_S = 10.0  # kBalanceRoundDefaultInterval
SHORT_ROUND_INTERVAL_S = 1.0  # kShortBalanceRoundInterval, after a round that moved chunks


class Balancer:
    def __init__(self, router: Router) -> None:
        self.router = router  # the config server's router
        self.mode = "full"
        self.rounds = 0
        self.in_round = False
        self._wake = trio.Event()
        self.auto_merger = AutoMergerPolicy(router, lambda: self.mode)
        router.manager.balancer = self

    def wake(self) -> None:
        self._wake.set()

    async def run(self, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """The balancer, and beside it its AutoMerger (router/auto_merger_policy.py), until cancelled;
        started once the AutoMerger is."""
        async with trio.open_nursery() as nursery:
            await nursery.start(self.auto_merger.run, name="auto-merger")
            task_status.started()
            await self._balance()

    async def _balance(self) -> None:
        """Balance in rounds.  With no shard draining and every zone kept there is
        nothing for it to do, and it sleeps until woken (a shard starts draining, a zone changes, the
        balancer is started).  A round that fails is retried after the round interval."""
        while True:
            await self._wake.wait()
            self._wake = trio.Event()
            interval = 0.0
            while self.mode != "off" and self.has_work():
                with trio.move_on_after(interval):
                    await self._wake.wait()
                self._wake = trio.Event()
                try:
                    moved = await self.round()
                except MongoError as err:  # (a failed migration or split: the next round tries again, as the
                    log.warning("balancer round failed: %s", err)  # server's balancer logs and goes on)
                    moved = 0
                interval = SHORT_ROUND_INTERVAL_S if moved else ROUND_INTERVAL_S

    def draining_shards(self) -> list[str]:
        shards = self.router.config.catalog.collection("config", "shards")
        return sorted(d["_id"] for d in shards.docs.values() if d.get("draining")) if shards else []

    def has_work(self) -> bool:
        """A shard is draining, or a collection's chunks are not split or placed by its zones."""
        if self.draining_shards():
            return True
        router = self.router
        router.refresh_catalog()
        for ns, routing in router.catalog.collections.items():
            ranges = zones.zone_ranges(router, ns)
            if ranges and (zones.split_points(routing, ranges) or zones.violations(router, routing, ranges)):
                return True
        return False

    async def round(self) -> int:
        """One balancer round: every chunk on a draining shard to the least loaded other shard (of its
        zone), then each collection split and placed by its zones.  Returns how many chunks moved."""
        router = self.router
        self.in_round = True
        moved = 0
        try:
            router.refresh_catalog()
            for ns in sorted(router.catalog.collections):
                while True:
                    async with router._ddl_lock:
                        step = await self._step(ns)
                    if step is None:
                        break
                    moved += step
        finally:
            self.in_round = False
            self.rounds += 1
        return moved

    async def _step(self, ns: str) -> int | None:
        """One split or migration of `ns` (1 if a chunk moved, 0 for a split); None when it needs none."""
        router = self.router
        router.refresh_catalog()
        routing = router.catalog.routing(ns)
        if routing is None:
            return None
        draining = set(self.draining_shards())
        ranges = zones.zone_ranges(router, ns)
        splits = zones.split_points(routing, ranges)
        if splits:
            chunk, bound = splits[0]
            await split_chunk(router, routing, chunk, bound)
            return 0
        chunk = next((c for c in routing.chunks if c.shard in draining), None)
        zone = zones.zone_of(ranges, chunk) if chunk is not None else ""
        if chunk is None:
            chunk, zone = next(iter(zones.violations(router, routing, ranges)), (None, ""))
        if chunk is None:
            return None
        targets = zones.zone_shards(router, zone) if zone else [s for s in router.shards if s not in draining]
        if not targets:
            return None
        counts = {s: 0 for s in targets}
        for c in routing.chunks:
            if c.shard in counts:
                counts[c.shard] += 1
        to = min(targets, key=lambda s: (counts[s], s))
        await migrate_chunk(router, routing, chunk, to)
        return 1


def _balancer(router: Router) -> Balancer | None:
    return router.manager.balancer


@router_command("balancerStatus")
async def cmd_balancer_status(router: Router, req: Request) -> dict:
    """`{mode, inBalancerRound, numBalancerRounds, term}`: `term` is the config server primary's (one here)."""
    b = _balancer(router)
    if b is None:
        return {"mode": "off", "inBalancerRound": False, "numBalancerRounds": Int64(0), "term": Int64(1), "ok": 1.0}
    return {"mode": b.mode, "inBalancerRound": b.in_round, "numBalancerRounds": Int64(b.rounds), "term": Int64(1),
            "ok": 1.0}


MAX_CHUNK_SIZE_MB = 128.0  # the default chunk size (config.settings {_id: "chunksize"} may change it)


@router_command("balancerCollectionStatus")
async def cmd_balancer_collection_status(router: Router, req: Request) -> dict:
    """Is the collection as the balancer wants it (Balancer::getBalancerStatusForNs)?  The first reason it
    is not: `draining` (chunks on a shard being removed), `zoneViolation` (a chunk across a zone range's
    bound, or outside its zone's shards); mongosim's balancer wants nothing else.
    `chunkSize` is the collection's maximum chunk size in MB."""
    admin_only(req)
    ns = req.cmd[req.name]
    if not isinstance(ns, str) or "." not in ns or ns.startswith(".") or ns.endswith("."):
        raise MongoError("InvalidNamespace", f"Invalid namespace specified '{ns}'")
    colls = router.config.catalog.collection("config", "collections")
    doc = colls.get(ns) if colls is not None else None
    if doc is None or doc.get("dropped") or doc.get("unsplittable"):
        raise MongoError("NamespaceNotSharded", "Collection unsharded or undefined")
    settings = router.config.catalog.collection("config", "settings")
    chunk_size = (settings.get("chunksize") if settings is not None else None) or {}
    size_mb = float(doc.get("maxChunkSizeBytes", 0)) / (1024 * 1024) or float(chunk_size.get("value", MAX_CHUNK_SIZE_MB))
    reply: dict = {"chunkSize": size_mb, "balancerCompliant": True}
    draining = set(_balancer(router).draining_shards()) if _balancer(router) is not None else set()
    chunks = router.config.catalog.collection("config", "chunks")
    if draining and chunks is not None and any(bytes(c["uuid"]) == bytes(doc["uuid"]) and c["shard"] in draining
                                               for c in chunks.docs.values()):
        reply["balancerCompliant"] = False
        reply["firstComplianceViolation"] = "draining"
    else:
        router.refresh_catalog()
        routing = router.catalog.routing(ns)
        ranges = zones.zone_ranges(router, ns)
        if routing is not None and ranges and (zones.split_points(routing, ranges)
                                               or zones.violations(router, routing, ranges)):
            reply["balancerCompliant"] = False
            reply["firstComplianceViolation"] = "zoneViolation"
    reply["ok"] = 1.0
    return reply


@router_command("balancerStart", "balancerStop")
async def cmd_balancer_toggle(router: Router, req: Request) -> dict:
    b = _balancer(router)
    mode = "full" if req.name == "balancerStart" else "off"
    await config_write(router, {"update": "settings", "updates": [{
        "q": {"_id": "balancer"}, "u": {"$set": {"mode": mode, "stopped": mode == "off"}}, "upsert": True}]})
    if b is not None:
        b.mode = mode
        if mode == "full":
            b.wake()
        b.auto_merger.wake()  # (Balancer::notifyPersistedBalancerSettingsChanged)
    return {"ok": 1.0}
