"""The balancer's AutoMerger (the server's AutoMergerPolicy, MongoDB 7.0+, on by default in 8.0): it merges,
on each shard, the runs of contiguous chunks that have stayed there longer than the history window.

It runs while the balancer is not off and `config.settings` `{_id: "automerge", enabled}` is not false
(absent: enabled; BalancerConfiguration::shouldBalanceForAutoMerge).  The config server's balancer checks
that every round (10 s, kBalanceRoundDefaultInterval, or at once on balancerStart / balancerStop /
configureCollectionBalancing); switching it on logs `autoMerge.enable` and starts an automerge round
right away, switching it off logs `autoMerge.disable` and drops the round (a merge waiting out its
throttle is not made).  A round starts again once
more than `autoMergerIntervalSecs` (a config server parameter, 3600) have passed since the last one
began, at the next balancer round.

A round (`autoMerge.start` … `autoMerge.end` in config.changelog, no namespace, no details):

1. for each shard (in shard id order), the collections of config.collections that are neither
   `enableAutoMerge: false`, nor `defragmentCollection: true`, nor `unsplittable: true`, with a chunk on
   that shard whose `onCurrentShardSince` is older than the config server's time less the history window;
2. shard by shard, each of those collections (the last found first) gets a mergeAllChunksOnShard of
   at most 1000 chunks (MAX_NUMBER_OF_CHUNKS_TO_MERGE), which logs a `merge` entry per merged run
   (router/merge_chunks.py); one that merged something, or met ConflictingOperationInProgress, is
   asked again once every listed shard is done, until none merges anything;
3. throttling: before a round's first merge, and before the first merge on each next shard (or
   pass), the AutoMerger waits until `autoMergerThrottlingMS` (15000) have passed since the previous
   merge it throttled.

mongosim runs the merges one after the other (the server keeps up to 10 in flight); time is the
cluster's virtual time, so a test moves its clock past the window and the interval.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Callable

import trio
from bson import Timestamp

from mongosim.oplog.errors import MongoError
from mongosim.router.merge_chunks import merge_all_chunks_on_shard, oldest_timestamp_supported_for_history
from mongosim.router.parameters import mongod_parameter
from mongosim.router.sharding_logging import log_change
from mongosim.router.zone_info import _config_docs

if TYPE_CHECKING:
    from mongosim.router.mongos import Router

log = logging.getLogger(__name__)

MAX_NUMBER_OF_CHUNKS_TO_MERGE = 1000  # AutoMergerPolicy::MAX_NUMBER_OF_CHUNKS_TO_MERGE


def auto_merge_enabled(router: Router) -> bool:
    """BalancerConfiguration::shouldAutoMerge: `config.settings` `{_id: "automerge", enabled}`, true when
    absent (a document whose `enabled` is not a boolean leaves the setting as it was: enabled here)."""
    settings = router.config.catalog.collection("config", "settings")
    doc = settings.get("automerge") if settings is not None else None
    return not (doc is not None and doc.get("enabled") is False)


def _older(t: Any, oldest: Timestamp) -> bool:
    return isinstance(t, Timestamp) and (t.time, t.inc) < (oldest.time, oldest.inc)


def namespaces_with_mergeable_chunks(router: Router) -> dict[str, list[str]]:
    """AutoMergerPolicy::_getNamespacesWithMergeableChunksPerShard: shard -> the collections (in
    config.collections order) that have a chunk on it older than the history window."""
    oldest = oldest_timestamp_supported_for_history(router)
    colls = [d for d in _config_docs(router, "collections")
             if d.get("enableAutoMerge") is not False and d.get("defragmentCollection") is not True
             and d.get("unsplittable") is not True and not d.get("dropped") and isinstance(d.get("uuid"), bytes)]
    chunks = [c for c in _config_docs(router, "chunks") if isinstance(c.get("uuid"), bytes)]
    out: dict[str, list[str]] = {}
    for shard in sorted(str(d["_id"]) for d in _config_docs(router, "shards")):
        old = {bytes(c["uuid"]) for c in chunks if c.get("shard") == shard
               and _older(c.get("onCurrentShardSince"), oldest)}
        found = [d["_id"] for d in colls if bytes(d["uuid"]) in old]
        if found:
            out[shard] = found
    return out


class AutoMergerPolicy:
    """The AutoMerger of the config server's balancer (`router`: the config server's own router)."""

    def __init__(self, router: Router, mode: Callable[[], str]) -> None:
        self.router = router
        self.mode = mode  # the balancer's mode ("full" or "off")
        # the config server primary's parameters (set by the cluster; none: every default)
        self.parameters: Callable[[], dict] = dict
        self.enabled = False
        self.rounds = 0
        self._round_started = 0.0  # (trio time: the interval timer)
        self._in_round = False
        self._last_merge: float | None = None
        self._wake = trio.Event()

    def wake(self) -> None:
        """The balancer settings changed (balancerStart / balancerStop, configureCollectionBalancing)."""
        self._wake.set()

    def should_run(self) -> bool:
        """BalancerConfiguration::shouldBalanceForAutoMerge."""
        return self.mode() != "off" and auto_merge_enabled(self.router)

    async def run(self, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """The balancer's main loop as far as the AutoMerger goes: every round (or when woken) enable or
        disable it, start an automerge round when one is due, and run it.  The first check, which a new
        config primary makes at once, is made before the AutoMerger reports started when there is
        nothing to merge (it only logs autoMerge.enable/start/end): a fresh cluster's own writes then
        come after those entries in every run, never interleaved with them."""
        if not namespaces_with_mergeable_chunks(self.router):
            await self._check_logged()
            task_status.started()
            await self._pause()
        else:
            task_status.started()
        while True:
            await self._check_logged()
            await self._pause()

    async def _check_logged(self) -> None:
        try:
            await self.check()
        except MongoError as err:  # (as the balancer's round: logged, and the next round goes on)
            log.warning("auto merger round failed: %s", err)

    async def _pause(self) -> None:
        with trio.move_on_after(10.0):  # kBalanceRoundDefaultInterval
            await self._wake.wait()
        self._wake = trio.Event()

    async def check(self) -> None:
        if not self.should_run():
            await self._disable()
            return
        if not self.enabled:
            self.enabled = True
            await self._log("autoMerge.enable")
            await self._start_round()
        elif not self._in_round and self._interval_passed():
            await self._start_round()
        if self._in_round:
            await self._merge_round()

    def _interval_passed(self) -> bool:
        """AutoMergerPolicy::checkInternalUpdates: more than the interval since the round began, in whole
        seconds (Timer::seconds())."""
        return int(trio.current_time() - self._round_started) > self._param("autoMergerIntervalSecs")

    def _param(self, name: str) -> float:
        return float(mongod_parameter(self.parameters(), name))

    async def _log(self, what: str) -> None:
        await log_change(self.router, what, "", {})

    async def _disable(self) -> None:
        if self.enabled:
            self.enabled = False
            self._in_round = False
            await self._log("autoMerge.disable")

    async def _start_round(self) -> None:
        self._round_started = trio.current_time()
        self._in_round = True
        await self._log("autoMerge.start")

    async def _throttle(self) -> None:
        """Sleep until `autoMergerThrottlingMS` have passed since the previous throttled merge."""
        wait = self._param("autoMergerThrottlingMS") / 1000
        if self._last_merge is not None:
            await trio.sleep_until(self._last_merge + wait)
        self._last_merge = trio.current_time()

    async def _merge_round(self) -> None:
        """Merge shard by shard, each collection again until it merges nothing (AutoMergerPolicy's stream
        of mergeAllChunksOnShard actions); a round stopped midway (the AutoMerger disabled) just ends."""
        todo = namespaces_with_mergeable_chunks(self.router)
        again: dict[str, list[str]] = {}
        throttle = True
        while todo or again:
            if not todo:
                todo, again = again, {}
            shard = min(todo)
            while todo[shard]:
                if not self.should_run():
                    await self._disable()
                    return
                ns = todo[shard].pop()
                if throttle:
                    await self._throttle()
                    throttle = False
                if await self._merge(ns, shard):
                    again.setdefault(shard, []).append(ns)
            del todo[shard]
            throttle = True
        self._in_round = False
        self.rounds += 1
        await self._log("autoMerge.end")

    async def _merge(self, ns: str, shard: str) -> bool:
        """One mergeAllChunksOnShard: True when the collection is to be asked again."""
        try:
            return await merge_all_chunks_on_shard(self.router, ns, shard, MAX_NUMBER_OF_CHUNKS_TO_MERGE) > 0
        except MongoError as err:
            if err.code_name == "ConflictingOperationInProgress":  # (overlapped another chunk operation)
                return self.router.catalog.routing(ns) is not None
            log.debug("Hit unexpected error while automerging chunks: %s %s %s", shard, ns, err)
            return False
