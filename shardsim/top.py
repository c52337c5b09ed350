"""Top: a node's per-collection usage — what `$collStats: {latencyStats}` (mongosh's
`db.c.latencyStats()`) and the `top` command report (db/stats/top.cpp, operation_latency_histogram.cpp).

Every command on a collection namespace that a client (or mongos) runs is recorded when it ends,
with its wall time in microseconds:

- in the latency histogram of its kind (Command::ReadWriteType): `reads` (find, getMore, count,
  distinct, aggregate), `writes` (insert, update, delete, findAndModify), `commands` (the rest);
  `transactions` counts commitTransaction/abortTransaction, which name no collection, so stays 0.
  Each kind sums `latency` and `ops`; `histograms: true` adds the non-empty buckets
  `{micros: <lower bound>, count}` — bounds 0, 2, 4, ..., 1024, then two per power of two (2048,
  3072, 4096, 6144, ...) up to 2^20, then one per power of two up to 2^40;
- in the `top` counters: `total`, `readLock` or `writeLock` (by the kind), and its operation's
  (`queries` for find, `getmore`, `insert`, `update`, `remove`, else `commands`), each
  `{time, count}`.

Times are real elapsed time (like the server's), so only counts are reproducible.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bson import Int64

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.command_registry import command
from mongosim.shardsim.operation_context import OpCtx

if TYPE_CHECKING:
    from mongosim.shardsim.node import Node

READS = frozenset({"find", "getMore", "count", "distinct", "aggregate"})
WRITES = frozenset({"insert", "update", "delete", "findAndModify", "findandmodify"})
KINDS = ("reads", "writes", "commands", "transactions")
_TOP_OP = {"find": "queries", "getMore": "getmore", "insert": "insert", "update": "update", "delete": "remove"}
_TOP_FIELDS = ("total", "readLock", "writeLock", "queries", "getmore", "insert", "update", "remove", "commands")
MAX_BUCKETS = 51


def _lower_bounds() -> list[int]:
    bounds = [0] + [1 << i for i in range(1, 11)]
    for log2 in range(11, 21):
        bounds += [1 << log2, 3 << (log2 - 1)]
    bounds += [1 << log2 for log2 in range(21, 41)]
    return bounds


LOWER_BOUNDS = _lower_bounds()


def bucket(micros: int) -> int:
    """OperationLatencyHistogram::_getBucket: log2, with [2^n, 2^n + 2^(n-1)) and the rest of
    [2^n, 2^(n+1)) split for 11 <= n < 21."""
    if micros <= 0:
        return 0
    log2 = micros.bit_length() - 1
    if log2 < 11:
        return log2
    if log2 < 21:
        return log2 + (log2 - 11) + (micros >= 3 << (log2 - 1))
    return min(log2 + 10, MAX_BUCKETS - 1)


class _Histogram:
    __slots__ = ("buckets", "sum", "ops")

    def __init__(self) -> None:
        self.buckets = [0] * MAX_BUCKETS
        self.sum = 0
        self.ops = 0

    def add(self, micros: int) -> None:
        self.buckets[bucket(micros)] += 1
        self.sum += micros
        self.ops += 1

    def document(self, histograms: bool) -> dict:
        out: dict[str, Any] = {}
        if histograms:
            out["histogram"] = [{"micros": Int64(LOWER_BOUNDS[i]), "count": Int64(n)}
                                for i, n in enumerate(self.buckets) if n]
        out.update(latency=Int64(self.sum), ops=Int64(self.ops), queryableEncryptionLatencyMicros=Int64(0))
        return out


class _Usage:
    __slots__ = ("latency", "counters")

    def __init__(self) -> None:
        self.latency = {kind: _Histogram() for kind in KINDS}
        self.counters = {field: [0, 0] for field in _TOP_FIELDS}  # time, count


class Top:
    """One node's usage by namespace."""

    def __init__(self) -> None:
        self.usage: dict[str, _Usage] = {}

    def record(self, db: str, name: str, cmd: dict, micros: int) -> None:
        """A command that ended after `micros` (nothing for one that names no collection)."""
        coll = cmd.get("collection") if name == "getMore" else cmd.get(name)
        if type(coll) is not str or not coll:
            return
        usage = self.usage.get(f"{db}.{coll}")
        if usage is None:
            usage = self.usage[f"{db}.{coll}"] = _Usage()
        kind = "reads" if name in READS else "writes" if name in WRITES else "commands"
        usage.latency[kind].add(micros)
        c = usage.counters
        for field in ("total", "writeLock" if kind == "writes" else "readLock", _TOP_OP.get(name, "commands")):
            c[field][0] += micros
            c[field][1] += 1

    def latency_stats(self, ns: str, histograms: bool) -> dict:
        usage = self.usage.get(ns) or _Usage()
        return {kind: usage.latency[kind].document(histograms) for kind in KINDS}

    def drop(self, ns_prefix: str) -> None:
        """A dropped collection (`db.c`) or database (`db.`) leaves Top (Top::collectionDropped)."""
        for ns in [ns for ns in self.usage if ns == ns_prefix or ns_prefix.endswith(".") and ns.startswith(ns_prefix)]:
            del self.usage[ns]


@command("top")
def cmd_top(node: Node, ctx: OpCtx) -> dict:
    """`{totals: {note, <ns>: {total: {time, count}, readLock, writeLock, queries, ...}}}`, admin only."""
    if ctx.db != "admin":
        raise MongoError("Unauthorized", "top may only be run against the admin database.")
    totals: dict[str, Any] = {"note": "all times in microseconds"}
    for ns in sorted(node.top.usage):
        c = node.top.usage[ns].counters
        totals[ns] = {field: {"time": Int64(c[field][0]), "count": Int64(c[field][1])} for field in _TOP_FIELDS}
    return {"totals": totals, "ok": 1.0}
