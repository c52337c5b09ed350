"""The user's stages after `$changeStream`: $match, $project, $addFields, $set, $unset,
$replaceRoot, $replaceWith, $redact — run on each event by the query engine.

Any other known stage is refused (IllegalOperation: "<stage> is not permitted
in a $changeStream pipeline"); an unknown one is 40324.  The classic-events
filter (only insert/update/replace/delete/drop/rename/dropDatabase/invalidate
without showExpandedEvents) runs just before them.
"""

from __future__ import annotations

from typing import Callable

from bson import Int64

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.changestream.context import PAUSE, ChangeStreamContext, Stage
from mongosim.shardsim.changestream.transform import EXPANDED_ONLY

ALLOWED = ("$match", "$project", "$addFields", "$set", "$unset", "$replaceRoot", "$replaceWith", "$redact")
SPLIT_STAGE = "$changeStreamSplitLargeEvent"
KNOWN_STAGES = {
    "$addFields", "$bucket", "$bucketAuto", "$changeStream", "$changeStreamSplitLargeEvent", "$collStats", "$count",
    "$currentOp", "$densify", "$documents", "$facet", "$fill", "$geoNear", "$graphLookup", "$group", "$indexStats",
    "$limit", "$listLocalSessions", "$listSampledQueries", "$listSearchIndexes", "$listSessions", "$lookup",
    "$match", "$merge", "$out", "$planCacheStats", "$project", "$redact", "$replaceRoot", "$replaceWith", "$sample",
    "$search", "$searchMeta", "$set", "$setWindowFields", "$shardedDataDistribution", "$skip", "$sort",
    "$sortByCount", "$unionWith", "$unset", "$unwind", "$vectorSearch",
}


def validate_user_pipeline(stages: list) -> tuple[list[dict], bool]:
    """Check the stages after $changeStream; return (per-event stages, split requested)."""
    out: list[dict] = []
    split = False
    for i, st in enumerate(stages):
        if not isinstance(st, dict) or len(st) != 1:
            raise MongoError(40323, "A pipeline stage specification object must contain exactly one field.")
        name = next(iter(st))
        if name == SPLIT_STAGE:
            if i != len(stages) - 1:
                raise MongoError(7182802, "$changeStreamSplitLargeEvent must be the last stage in the pipeline")
            split = True
            continue
        if name not in KNOWN_STAGES:
            raise MongoError(40324, f"Unrecognized pipeline stage name: '{name}'")
        if name == "$changeStream":
            raise MongoError(40602, "$changeStream is only valid as the first stage in a pipeline")
        if name not in ALLOWED:
            raise MongoError("IllegalOperation", f"{name} is not permitted in a $changeStream pipeline")
        out.append(st)
    return out, split


class ClassicEventFilter(Stage):
    """Without showExpandedEvents, only the classic event types reach the client."""

    name = "$match"

    def get_next(self):
        while True:
            ev = self.source.get_next()
            if ev is PAUSE or ev.op_type not in EXPANDED_ONLY:
                return ev
            if self.ctx.trace is not None:
                self.ctx.emit("filtered", ts=ev.ts_key, token=ev.sort_key, reason="expanded event (showExpandedEvents is off)")


def projects_id_only(stages: list[dict]) -> bool:
    """Are the stages `{$project: {_id: 1}}` (or `true`) alone: every event becomes `{_id: <token>}`?"""
    if len(stages) != 1 or set(stages[0]) != {"$project"}:
        return False
    spec = stages[0]["$project"]
    if not isinstance(spec, dict) or list(spec) != ["_id"]:
        return False
    v = spec["_id"]
    return v is True or (type(v) in (int, float, Int64) and v == 1)


class UserStages(Stage):
    """The user's stages, run by the query engine on each event.  A projection to `_id` alone
    (`ids_only`) is also rendered by the run renderer (batch_render), which then bypasses them."""

    name = "userStages"

    def __init__(self, source: Stage, ctx: ChangeStreamContext, stages: list[dict]) -> None:
        from mongosim.shardsim.query.stages import compile_stage

        super().__init__(source, ctx)
        self.specs = stages
        self.fns: list[Callable[[dict], dict | None]] = [compile_stage(st) for st in stages]
        self.ids_only = projects_id_only(stages)
        self.bypassable = self.ids_only

    def get_next(self):
        while True:
            ev = self.source.get_next()
            if ev is PAUSE:
                return ev
            doc = ev.doc
            for fn in self.fns:
                doc = fn(doc)
                if doc is None:
                    break
            if doc is None:
                if self.ctx.trace is not None:
                    self.ctx.emit("filtered", ts=ev.ts_key, token=ev.sort_key, reason="user $match")
                continue
            ev.doc = doc
            return ev

    def explain(self) -> dict:
        return {"userStages": self.specs}
