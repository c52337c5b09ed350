"""`mongodb-changestream` in shards mode: one input partition per shard, each batch gated like mongos.

    events = (spark.readStream.format("mongodb-changestream").option("uri", uri)
              .option("mode", "shards").option("maxEventsPerBatch", 10000).load())

A mongos does not scale with its shards (SERVER-98054): every event of a
sharded stream goes through one router's merge.  In shards mode each shard's
stream is read by its own Spark partition, through the router with
`$_passthroughToShard` (that one shard's stream, unmerged), and the
micro-batch takes over the merge's part:

Offsets are a vector, one position per shard (`offsets.py`):
`{"shards": {"shard00": {"token": ...}, "shard01": {"after": ...}}}` — a
shard's own event token or a high-water mark (`token`), another shard's event
token (`after`: this shard has been read up to that point of the merged
order), or `operationTime`.  A batch that starts a shard adds `"added":
{<shard>: <its first position>}`.

Planning (`latestOffset`) is the AsyncResultsMerger's gate, batch-sized.
Every shard is probed from its position (tokens only): with a row limit n,
first an equal share, n / shards tokens, or fewer once the shard has nothing
more — then its postBatchResumeToken is its promise: nothing it still returns
sorts before it.  E = the smallest of what the shards have shown (their last
tokens, or their promises: the minimum promised sort key); while fewer than n
tokens sort at or before E, the shards showing no further than E, the ones
holding the gate, are asked for another share (`_gate`).  The batch ends at E,
or earlier at the n-th smallest token.  Every shard has then returned all its
events up to E, so the union of the shards' events in (start, E], sorted by
token, is what the router's merge releases over that range — batch after
batch — and the probes read about n tokens plus a share per shard, not n per
shard.  Without a limit, once some shard has an event after its position, E is
the minimum over the shards of what a stream opened now promises (so the events
are read once, by `read`).  The probes live on from one planning to the next:
each moves to its shard's place in the batch's end and keeps its cursor and the
tokens it pulled past it, so a run of batches opens one probe per shard and
pulls each token once (a probe behind the end — a batch without a limit — is
closed instead: it would pull through what `read` reads).  In an availableNow
run every shard has promised the target already, and a batch's reads have been
promised their end: their getMores do not wait (`streams.PROMISED_AWAIT_MS`).

Shards join: `listShards` is read after the probes.  A shard that is not in
the vector starts at its `topologyTime` (it holds nothing older; the router
opens its cursor from the config event on), and its partition appears in the
batch.  A shard added after that read joins a later batch: its events come
after its addition, which comes after every promise the probes collected.

Reading (`read`): the shard's stream from its start position to its end
position, as in router mode (skip up to the start; stop at the end token, or
once the shard's promise reaches it).  A shard's stream that ends in an
`invalidate` goes on in a stream opened after it, on that shard.

Order: a micro-batch arrives as one partition per shard; sorting it by
`token` (e.g. `orderBy("token")` in `foreachBatch`) gives the router's order,
and the batches follow each other in that order.
"""

from __future__ import annotations

import time
from bisect import bisect_right
from typing import Any, Iterator

from bson import Timestamp
from pyspark.sql.datasource import InputPartition
from pyspark.sql.streaming.datasource import ReadLimit, ReadMaxRows, ReadMinRows

from mongosim.spark import offsets as off
from mongosim.spark.router_reader import MongoChangeStreamReader
from mongosim.spark.streams import NAME, ChangeStreamSourceError, ContinuingStream, TokenStream, batches_through
from mongosim.spark.streams import wrap_error as _wrap


class ShardRange(InputPartition):
    """One shard's part of a batch: its events after `start` up to and including `end`."""

    def __init__(self, shard: str, start: dict, end: dict) -> None:
        self.shard = shard
        self.start = start
        self.end = end

    def __repr__(self) -> str:
        return f"ShardRange({self.shard}: {off.describe(self.start)} .. {off.describe(self.end)})"


class _ShardProbe:
    """One shard's event tokens after its position (tokens only), pulled a few at a time while planning.

    `keys` are the tokens pulled so far; once the shard has nothing more, `bound` is its promise (its
    postBatchResumeToken: nothing it still returns sorts before it) — in an availableNow run only once
    that reaches the target, and never past it.  `shown_to()` is up to where the shard has shown
    everything: its bound, or else its last token."""

    def __init__(self, reader: ShardsStreamReader, shard: str, position: dict, target: str | None,
                 batch_size: int) -> None:
        self.shard = shard
        self.position = position
        self.target = target
        self.keys: list[str] = []
        self.bound: str | None = None
        self._ahead: list[str] = []  # tokens of the stream's last batch not pulled yet
        self.read_timeout = reader.read_timeout
        self.stream = reader._shard_events(shard, position, probe=True, await_ms=reader.probe_await_ms,
                                           batch_size=batch_size, until=target)

    def pull(self, n: int) -> None:
        """Up to `n` more tokens, or fewer once the shard has nothing more (then `bound` is set).  The
        stream's batches are taken whole; what a pull leaves of one waits for the next pull."""
        se, target = self.stream, self.target
        if target is not None and self.bound is None and self.shown_to() >= target:
            self.bound = target  # all shown up to the target: nothing to ask the shard (it would wait)
            return
        deadline = time.monotonic() + self.read_timeout
        want = len(self.keys) + n
        while self.bound is None and len(self.keys) < want:
            if not self._ahead:
                self._ahead = se.next_batch()[0]
                if not self._ahead:
                    pbrt = se.pbrt
                    if target is None or (pbrt is not None and pbrt >= target):
                        self.bound = pbrt if pbrt is not None else off.offset_sort_key(self.position)
                    elif time.monotonic() > deadline:
                        raise ChangeStreamSourceError(
                            f"{NAME}: availableNow: {self.shard} did not reach the target {target} (at {pbrt}) "
                            f"within readTimeoutSeconds={self.read_timeout}")
                    continue
            take = want - len(self.keys)
            got, self._ahead = self._ahead[:take], self._ahead[take:]
            if target is not None and got[-1] > target:
                i = bisect_right(got, target)
                self.keys.extend(got[:i])
                self._ahead[:0] = got[i:]  # kept: a probe lives on into the next batch (`advance`)
                self.bound = target
                return
            self.keys.extend(got)

    def shown_to(self) -> str:
        if self.bound is not None:
            return self.bound
        return self.keys[-1] if self.keys else off.offset_sort_key(self.position)

    def advance(self, position: dict) -> bool:
        """Move on to `position`, the shard's place in the batch's end offset, to plan the next batch
        from there: the tokens up to it leave (they are in the batch), the rest stay, and the shard is
        asked again for what it has (a promise is final only within one planning).  False, and nothing
        changes, if the probe has not shown everything up to `position` (it would have to pull through
        events the batch read anyway: a new probe opened there is cheaper)."""
        key = off.offset_sort_key(position)
        if key > self.shown_to():
            return False
        del self.keys[:bisect_right(self.keys, key)]
        self.position = position
        self.bound = None
        return True

    def close(self) -> None:
        self.stream.close()


def _gate(probes: list[_ShardProbe], max_rows: int, step: int) -> None:
    """Pull until the batch's end is known: E, the smallest of what the shards have shown, is final once
    `max_rows` tokens sort at or before it (the batch then ends at the `max_rows`-th of them), or once
    every shard that shows no further than E has nothing more.  Only the shards holding E back are asked
    for more (`step` tokens at a time), so a batch of n events over k shards probes about n + k * step
    tokens, not k * n."""
    while True:
        end = min(p.shown_to() for p in probes)
        if sum(bisect_right(p.keys, end) for p in probes) >= max_rows:
            return
        behind = [p for p in probes if p.bound is None and p.shown_to() == end]
        if not behind:
            return
        for p in behind:
            p.pull(step)


class ShardsStreamReader(MongoChangeStreamReader):
    """The reader of shards mode (see the module doc); options as in router mode."""

    def __init__(self, options: dict, schema: Any) -> None:
        super().__init__(options, schema)
        # the probes of the last planning, moved on to its end (`_ShardProbe.advance`): the next
        # planning goes on with their cursors and the tokens they pulled past it (driver side only)
        self._probes: dict[str, _ShardProbe] = {}

    def __getstate__(self) -> dict:
        state = super().__getstate__()
        state["_probes"] = {}
        return state

    def stop(self) -> None:
        self._close_probes()
        super().stop()

    def _close_probes(self) -> None:
        probes, self._probes = self._probes, {}
        for probe in probes.values():
            probe.close()

    def _probe(self, shard: str, position: dict, target: str | None, first: int) -> _ShardProbe:
        """`shard`'s probe from `position`, with `first` tokens pulled (or all it has): the last
        planning's, if it ended there, else a new one."""
        probe = self._probes.pop(shard, None)
        if probe is not None and probe.position == position and probe.target == target:
            probe.pull(max(first - len(probe.keys), 0 if probe.keys else 1))
            return probe
        if probe is not None:
            probe.close()
        probe = _ShardProbe(self, shard, position, target, batch_size=min(first, 10_000))
        probe.pull(first)
        return probe

    # -- one shard's stream -----------------------------------------------------------------
    def _shard_events(self, shard: str, position: dict | None, *, probe: bool, await_ms: int,
                      batch_size: int | None, until: str | None = None) -> ContinuingStream:
        extra = {"$_passthroughToShard": {"shard": shard}}

        def open_stream(pos: dict | None) -> TokenStream:
            return TokenStream(self._raw_stream(pos, probe=probe, await_ms=await_ms, batch_size=batch_size,
                                                extra=extra, until=until), pos)

        return ContinuingStream(open_stream, position)

    def _promise_now(self, shard: str) -> str:
        """What a stream opened on `shard` now promises after one getMore (its postBatchResumeToken): the
        shard has written every event that sorts before it.  (The getMore lets an idle shard promise
        the cluster time it heard, as it does for the router's cursors.)"""
        se = self._shard_events(shard, None, probe=True, await_ms=self.probe_await_ms, batch_size=1)
        try:
            se.next_event()  # an event written since the open: the promise is its token
            tok = se.pbrt
        finally:
            se.close()
        if tok is None:
            raise ChangeStreamSourceError(f"{NAME}: {shard} sent no postBatchResumeToken")
        return tok

    def _list_shards(self) -> dict[str, dict]:
        """shard -> the position it starts at if it joins now (its topologyTime)."""
        reply = self._mongo().admin.command("listShards")
        out = {}
        for d in reply["shards"]:
            tt = d.get("topologyTime")
            out[str(d["_id"])] = off.optime_offset(tt if tt is not None else Timestamp(0, 1))
        return out

    # -- offsets ------------------------------------------------------------------------------
    def initialOffset(self) -> dict:
        if self._initial is not None:
            return self._initial
        o = self.opts
        try:
            shards = sorted(self._list_shards())
            if o.start_after:
                kind = off.token_kind(o.start_after)
                pos = off.token_offset(o.start_after) if kind == "hwm" else off.after_offset(o.start_after)
            elif o.start_at_operation_time is not None:
                pos = off.optime_offset(o.start_at_operation_time)
            else:
                pos = off.token_offset(min(self._promise_now(s) for s in shards))
        except ChangeStreamSourceError:
            raise
        except Exception as exc:
            raise _wrap(exc, "opening the shards' streams", None) from exc
        self._initial = {"shards": {s: dict(pos) for s in shards}}
        return self._initial

    def prepareForTriggerAvailableNow(self) -> None:
        """The target of an availableNow run: the smallest promise of streams opened now on every shard."""
        self._target = min(self._promise_now(s) for s in self._list_shards())

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        if start is None:
            start = self.initialOffset()
        max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        min_rows = limit.min_rows if isinstance(limit, ReadMinRows) else None
        probes: dict[str, _ShardProbe] = {}
        planned = False
        try:
            end = self._plan(start, max_rows, min_rows, probes)
            planned = True
        except ChangeStreamSourceError:
            raise
        except Exception as exc:
            raise _wrap(exc, "looking for new events", start) from exc
        finally:
            if not planned:
                self._close_probes()
                for probe in probes.values():
                    probe.close()
        return self._keep(probes, end)

    def _plan(self, start: dict, max_rows: int | None, min_rows: int | None, probes: dict[str, _ShardProbe]) -> dict:
        """The end offset of the batch after `start` (`probes` collects the shards' probes)."""
        target = self._target
        positions = dict(start["shards"])
        added: dict[str, dict] = {}
        # the first pull: without a limit one token tells whether a shard has news; with one, an equal share
        first = 1 if max_rows is None else max(1, -(-max_rows // max(len(positions), 1)))
        pending = sorted(positions)
        while pending:
            for shard in pending:
                probes[shard] = self._probe(shard, positions[shard], target, first)
            # after the probes: a shard added since joins this batch (see the module doc)
            joining = {s: p for s, p in self._list_shards().items() if s not in positions}
            added.update(joining)
            positions.update(joining)
            pending = sorted(joining)
        if max_rows is not None:
            _gate(list(probes.values()), max_rows, first)
        owner = {k: shard for shard, probe in probes.items() for k in probe.keys}
        bounds = {shard: probe.shown_to() for shard, probe in probes.items()}
        if not owner:
            return self._idle(start, positions, added, bounds, target)
        if max_rows is None:  # everything available: up to what the shards promise now
            end = target if target is not None else \
                min(self._promise_now(s) if probes[s].keys else bounds[s] for s in sorted(positions))
        else:
            end = min(bounds.values())
            keys = sorted(owner)
            if len(keys) >= max_rows:
                end = min(end, keys[max_rows - 1])
        if target is not None:
            end = min(end, target)
        if min_rows is not None and sum(1 for k in owner if k <= end) < min_rows:
            return start
        return self._vector(start, positions, added, end, owner.get(end))

    def _keep(self, probes: dict[str, _ShardProbe], end: dict) -> dict:
        """Keep the probes that can go on from their shard's place in `end` (the offset returned)."""
        self._close_probes()  # none should be left: each planning takes them all
        for shard, probe in probes.items():
            pos = end["shards"].get(shard)
            if pos is not None and probe.advance(pos):
                self._probes[shard] = probe
            else:
                probe.close()
        return end


    def _idle(self, start: dict, positions: dict, added: dict, bounds: dict, target: str | None) -> dict:
        """No event anywhere: stay, unless every shard promised idleAdvanceSeconds past the start."""
        lowest = min((off.offset_sort_key(p) for p in start["shards"].values()), default=None)
        promised = min(bounds.values(), default=None)
        if (lowest is None or promised is None or self.idle_advance <= 0 or target is not None
                or promised <= lowest):
            return start
        t0, t1 = off.token_cluster_time(lowest), off.token_cluster_time(promised)
        if t1.time - t0.time < self.idle_advance:
            return start
        return self._vector(start, positions, added, promised, None)

    @staticmethod
    def _vector(start: dict, positions: dict, added: dict, end: str, end_owner: str | None) -> dict:
        """The end offset: every shard at `end` (as its own token, or `after` another shard's event),
        or where it already is if that is later."""
        kind = off.token_kind(end)
        shards = {}
        for shard, pos in sorted(positions.items()):
            if off.offset_sort_key(pos) >= end:
                shards[shard] = pos
            elif kind == "hwm" or end_owner == shard:
                shards[shard] = off.token_offset(end)
            else:
                shards[shard] = off.after_offset(end)
        if shards == start["shards"]:
            return start
        out: dict[str, Any] = {"shards": shards}
        if added:
            out["added"] = dict(sorted(added.items()))
        return out

    def partitions(self, start: dict, end: dict):
        if start is None:
            start = self.initialOffset()
        parts = []
        for shard, to in sorted(end["shards"].items()):
            frm = start["shards"].get(shard) or end.get("added", {}).get(shard)
            if frm is None:
                raise ChangeStreamSourceError(f"{NAME}: no start position for {shard} in {off.describe(start)}")
            if off.offset_sort_key(frm) < off.offset_sort_key(to):
                parts.append(ShardRange(shard, frm, to))
        return parts

    # -- reading (on an executor) --------------------------------------------------------------
    def read(self, partition: ShardRange) -> Iterator[Any]:
        yield from self.rows.event_batches(self.read_shard_batches(partition.shard, partition.start, partition.end))

    def read_shard(self, shard: str, start: dict, end: dict) -> Iterator[bytes]:
        """The raw BSON events of `shard` after `start` up to and including `end`."""
        for raws in self.read_shard_batches(shard, start, end):
            yield from raws

    def read_shard_batches(self, shard: str, start: dict, end: dict) -> Iterator[list[bytes]]:
        """The raw BSON events of `shard` after `start` up to and including `end`, as the getMores bring them."""
        end_key = off.offset_sort_key(end)
        deadline = time.monotonic() + self.read_timeout
        try:
            se = self._shard_events(shard, start, probe=False, await_ms=self.max_await_ms, batch_size=10_000,
                                    until=end_key)
            try:
                for _, raws in batches_through(se, end_key, deadline, lambda: (
                        f"{NAME}: {shard}'s part of the batch after {off.describe(start)} did not reach "
                        f"{off.describe(end)} within readTimeoutSeconds={self.read_timeout}")):
                    yield raws
            finally:
                se.close()
        except ChangeStreamSourceError:
            raise
        except Exception as exc:
            raise _wrap(exc, f"reading {shard}'s part of the batch", start) from exc
        finally:
            self.stop()
