"""collMod on a node: a collection's options, its indexes' options, a view's definition, a time-series
collection's bucketing (catalog/coll_mod.cpp, coll_mod_index.cpp, timeseries/timeseries_collmod.cpp).

The request is parsed as the IDL does (coll_mod_request.py); then, for a collection, in the order of
8.0's parseCollModRequest:

1. `collectionUUID`: a UUID that is not the collection's is CollectionUUIDMismatch (collection_uuid.py);
2. `cappedSize` / `cappedMax` (6.0+): only on a capped collection ("Collection must be capped."); the
   size is kept as given (8.0 no longer rounds it to 256 bytes, featureFlagCappedCollectionsRelaxedSize),
   a `cappedMax` <= 0 means no document limit (2^31 - 1).  Nothing is deleted now: the next insert
   evicts the oldest documents down to the new limits (capped.py);
3. `index`: hidden, expireAfterSeconds, prepareUnique, unique, forceNonUnique of one index (by name or
   key pattern), a change to the value it has being no change;
4. `validator`, `validationLevel`, `validationAction` (not on a time-series collection);
5. `pipeline`, `viewOn`: "option only supported on a view";
6. `changeStreamPreAndPostImages: {enabled}`;
7. `expireAfterSeconds` ("off" or seconds): only on a collection clustered by `_id` (a clustered
   collection, a time-series collection's buckets);
8. `timeseries` (granularity, or bucketMaxSpanSeconds + bucketRoundingSeconds; timeseries.py) and
   `timeseriesBucketsMayHaveMixedSchemaData`: only on a time-series collection.

The options are then written back as CollectionOptions serializes them (collection_options.canonical:
`size`/`max` as numbers, `expireAfterSeconds` a long, `changeStreamPreAndPostImages` only when enabled,
an empty validator not at all), and the entry is logged:

    {op: "c", ns: "<db>.$cmd", ui, o: {collMod: <coll>, ...the changes, in that order},
     o2: {collectionOptions_old: {uuid, ...}, indexOptions_old?: {...},
          backwardsIncompatibleCollModParameters?: {timeseriesBucketsMayHaveMixedSchemaData}}}

(`cappedSize`, `cappedMax` and a numeric `expireAfterSeconds` as longs; an index's no-op options left
out, the whole `index` when nothing of it changes; the mixed-schema flag in `o2` only, as 8.0's
backwards-compatible catalog options are logged, SERVER-91195).  A change stream reports it as a
`modify` event: `operationDescription` = `o` without `collMod`, `stateBeforeChange` from `o2`.  The
reply is `{ok: 1}` with, for an index change, `expireAfterSeconds_old/_new`, `hidden_old/_new`,
`unique_new`, `prepareUnique_old/_new`, `forceNonUnique_new`.

A time-series collection (`<coll>` a view over `system.buckets.<coll>`) is modified as
processCollModCommandWithTimeSeriesTranslation does: a `collectionUUID` always mismatches (the view has
none); when the bucketing changes the view's pipeline is rewritten first (a `system.views` update:
a `modify` event of the view); then the command runs on the buckets collection, without
`collectionUUID`, `cappedSize` and `cappedMax` (which makeTimeseriesBucketsCollModCommand does not
copy) — its entry is on `system.buckets.<coll>`.  A view takes `viewOn` and `pipeline` only.

Secondaries apply the entry with the same code (`apply_entry`), the mixed-schema flag taken back from
`o2` (backwards_compatible_collection_options parseCollModCmdFromOplogEntry).
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bson import Int64

from mongosim.oplog import entry as E
from mongosim.oplog.errors import MongoError
from mongosim.shardsim import coll_mod_request, timeseries, timeseries_index_conversion, view_catalog
from mongosim.shardsim.capped import MAX_DOCS
from mongosim.shardsim.catalog import Collection
from mongosim.shardsim.collection_options import canonical, refresh
from mongosim.shardsim.collection_uuid import check_collection_uuid
from mongosim.shardsim.command_registry import command
from mongosim.shardsim.create_collection import check_namespace
from mongosim.shardsim.ddl import valid_collection_name
from mongosim.shardsim.index_descriptor import same_key
from mongosim.shardsim.document_validation import check_options
from mongosim.shardsim.oplog_collection import is_oplog
from mongosim.shardsim.operation_context import OpCtx
from mongosim.shardsim.query.fmt import bson_str

if TYPE_CHECKING:
    from mongosim.shardsim.node import Node

BACKWARDS_INCOMPATIBLE = "backwardsIncompatibleCollModParameters"
_EPOCH = datetime.datetime(1970, 1, 1)
# the fields in the order parseCollModRequest looks at them
_PARSE_ORDER = ("cappedSize", "cappedMax", "index", "validator", "validationLevel", "validationAction", "pipeline",
                "viewOn", "changeStreamPreAndPostImages", "expireAfterSeconds", "timeseries",
                "timeseriesBucketsMayHaveMixedSchemaData")


@dataclass
class _Plan:
    """A parsed collMod of one collection: what changes, and its oplog entry's `o`."""

    o: dict
    changes: dict = field(default_factory=dict)  # option -> new value (None: removed)
    index: dict | None = None  # the index's catalog spec
    index_new: dict = field(default_factory=dict)  # its options that change
    modifications: int = 0
    o2_extra: dict = field(default_factory=dict)


@command("collMod")
def cmd_coll_mod(node: Node, ctx: OpCtx) -> dict:
    name = check_namespace(ctx.db, ctx.cmd["collMod"])
    req = coll_mod_request.parse(ctx.cmd, ctx.db, name)
    coll = node.catalog.collection(ctx.db, name)
    if coll is None:
        view = view_catalog.definition(node, ctx.db, name)
        if view is not None and timeseries.options_of(node, ctx.db, view) is not None:
            return _coll_mod_timeseries(node, ctx, name, view, req)
        if is_oplog(ctx.db, name) and ("cappedSize" in req or "cappedMax" in req):
            raise MongoError("InvalidOptions", "Cannot resize the oplog using this command. Use the "
                                               "'replSetResizeOplog' command instead.")
        _check_dry_run(req)
        if view is None or _unique_conversion(req):
            check_collection_uuid(node, ctx.db, name, None, req.get("collectionUUID"))
            if _unique_conversion(req):
                raise MongoError("NamespaceNotFound", f"ns does not exist for unique index conversion: {ctx.db}.{name}")
            raise MongoError("NamespaceNotFound", f"ns does not exist: {ctx.db}.{name}")
        return _coll_mod_view(node, ctx, name, view, req)
    return modify(node, ctx, coll, req)


def _unique_conversion(req: dict) -> bool:
    return bool((req.get("index") or {}).get("unique")) and not req.get("dryRun")


def _check_dry_run(req: dict) -> None:
    if not req.get("dryRun"):
        return
    if "index" not in req:
        raise MongoError("InvalidOptions", "dry run mode requires an valid index modification.")
    if not req["index"].get("unique"):
        raise MongoError("InvalidOptions", "dry run mode requires an index modification with unique: true.")


def modify(node: Node, ctx: OpCtx, coll: Collection, req: dict) -> dict:
    """collMod of the collection `coll`: checked, applied, logged; the reply."""
    _check_dry_run(req)
    plan = _plan(node, coll, req)
    if req.get("dryRun"):
        if plan.modifications > 1:
            raise MongoError("InvalidOptions", "unique: true cannot be combined with any other modification in dry "
                                               "run mode.")
        if plan.index is not None:
            _check_convertible(coll, plan.index)
        return {"ok": 1.0}
    o2: dict[str, Any] = {"collectionOptions_old": {"uuid": coll.uuid, **canonical(coll.options)}}
    reply, index_old = _apply(coll, plan)
    if index_old is not None:
        o2["indexOptions_old"] = index_old
    o2.update(plan.o2_extra)
    node.log(E.command_op(ctx.db, plan.o, ui=coll.uuid, o2=o2), ctx, from_migrate=bool(ctx.cmd.get("fromMigrate")))
    reply["ok"] = 1.0
    return reply


def apply_entry(node: Node, db: str, o: dict, o2: dict | None) -> None:
    """A secondary applies a collMod entry (the primary's checks passed: they pass again)."""
    coll = node.catalog.collection(db, o.get("collMod", ""))
    if coll is None:
        return
    cmd = {**o, **((o2 or {}).get(BACKWARDS_INCOMPATIBLE) or {})}
    try:
        _apply(coll, _plan(node, coll, coll_mod_request.parse(cmd, db, coll.name)), primary=False)
    except MongoError:  # (idempotent application: an index gone since, ...)
        pass


# -- parseCollModRequest ---------------------------------------------------------------------
def _plan(node: Node, coll: Collection, req: dict) -> _Plan:
    plan = _Plan(o={"collMod": coll.name})
    opts = coll.options
    is_ts = "timeseries" in opts
    check_collection_uuid(node, coll.db, coll.name, coll, req.get("collectionUUID"))
    if "cappedSize" in req or "cappedMax" in req:
        if coll.capped is None and not opts.get("capped"):
            raise MongoError("InvalidOptions", "Collection must be capped.")
        if "cappedSize" in req:
            plan.changes["size"] = _number(req["cappedSize"])
            plan.o["cappedSize"] = Int64(req["cappedSize"])
        if "cappedMax" in req:
            n = req["cappedMax"]
            plan.changes["max"] = n if n > 0 else MAX_DOCS
            plan.o["cappedMax"] = Int64(n)
    if "index" in req:
        _plan_index(coll, req["index"], plan, is_ts)
    for k in ("validator", "validationLevel", "validationAction"):
        if k in req:
            if is_ts:
                raise MongoError("InvalidOptions", f"option not supported on a time-series collection: {k}")
            plan.modifications += 1
            if k == "validator":
                check_options("collMod", coll.db, coll.name, {"validator": req[k]})
            plan.changes[k] = req[k] if (k != "validator" or req[k]) else None
            plan.o[k] = req[k]
    for k in ("pipeline", "viewOn"):
        if k in req:
            raise MongoError("InvalidOptions", f"option only supported on a view: {k}")
    if "changeStreamPreAndPostImages" in req:
        if is_ts:
            raise MongoError("InvalidOptions", "option not supported on a time-series collection: "
                                               "changeStreamPreAndPostImages")
        plan.modifications += 1
        images = req["changeStreamPreAndPostImages"]
        plan.changes["changeStreamPreAndPostImages"] = images if images["enabled"] else None
        plan.o["changeStreamPreAndPostImages"] = images
    if "expireAfterSeconds" in req:
        plan.modifications += 1
        _plan_expire_after_seconds(node, coll, req["expireAfterSeconds"], plan)
    if "timeseries" in req:
        plan.modifications += 1
        if not is_ts:
            raise MongoError("InvalidOptions", "option only supported on a time-series collection: timeseries")
        plan.o["timeseries"] = req["timeseries"]
        new = timeseries.modified_options(opts["timeseries"], req["timeseries"])
        if new is not None:
            plan.changes["timeseries"] = new
    if timeseries.MIXED_SCHEMA in req:
        if not is_ts:
            raise MongoError("InvalidOptions", f"option only supported on a time-series collection: "
                                               f"{timeseries.MIXED_SCHEMA}")
        plan.modifications += 1
        plan.o2_extra[BACKWARDS_INCOMPATIBLE] = {timeseries.MIXED_SCHEMA: req[timeseries.MIXED_SCHEMA]}
    if plan.index_new.get("prepareUnique") is not None and plan.modifications > 1:
        raise MongoError("InvalidOptions", "prepareUnique cannot be combined with any other modification.")
    return plan


def _number(n: int) -> int | Int64:
    """BSONObjBuilder::appendNumber: an int when it fits, else a long."""
    return n if -(1 << 31) <= n < (1 << 31) else Int64(n)


def _plan_expire_after_seconds(node: Node, coll: Collection, value: str | int, plan: _Plan) -> None:
    if "clusteredIndex" not in coll.options:
        raise MongoError("InvalidOptions", "'expireAfterSeconds' option is only supported on collections clustered by "
                                           "_id")
    if isinstance(value, str):
        if value != "off":
            raise MongoError("InvalidOptions", "Invalid string value for the 'clusteredIndex::expireAfterSeconds' "
                                               f"option. Got: '{value}'. Accepted value is 'off'")
        plan.changes["expireAfterSeconds"] = None
        plan.o["expireAfterSeconds"] = value
        return
    plan.o["expireAfterSeconds"] = Int64(value)
    if value < 0:
        raise MongoError("InvalidOptions", "TTL index 'expireAfterSeconds' option cannot be less than 0")
    epoch_millis = int((node.wall.wall() - _EPOCH).total_seconds() * 1000)
    if value > ((1 << 63) - 1) // 1000 or value * 1000 > epoch_millis:
        raise MongoError("InvalidOptions", "TTL index 'expireAfterSeconds' option must be within an acceptable range, "
                                           "try a lower number")
    plan.changes["expireAfterSeconds"] = Int64(value)


def _plan_index(coll: Collection, index: dict, plan: _Plan, is_ts: bool) -> None:
    """parseCollModRequest's `index`: the index found, its options checked; the no-ops left out of `o`."""
    if "name" in index and "keyPattern" in index:
        raise MongoError("InvalidOptions", "Cannot specify both key pattern and name.")
    if "name" not in index and "keyPattern" not in index:
        raise MongoError("InvalidOptions", "Must specify either index name or key pattern.")
    options = {k: v for k, v in index.items() if k not in ("name", "keyPattern")}
    if not options:
        raise MongoError("InvalidOptions", "no expireAfterSeconds, hidden, unique, or prepareUnique field")
    if options.get("unique") and options.get("forceNonUnique"):
        raise MongoError("InvalidOptions", "collMod does not support 'unique' and 'forceNonUnique' options at the "
                                           "same time")
    if "expireAfterSeconds" in options:
        if is_ts:
            raise MongoError("InvalidOptions", "TTL indexes are not supported for time-series collections. Please "
                                               "refer to the documentation and use the top-level 'expireAfterSeconds' "
                                               "option instead")
        if coll.options.get("capped"):
            raise MongoError("InvalidOptions", "TTL indexes are not supported for capped collections.")
        if options["expireAfterSeconds"] < 0:
            raise MongoError("InvalidOptions", "TTL index 'expireAfterSeconds' option cannot be less than 0")
    clustered = coll.options.get("clusteredIndex")
    if "hidden" in options and isinstance(clustered, dict) and (
            index.get("name") == clustered.get("name") or index.get("keyPattern") == clustered.get("key")):
        raise MongoError(6011800, "The 'hidden' option is not supported for a clusteredIndex")
    spec = _find_index(coll, index)
    for_oplog = {k: index[k] for k in ("name", "keyPattern") if k in index}
    new: dict[str, Any] = {}
    if "expireAfterSeconds" in options:
        plan.modifications += 1
        if "expireAfterSeconds" not in spec:
            if spec["name"] == "_id_":
                raise MongoError("InvalidOptions", "the _id field does not support TTL indexes")
            if len(spec["key"]) != 1:
                raise MongoError("InvalidOptions", "TTL indexes are single-field indexes, compound indexes do not "
                                                   "support TTL")
        new["expireAfterSeconds"] = for_oplog["expireAfterSeconds"] = options["expireAfterSeconds"]
    if "hidden" in options:
        plan.modifications += 1
        if coll.name.startswith("system.") and not coll.name.startswith(timeseries.BUCKETS):
            raise MongoError("BadValue", "Can't hide index on system collection")
        if spec["name"] == "_id_":
            raise MongoError("BadValue", "can't hide _id index")
        if bool(spec.get("hidden")) != options["hidden"]:
            new["hidden"] = for_oplog["hidden"] = options["hidden"]
    if "unique" in options:
        plan.modifications += 1
        if not options["unique"]:
            raise MongoError("BadValue", "Cannot make index non-unique, use forceNonUnique instead")
        if not spec.get("unique"):
            if not (spec.get("prepareUnique") or options.get("prepareUnique")):
                raise MongoError("InvalidOptions", "Cannot make index unique with 'unique: true' unless "
                                                   "'prepareUnique' is set to true")
            new["unique"] = for_oplog["unique"] = True
    if "prepareUnique" in options:
        plan.modifications += 1
        if bool(spec.get("prepareUnique")) != options["prepareUnique"] and not spec.get("unique"):
            new["prepareUnique"] = for_oplog["prepareUnique"] = options["prepareUnique"]
    if "forceNonUnique" in options:
        plan.modifications += 1
        if not options["forceNonUnique"]:
            raise MongoError("BadValue", "'forceNonUnique: false' is not supported")
        if spec.get("unique"):
            new["forceNonUnique"] = for_oplog["forceNonUnique"] = True
    if len(for_oplog) > 1:
        plan.o["index"] = for_oplog
    plan.index, plan.index_new = spec, new


def _find_index(coll: Collection, index: dict) -> dict:
    if "name" in index:
        spec = coll.index(index["name"])
        if spec is None:
            raise MongoError("IndexNotFound", f"cannot find index {index['name']} for ns {coll.ns}")
        return spec
    found = [s for s in coll.indexes if same_key(s["key"], index["keyPattern"])]
    if len(found) > 1:
        raise MongoError("AmbiguousIndexKeyPattern", f"index keyPattern {index['keyPattern']} matches {len(found)} "
                                                     f"indexes, must use index name. Conflicting indexes:{found[0]}, "
                                                     f"{found[1]}")
    if not found:
        raise MongoError("IndexNotFound", f"cannot find index {index['keyPattern']} for ns {coll.ns}")
    return found[0]


def _check_convertible(coll: Collection, spec: dict) -> None:
    """CannotConvertIndexToUnique 359 with the `_id`s of each group of documents sharing a key."""
    from mongosim.shardsim.index_access_method import IndexAccessMethod

    ix = IndexAccessMethod(spec)
    groups: dict[tuple, list] = {}
    for doc in coll.docs.values():
        for key in ix.keys(doc):
            groups.setdefault(ix.encode(key), []).append(doc["_id"])
    violations = [{"ids": ids} for ids in groups.values() if len(ids) > 1]
    if violations:
        raise MongoError("CannotConvertIndexToUnique", "Cannot convert the index to unique. Please resolve conflicting "
                                                       "documents before running collMod again.", violations=violations)


# -- _collModInternal --------------------------------------------------------------------------
def _apply(coll: Collection, plan: _Plan, *, primary: bool = True) -> tuple[dict, dict | None]:
    """Apply the plan: (the reply's index fields, the index's old options for `o2`, or None).  A
    secondary changes the catalog alone (it derives no write-path state: it applies what the primary
    wrote)."""
    reply: dict[str, Any] = {}
    index_old = None
    if plan.index is not None and plan.index_new:
        index_old = _apply_index(coll, plan.index, plan.index_new, reply)
    opts = dict(coll.options)
    for k, v in plan.changes.items():
        if v is None:
            opts.pop(k, None)
        else:
            opts[k] = v
    if plan.o2_extra:
        opts = timeseries.set_mixed_schema(opts, plan.o2_extra[BACKWARDS_INCOMPATIBLE][timeseries.MIXED_SCHEMA])
    coll.options = canonical(opts)
    if coll.capped is not None:  # (the limits the next insert evicts down to)
        coll.capped.size = int(opts.get("size") or 0)
        coll.capped.max = opts.get("max")
    if primary:
        refresh(coll)
    return reply, index_old


def _apply_index(coll: Collection, spec: dict, new: dict, reply: dict) -> dict:
    """processCollModIndexRequest: the index's catalog spec changed; the reply's fields and the old options."""
    old: dict[str, Any] = {}
    if "expireAfterSeconds" in new:
        if "expireAfterSeconds" in spec:
            before = spec["expireAfterSeconds"]
            old["expireAfterSeconds"] = Int64(int(before)) if isinstance(before, (int, float)) else Int64(0)
            reply["expireAfterSeconds_old"] = old["expireAfterSeconds"]
        reply["expireAfterSeconds_new"] = Int64(new["expireAfterSeconds"])
        spec["expireAfterSeconds"] = new["expireAfterSeconds"]
    if "hidden" in new:
        _flip(spec, "hidden", new["hidden"], old, reply)
    if "unique" in new:
        _check_convertible(coll, spec)
        reply["unique_new"] = True
        spec["unique"] = True
        spec.pop("prepareUnique", None)  # (reset once the index is unique)
    if "prepareUnique" in new:
        _flip(spec, "prepareUnique", new["prepareUnique"], old, reply)
    if "forceNonUnique" in new:
        reply["forceNonUnique_new"] = True
        spec.pop("unique", None)
    if spec.get("unique") or spec.get("prepareUnique"):
        coll.index_access(spec["name"])  # (kept materialized: every write checks it)
    return old


def _flip(spec: dict, option: str, value: bool, old: dict, reply: dict) -> None:
    """A boolean index option set (the catalog keeps it only when true); its old value noted."""
    old[option] = bool(spec.get(option))
    reply[f"{option}_old"], reply[f"{option}_new"] = old[option], value
    if value:
        spec[option] = True
    else:
        spec.pop(option, None)


# -- views and time-series collections -------------------------------------------------------------
def _coll_mod_view(node: Node, ctx: OpCtx, name: str, view: dict, req: dict) -> dict:
    """collMod on a view (coll_mod.cpp): only `viewOn` and `pipeline` may change, each alone or both (the
    other keeps its value; an empty `viewOn` is ignored); the definition is validated and written as
    `view_catalog.modify_view` does.  Reply `{ok: 1}`.  (With auth, naming only one of the two is refused
    before the command runs: router/auth.)"""
    check_collection_uuid(node, ctx.db, name, None, req.get("collectionUUID"))
    for k in _PARSE_ORDER:  # parseCollModRequest on a view
        if k not in req or k in ("pipeline", "viewOn"):
            continue
        if k in ("timeseries", timeseries.MIXED_SCHEMA):
            raise MongoError("InvalidOptions", f"option only supported on a time-series collection: {k}")
        raise MongoError("InvalidOptions", f"option not supported on a view: {k}")
    view_on = req.get("viewOn") or view["viewOn"]
    if not valid_collection_name(view_on):
        raise MongoError("InvalidNamespace", f"invalid name for 'viewOn': {view_on}")
    pipeline = req["pipeline"] if "pipeline" in req else list(view.get("pipeline") or [])
    view_catalog.modify_view(node, ctx, name, view_on, pipeline)
    return {"ok": 1.0}


_NOT_FOR_BUCKETS = ("collectionUUID", "cappedSize", "cappedMax")
_GENERIC_IN_REQUEST = frozenset({"lsid", "txnNumber", "$clusterTime", "$readPreference", "writeConcern", "readConcern",
                                 "comment", "maxTimeMS", "apiVersion", "apiStrict", "apiDeprecationErrors"})


def _coll_mod_timeseries(node: Node, ctx: OpCtx, name: str, view: dict, req: dict) -> dict:
    """processCollModCommandWithTimeSeriesTranslation: the view's pipeline first when the bucketing
    changes, then the command on the buckets collection."""
    check_collection_uuid(node, ctx.db, name, None, req.get("collectionUUID"))  # (the view has no UUID)
    buckets = node.catalog.collection(ctx.db, view["viewOn"])
    assert buckets is not None
    index = req.get("index")
    if isinstance(index, dict) and isinstance(index.get("keyPattern"), dict):
        # the user's key pattern names the bucket index it was translated to (makeTimeseriesBucketsCollModCommand)
        try:
            key = timeseries_index_conversion.bucket_key(buckets.options["timeseries"], index["keyPattern"])
        except timeseries_index_conversion.InvalidSpec as bad:
            # (the request as the parsed CollMod serializes it: its own fields and $db; the generic
            # arguments it would carry are left out here)
            shown = {k: v for k, v in ctx.cmd.items() if k not in _GENERIC_IN_REQUEST and k != "$db"}
            shown["$db"] = ctx.db
            raise MongoError("IndexNotFound", f"{bad} Command request: {bson_str(shown)}") from None
        req = {**req, "index": {**index, "keyPattern": key}}
    if "timeseries" in req:
        try:
            new = timeseries.modified_options(buckets.options["timeseries"], req["timeseries"])
        except MongoError:
            new = None  # (the buckets collection's collMod reports it)
        if new is not None:
            view_catalog.modify_view(node, ctx, name, view["viewOn"], timeseries.view_pipeline(new))
    return modify(node, ctx, buckets, {k: v for k, v in req.items() if k not in _NOT_FOR_BUCKETS})
