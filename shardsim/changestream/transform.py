"""$_internalChangeStreamTransform: an oplog entry becomes a change event.

The fields, in the server's order (change_stream_event_transform.cpp):

    [to]  [txnNumber, lsid]  _id  operationType  clusterTime  [commitTimestamp]
    [collectionUUID]  wallTime  [fullDocument]  ns  [documentKey]
    [operationDescription]  [updateDescription]  [stateBeforeChange]

`to` is the rename target (it predates operationDescription and is added
first); `txnNumber`/`lsid` only for events unwound from a transaction;
`commitTimestamp` only with showCommitTimestamp, for events of a prepared
(multi-shard) transaction; `collectionUUID` and `operationDescription` only
with showExpandedEvents.
The `_id` is the resume token: clusterTime, txnOpIndex, the collection UUID
and the event identifier `{operationType, documentKey | operationDescription}`
(v2; resuming from an older token, the events up to it carry the client's
version: `token_version.py`).
"""

from __future__ import annotations

from typing import Any

from bson import Binary

from mongosim.oplog import bsonutil
from mongosim.oplog.clock import ts_key
from mongosim.oplog.oplog import EntryView
from mongosim.shardsim.changestream.render import render_crud
from mongosim.oplog.resume_token import ResumeTokenData, encode_resume_token
from mongosim.shardsim.changestream.context import PAUSE, ChangeStreamContext, Event, Stage
from mongosim.shardsim.changestream.token_version import ClientTokenVersion
from mongosim.shardsim.query.diff import update_description

try:  # the fast path for CRUD event tokens, when the codec provides one
    from mongosim.oplog.resume_token import encode_event_token as _fast_token
except ImportError:  # pragma: no cover
    _fast_token = None

EXPANDED_ONLY = frozenset({
    "create", "createIndexes", "dropIndexes", "modify", "shardCollection", "refineCollectionShardKey",
    "reshardCollection", "migrateLastChunkFromShard", "reshardBegin", "reshardDoneCatchUp", "endOfTransaction",
})


def _without(d: dict, *keys: str) -> dict:
    return {k: v for k, v in d.items() if k not in keys}


def _ns_doc(ns: str) -> dict:
    db, _, coll = ns.partition(".")
    return {"db": db, "coll": coll} if coll else {"db": db}


def make_token(ts: Any, txn_op_index: int, uuid: Any, op_type: str, document_key: Any = None,
               op_description: Any = None, from_invalidate: bool = False) -> dict:
    """The resume token of an event (v2)."""
    if _fast_token is not None and document_key is not None and op_description is None:
        data, type_bits = _fast_token(ts_key(ts), txn_op_index, bytes(uuid) if uuid is not None else None,
                                      op_type, document_key, from_invalidate)
        return {"_data": data} if type_bits is None else {"_data": data, "_typeBits": Binary(type_bits, 0)}
    ident: dict[str, Any] = {"operationType": op_type}
    if document_key is not None:
        ident["documentKey"] = document_key
    if op_description is not None:
        ident["operationDescription"] = op_description
    return encode_resume_token(ResumeTokenData(
        cluster_time=ts, txn_op_index=txn_op_index, from_invalidate=from_invalidate,
        uuid=uuid, event_identifier=ident,
    ))


class Transform(Stage):
    name = "$_internalChangeStreamTransform"

    def __init__(self, source: Stage, ctx: ChangeStreamContext) -> None:
        super().__init__(source, ctx)
        spec = ctx.spec
        self.expanded = spec.show_expanded_events
        self.raw_update = spec.show_raw_update_description
        self.show_commit_ts = spec.show_commit_timestamp
        self.want_pre = spec.full_document_before_change != "off"
        self.want_post = spec.full_document in ("whenAvailable", "required")
        self.cache = getattr(ctx.node, "event_cache", None)
        self.client_version = ClientTokenVersion.for_stream(ctx.client_token)  # resuming from a v1 token

    def skippable(self) -> bool:
        return not self.raw_update  # (the run renderer writes updateDescription)

    def get_next(self):
        e = self.source.get_next()
        if e is PAUSE:
            return e
        if type(e) is EntryView:
            ev = self.render(e)
            if ev is None:
                ev = self.transform(bsonutil.decode(e.raw))
        else:
            ev = self.transform(e)
        if self.client_version is not None:
            self.client_version.adopt(ev)
        return ev

    def render(self, view: EntryView) -> Event | None:
        """The fast path: a CRUD event assembled from the entry's bytes (render.py)."""
        cache = self.cache
        r = cache.get((view.pos, self.expanded)) if cache is not None else None
        if r is None:
            r = render_crud(view, self.expanded, self.raw_update)
            if r is None:
                return None
            if cache is not None and view.pos >= 0:
                cache.put((view.pos, self.expanded), r)
        op_type, token, raw, _key, diff = r
        ev = Event(None, token, view.key, raw=raw, op_type=op_type)
        ev.uuid = view.ui
        if (self.want_pre and op_type in ("update", "replace", "delete")) or (self.want_post and op_type == "update"):
            ev.pre_image_id = (view.ui, view.key, 0)
        if self.want_post and op_type == "update":
            ev.raw_update = {"$v": 2, "diff": diff}
        if self.ctx.trace is not None:
            self.ctx.emit("transformed", ts=view.key, operation_type=op_type, key=token["_data"])
        return ev

    def transform(self, e: dict) -> Event:
        op = e["op"]
        ns = e["ns"]
        o = e.get("o") or {}
        uuid = e.get("ui")
        head: dict[str, Any] = {}
        full_document = update_desc = document_key = op_desc = state_before = None
        raw_update = None
        if op == "i":
            op_type = "insert"
            full_document = o
            document_key = e.get("o2") or {"_id": o.get("_id")}
        elif op == "d":
            op_type = "delete"
            document_key = o
        elif op == "u":
            document_key = e.get("o2")
            if o.get("$v") == 2:
                op_type = "update"
                if self.raw_update:
                    update_desc = o
                else:
                    update_desc = update_description(o["diff"], show_expanded=self.expanded)
                raw_update = o
            else:
                op_type = "replace"
                full_document = o
        elif op == "c":
            db = ns[: -len(".$cmd")]
            document_key = None
            if "drop" in o:
                op_type, ns = "drop", f"{db}.{o['drop']}"
            elif "renameCollection" in o:
                op_type, ns = "rename", o["renameCollection"]
                to = _ns_doc(o["to"])
                head["to"] = to
                desc = _without(o, "renameCollection", "stayTemp")
                desc["to"] = to
                op_desc = desc
            elif "dropDatabase" in o:
                op_type, ns = "dropDatabase", db
            elif "create" in o:
                op_type, ns = "create", f"{db}.{o['create']}"
                op_desc = _without(o, "create")
            elif "createIndexes" in o:
                op_type, ns = "createIndexes", f"{db}.{o['createIndexes']}"
                op_desc = {"indexes": [_without(o, "createIndexes")]}
            elif "commitIndexBuild" in o:
                op_type, ns = "createIndexes", f"{db}.{o['commitIndexBuild']}"
                op_desc = {"indexes": o.get("indexes")}
            elif "dropIndexes" in o:
                op_type, ns = "dropIndexes", f"{db}.{o['dropIndexes']}"
                op_desc = {"indexes": [_without(e.get("o2") or {}, "dropIndexes")]}
            elif "collMod" in o:
                op_type, ns = "modify", f"{db}.{o['collMod']}"
                op_desc = _without(o, "collMod")
                o2 = e.get("o2") or {}
                state_before = {"collectionOptions": o2.get("collectionOptions_old")}
                if "indexOptions_old" in o2:
                    state_before["indexOptions"] = o2["indexOptions_old"]
            else:
                raise AssertionError(f"unexpected command in change stream: {o}")
        else:  # noop
            o2 = e.get("o2") or {}
            for k, t in (("shardCollection", "shardCollection"), ("migrateLastChunkFromShard", "migrateLastChunkFromShard"),
                         ("refineCollectionShardKey", "refineCollectionShardKey"), ("reshardCollection", "reshardCollection"),
                         ("migrateChunkToNewShard", "migrateChunkToNewShard")):
                if k in o2:
                    op_type = t
                    op_desc = _without(o2, k)
                    break
            else:
                raise AssertionError(f"unexpected noop in change stream: {e}")
        # view definitions: CRUD on <db>.system.views are DDL events on the view
        if op in ("i", "u", "d") and ns.endswith(".system.views"):
            return self._view_event(e, op, o, uuid)

        ts = e["ts"]
        txn_op_index = e.get("txnOpIndex")
        if txn_op_index is not None:
            if "txnNumber" in e:
                head["txnNumber"] = e["txnNumber"]
            if "lsid" in e:
                head["lsid"] = e["lsid"]
        token = make_token(ts, txn_op_index or 0, uuid, op_type, document_key, op_desc)
        doc = head
        doc["_id"] = token
        doc["operationType"] = op_type
        doc["clusterTime"] = ts
        if self.show_commit_ts and "commitTimestamp" in e:  # events of a prepared transaction
            doc["commitTimestamp"] = e["commitTimestamp"]
        if self.expanded and uuid is not None:
            doc["collectionUUID"] = uuid
        doc["wallTime"] = e["wall"]
        if full_document is not None:
            doc["fullDocument"] = full_document
        doc["ns"] = _ns_doc(ns)
        if document_key is not None:
            doc["documentKey"] = document_key
        if self.expanded and op_desc is not None:
            doc["operationDescription"] = op_desc
        if update_desc is not None:
            doc["rawUpdateDescription" if self.raw_update else "updateDescription"] = update_desc
        if state_before is not None:
            doc["stateBeforeChange"] = state_before
        ev = Event(doc, token, ts_key(ts))
        ev.uuid = uuid
        if (self.want_pre and op_type in ("update", "replace", "delete")) or (self.want_post and op_type == "update"):
            apply_ts = e.get("applyOpsTs", ts)
            ev.pre_image_id = (bytes(uuid), ts_key(apply_ts), e.get("applyOpsIndex", 0))
        if self.want_post and op_type == "update":
            ev.raw_update = raw_update
        if self.ctx.trace is not None:
            self.ctx.emit("transformed", ts=ev.ts_key, operation_type=op_type, key=token["_data"])
        return ev

    def _view_event(self, e: dict, op: str, o: dict, uuid: Any) -> Event:
        """ChangeStreamViewDefinitionEventTransformation: system.views writes as view DDL."""
        ts = e["ts"]
        if op == "i":
            op_type, desc, view_ns = "create", _without(o, "_id"), o["_id"]
        elif op == "u":
            op_type, desc, view_ns = "modify", _without(o, "_id"), o.get("_id", "")
        else:
            op_type, desc, view_ns = "drop", None, o.get("_id", "")
        token = make_token(ts, e.get("txnOpIndex") or 0, uuid, op_type, None, desc)
        doc: dict[str, Any] = {"_id": token, "operationType": op_type, "clusterTime": ts, "wallTime": e["wall"],
                               "ns": _ns_doc(view_ns)}
        if self.expanded and desc is not None:
            doc["operationDescription"] = desc
        return Event(doc, token, ts_key(ts))
