"""$_internalChangeStreamUnwindTransaction: turn a committed transaction into its operations.

Triggered by an `applyOps` entry (an unprepared transaction, possibly the last
of a `partialTxn` chain) or a `commitTransaction` entry (a prepared one).  It
walks the chain back through `prevOpTime`, then emits every operation of the
transaction in order, each carrying the terminal entry's `ts` and `wall`, the
session's `lsid`/`txnNumber`, and `txnOpIndex` — a 0-based index counting
every operation of the transaction, including those the stream filters out;
it goes into the resume token.  A broken chain (truncated oplog) is
ChangeStreamHistoryLost.  `applyOpsIndex`/`applyOpsTs` locate the pre-image.
"""

from __future__ import annotations

from typing import Iterator

from mongosim.oplog.clock import ts_key
from mongosim.oplog.errors import MongoError
from mongosim.shardsim.changestream.context import PAUSE, ChangeStreamContext, Stage


def _is_txn_entry(e) -> bool:
    if type(e) is not dict or e.get("op") != "c":
        return False
    o = e.get("o") or {}
    return "applyOps" in o or "commitTransaction" in o


class UnwindTransaction(Stage):
    name = "$_internalChangeStreamUnwindTransaction"

    def __init__(self, source: Stage, ctx: ChangeStreamContext) -> None:
        super().__init__(source, ctx)
        self._ops: Iterator[dict] | None = None

    def skippable(self) -> bool:
        return self._ops is None

    def get_next(self):
        while True:
            if self._ops is not None:
                nxt = next(self._ops, None)
                if nxt is not None:
                    return nxt
                self._ops = None
            e = self.source.get_next()
            if e is PAUSE or not _is_txn_entry(e):
                return e
            self._ops = self._unwind(e)

    def _chain(self, terminal: dict) -> list[dict]:
        """The applyOps entries of the transaction, oldest first."""
        oplog = self.ctx.node.oplog
        chain: list[dict] = []
        o = terminal["o"]
        if "applyOps" in o:
            chain.append(terminal)
        prev = terminal.get("prevOpTime")
        while prev is not None and prev["ts"].time != 0:
            e = oplog.find_by_key(ts_key(prev["ts"]))
            if e is None:
                raise MongoError(
                    "ChangeStreamHistoryLost",
                    "Oplog no longer has history necessary for $changeStream to observe operations from a committed transaction.",
                )
            chain.append(e)
            prev = e.get("prevOpTime")
        chain.reverse()
        return chain

    def _unwind(self, terminal: dict) -> Iterator[dict]:
        ctx = self.ctx
        nsf = ctx.nsf
        applied_separately = terminal.get("multiOpType") == 1
        lsid = None if applied_separately else terminal.get("lsid")
        txn_number = None if applied_separately else terminal.get("txnNumber")
        commit_ts = (terminal["o"] or {}).get("commitTimestamp")
        ts, wall = terminal["ts"], terminal["wall"]
        show_migration = ctx.spec.show_migration_events
        txn_op_index = 0
        for entry in self._chain(terminal):
            for apply_index, op in enumerate(entry["o"].get("applyOps", [])):
                index = txn_op_index
                txn_op_index += 1
                if op.get("op") == "n":
                    raise MongoError(5543809, "Unexpected noop entry within a transaction")
                if op.get("fromMigrate") and not show_migration:
                    continue
                ns = op.get("ns", "")
                if op.get("op") == "c":
                    target = next((op["o"][k] for k in ("create", "createIndexes") if k in op.get("o", {})), None)
                    if not (nsf.cmd(ns) and target is not None and nsf.ns(f"{ns[:-5]}.{target}")):
                        continue
                elif not nsf.ns(ns):
                    continue
                out = dict(op)
                out["txnOpIndex"] = index
                out["applyOpsIndex"] = apply_index
                out["applyOpsTs"] = entry["ts"]
                out["ts"] = ts
                out["wall"] = wall
                if commit_ts is not None:
                    out["commitTimestamp"] = commit_ts
                if lsid is not None:
                    out["lsid"] = lsid
                if txn_number is not None:
                    out["txnNumber"] = txn_number
                if ctx.trace is not None:
                    ctx.emit("unwound", ts=ts_key(ts), txnOpIndex=index, ns=ns)
                yield out
