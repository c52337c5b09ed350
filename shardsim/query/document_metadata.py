"""Document metadata (the server's DocumentMetadataFields): what a query knows about a result beyond its
fields - its text score, its `$near`/`$geoNear` distance and point, its sort key - read with
`{$meta: "<name>"}` in projections, `$addFields`, `$sort` and expressions.

A document with metadata is a `MetaDoc`: a `dict` (so everything else treats it as the
document) carrying a `meta` dict beside it.  Stages that build a new document from one
carry its metadata over (`carry`).  Between a shard and mongos the metadata travels
inside the document as the server's `$`-prefixed fields (`$textScore`, `$dis`, `$pt`,
`$sortKey`: Document::toBsonWithMetaData) and is taken out again on arrival.
"""

from __future__ import annotations

from typing import Any

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.values import MISSING

TEXT_SCORE = "textScore"
GEO_NEAR_DISTANCE = "geoNearDistance"
GEO_NEAR_POINT = "geoNearPoint"
SORT_KEY = "sortKey"

# every name $meta accepts (unsupported ones evaluate to missing)
META_NAMES = frozenset({"textScore", "randVal", "searchScore", "searchHighlights", "geoNearDistance", "geoNearPoint",
                        "recordId", "indexKey", "sortKey", "searchScoreDetails", "searchSequenceToken",
                        "vectorSearchScore", "score", "scoreDetails", "timeseriesBucketMinTime",
                        "timeseriesBucketMaxTime"})
# the server's field names for metadata sent from a shard to mongos
_WIRE = {TEXT_SCORE: "$textScore", GEO_NEAR_DISTANCE: "$dis", GEO_NEAR_POINT: "$pt", SORT_KEY: "$sortKey"}
_FROM_WIRE = {v: k for k, v in _WIRE.items()}
_DESCRIPTIONS = {TEXT_SCORE: "text score", GEO_NEAR_DISTANCE: "$geoNear distance", GEO_NEAR_POINT: "$geoNear point"}


class MetaDoc(dict):
    """A document and its metadata."""

    __slots__ = ("meta",)

    def __init__(self, doc: dict, meta: dict) -> None:
        super().__init__(doc)
        self.meta = meta


def with_meta(doc: dict, **fields: Any) -> MetaDoc:
    """`doc` (copied) with these metadata fields added to any it has."""
    old = getattr(doc, "meta", None)
    return MetaDoc(doc, {**old, **fields} if old else fields)


def meta_of(doc: Any) -> dict:
    return getattr(doc, "meta", None) or {}


def carry(src: Any, out: Any) -> Any:
    """`out` (a new document made from `src`) with `src`'s metadata."""
    meta = getattr(src, "meta", None)
    if meta and type(out) is dict:
        return MetaDoc(out, meta)
    return out


def strip(docs: list) -> list:
    """The documents without their metadata (before they are written anywhere)."""
    return [dict(d) if type(d) is MetaDoc else d for d in docs]


def parse_meta(arg: Any) -> str:
    """The name of `{$meta: arg}` (17308 if unknown)."""
    if not isinstance(arg, str) or arg not in META_NAMES:
        raise MongoError(17308, f"Unsupported argument to $meta: {arg}")
    return arg


def meta_value(doc: Any, name: str) -> Any:
    """The value of `{$meta: name}` for `doc` (MISSING when it has none)."""
    return meta_of(doc).get(name, MISSING)


def unavailable(name: str, pipeline: bool = False) -> MongoError:
    if pipeline and name == TEXT_SCORE:
        return MongoError(40218, "pipeline requires text score metadata, but there is no text score available")
    return MongoError(40218, f"query requires {_DESCRIPTIONS.get(name, name)} metadata, but it is not available")


def to_wire(doc: dict) -> dict:
    """The document as a shard sends it to mongos: its metadata as `$textScore`, `$dis`, `$pt`, `$sortKey`."""
    meta = getattr(doc, "meta", None)
    if not meta:
        return doc
    out = dict(doc)
    for name, field in _WIRE.items():
        if name in meta:
            out[field] = meta[name]
    return out


def from_wire(doc: dict) -> dict:
    """A document from a shard, its metadata fields taken out again."""
    if not any(k in _FROM_WIRE for k in doc):
        return doc
    meta = {}
    out = {}
    for k, v in doc.items():
        name = _FROM_WIRE.get(k)
        if name is None:
            out[k] = v
        else:
            meta[name] = v
    return MetaDoc(out, meta)
