"""$_internalChangeStreamOplogMatch: scan the oplog, keep the entries the stream may need.

The filter (change_stream_filter_helpers.cpp), after `ts >= start` and
`fromMigrate != true` (unless showMigrationEvents), keeps an entry if it is:

1. a CRUD op (not `n`/`c`) on a namespace of the stream;
2. a command on the stream's command namespace whose target collection belongs
   to the stream (`o.drop`, `o.create`, `o.createIndexes`, `o.commitIndexBuild`,
   `o.dropIndexes`, `o.collMod`, `o.renameCollection` or `o.to`), or
   `o.dropDatabase` (not for single-collection streams);
3. a transaction entry: an `applyOps` that is neither `prepare` nor
   `partialTxn` and touches the stream (or continues a chain), or a
   `commitTransaction`;
4. a sharding noop (`o2.shardCollection`, `refineCollectionShardKey`,
   `reshardCollection`; `o2.migrateChunkToNewShard` only when feeding a router);
5. with showExpandedEvents, a write to the `system.views` of the stream's
   database (any non-internal database's for a whole-cluster stream; none for
   a single-collection stream): a view's create, modify or drop
   (buildViewDefinitionEventFilter).

An `applyOps` entry without a session (a batched write: the copy of a rename
across databases) is kept by rule 3 and unwound like a transaction.

The scan reads raw entries and decodes only candidates (op/ns are kept beside
each entry), and only the majority-committed ones (`Oplog.committed_end`), as
the server's change streams read at the majority commit point.  `latest_key` is the ts of the newest entry scanned, whether kept
or not: the shard's high-water mark.  If the oplog no longer holds the start
point (its first entry is later, and is not the node's "initiating set"),
the scan fails with OplogQueryMinTsMissing, which check-resumability turns into
ChangeStreamHistoryLost; a cursor whose position was truncated away while
tailing fails with CappedPositionLost, as a tailable oplog scan does.
"""

from __future__ import annotations

import re

from mongosim.oplog import bsonutil
from mongosim.oplog.errors import MongoError
from mongosim.shardsim.changestream.context import PAUSE, ChangeStreamContext, Stage
from mongosim.shardsim.changestream.spec import COLLECTION

_CMD_TARGETS = ("drop", "create", "createIndexes", "commitIndexBuild", "dropIndexes", "collMod")
_SHARDING_NOOPS = ("shardCollection", "refineCollectionShardKey", "reshardCollection")


class OplogMatch(Stage):
    name = "$_internalChangeStreamOplogMatch"

    def __init__(self, ctx: ChangeStreamContext) -> None:
        super().__init__(None, ctx)
        oplog = ctx.node.oplog
        self.oplog = oplog
        self.pos = oplog.position_at_or_after(ctx.start_key)
        self.latest_key = 0
        self.scanned = 0
        self._checked_history = False
        self.fast = not ctx.spec.show_raw_update_description

    def _check_history(self) -> None:
        """The oplog must reach back to the start point (OplogQueryMinTsMissing otherwise)."""
        self._checked_history = True
        oplog = self.oplog
        if oplog.first_key > self.ctx.start_key:
            first = oplog.entry_at(oplog.start)
            if first.get("op") == "n" and first.get("o", {}).get("msg") in ("initiating set", "new primary"):
                return
            raise MongoError("OplogQueryMinTsMissing", "Oplog query minTs is older than the oldest oplog entry")

    def get_next(self):
        if not self._checked_history:
            self._check_history()
        oplog = self.oplog
        if self.pos < oplog.start:
            raise MongoError("CappedPositionLost",
                             "CollectionScan died due to position in capped collection being deleted")
        # Walk the oplog's columns in place (no copies: this is the hot loop of every stream).
        keys, ops, nss, raws = oplog.column_refs()
        base = oplog.start
        n = len(raws)
        if oplog.committed_end is not None:  # several members: only majority-committed entries
            n = min(n, oplog.committed_end - base)
        ctx = self.ctx
        nsf = ctx.nsf
        show_migration = ctx.spec.show_migration_events
        while self.pos - base < n:
            i = self.pos - base
            key, op, ns = keys[i], ops[i], nss[i]
            self.pos += 1
            self.latest_key = key
            self.scanned += 1
            if op == "c":
                if not (nsf.cmd(ns) or ns == "admin.$cmd"):
                    continue
            elif op == "n":
                if not ns or not nsf.ns(ns):
                    continue
            elif not nsf.ns(ns):
                if not (ctx.spec.show_expanded_events and nsf.views(ns)):
                    continue
            elif self.fast and not ns.endswith(".system.views"):
                # a CRUD entry of the stream: handed on by reference, never decoded (render.py)
                view = oplog.view_at(self.pos - 1)
                if view is not None:
                    if view.from_migrate and not show_migration:
                        if ctx.trace is not None:
                            ctx.emit("filtered", ts=key, reason="fromMigrate")
                        continue
                    if ctx.trace is not None:
                        ctx.emit("scanned", ts=key, op=op, ns=ns)
                    return view
            entry = bsonutil.decode(raws[i])
            if entry.get("fromMigrate") and not show_migration:
                if ctx.trace is not None:
                    ctx.emit("filtered", ts=key, reason="fromMigrate", op=op, ns=ns)
                continue
            if self._keep(entry, op, ns):
                if ctx.trace is not None:
                    ctx.emit("scanned", ts=key, op=op, ns=ns)
                return entry
        return PAUSE

    def _keep(self, e: dict, op: str, ns: str) -> bool:
        ctx = self.ctx
        nsf = ctx.nsf
        o = e.get("o") or {}
        if op in ("i", "u", "d"):
            return True
        if op == "n":
            o2 = e.get("o2") or {}
            if any(k in o2 for k in _SHARDING_NOOPS):
                return True
            return "migrateChunkToNewShard" in o2 and ctx.needs_merge
        # commands
        if ns == "admin.$cmd" and not nsf.cmd(ns):
            if "applyOps" in o:
                return self._keep_apply_ops(e, o)
            return "commitTransaction" in o
        db = ns[: -len(".$cmd")]
        for k in _CMD_TARGETS:
            if k in o:
                return isinstance(o[k], str) and nsf.ns(f"{db}.{o[k]}")
        if "renameCollection" in o:
            return nsf.ns(str(o["renameCollection"])) or nsf.ns(str(o.get("to", "")))
        if "dropDatabase" in o:
            return ctx.level != COLLECTION
        if "applyOps" in o:
            return self._keep_apply_ops(e, o)
        if "commitTransaction" in o:
            return True
        return False

    def _keep_apply_ops(self, e: dict, o: dict) -> bool:
        if o.get("prepare") or o.get("partialTxn"):
            return False
        prev = e.get("prevOpTime")
        if prev is not None and prev.get("ts") is not None and prev["ts"].time != 0:
            return True
        nsf = self.ctx.nsf
        for inner in o.get("applyOps", []):
            ins = inner.get("ns", "")
            if inner.get("op") == "c":
                if nsf.cmd(ins):
                    return True
            elif nsf.ns(ins):
                return True
        return False

    def explain(self) -> dict:
        """The filter in the shape of the server's predicate (`explain` shows it; the scan above applies it)."""
        from bson import Timestamp

        from mongosim.shardsim.changestream.spec import DATABASE

        ctx = self.ctx
        if ctx.level == COLLECTION:
            ns_rx = "^" + re.escape(f"{ctx.db}.{ctx.coll}") + "$"
            cmd_rx = "^" + re.escape(f"{ctx.db}.$cmd") + "$"
        elif ctx.level == DATABASE:
            ns_rx = "^" + re.escape(ctx.db) + r"\.(?!(\$|system\.))"
            cmd_rx = "^" + re.escape(f"{ctx.db}.$cmd") + "$"
        else:
            ns_rx = r"^(?!(admin|config|local)\.)[^.]+\.(?!(\$|system\.))"
            cmd_rx = r"^(?!(admin|config|local)\.)[^.]+\.\$cmd$"
        commands = [{f"o.{k}": {"$exists": True}} for k in (*_CMD_TARGETS, "renameCollection")]
        if ctx.level != COLLECTION:
            commands.append({"o.dropDatabase": {"$exists": True}})
        noops = [{f"o2.{k}": {"$exists": True}} for k in _SHARDING_NOOPS]
        if ctx.needs_merge:
            noops.append({"o2.migrateChunkToNewShard": {"$exists": True}})
        start = ctx.start_key
        conds: list[dict] = [{"ts": {"$gte": Timestamp(start >> 32, start & 0xFFFFFFFF)}}]
        if not ctx.spec.show_migration_events:
            conds.append({"fromMigrate": {"$ne": True}})
        conds.append({"$or": [
            {"ns": {"$regex": ns_rx}, "op": {"$nin": ["n", "c"]}},
            {"ns": {"$regex": cmd_rx}, "op": "c", "$or": commands},
            {"op": "c", "ns": "admin.$cmd", "$or": [
                {"o.applyOps": {"$exists": True}, "o.prepare": {"$ne": True}, "o.partialTxn": {"$ne": True}},
                {"o.commitTransaction": {"$exists": True}}]},
            {"op": "n", "ns": {"$regex": ns_rx}, "$or": noops},
        ]})
        return {self.name: {"filter": {"$and": conds}}}
