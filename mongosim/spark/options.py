"""Options shared by the streaming and the batch source: the change stream's namespace and `$changeStream` spec.

Every option is a string (that is how Spark passes them):

- `database`, `collection` — the stream's namespace; a collection needs its
  database; neither gives a whole-cluster stream.
- `pipeline` — the stages after `$changeStream`, as a JSON array (Extended JSON
  allowed, e.g. `[{"$match": {"operationType": "insert"}}]`).
- `fullDocument` (default | updateLookup | whenAvailable | required),
  `fullDocumentBeforeChange` (off | whenAvailable | required),
  `showExpandedEvents` (true | false).
- `startAtOperationTime` — `"<seconds>,<increment>"` or `"<seconds>"`;
  `startAfter` — a token's `_data`.  At most one of them.
- `fullDocumentSchema` — parse `fullDocument` into this Spark schema (DDL);
  `includeRawEvent` — add the `rawEvent` BINARY column.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from bson import json_util

from mongosim.spark.offsets import parse_operation_time

_TRUE = ("true", "1", "yes")
_FALSE = ("false", "0", "no", "")


def parse_bool(name: str, value: Any, default: bool = False) -> bool:
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    v = str(value).strip().lower()
    if v in _TRUE:
        return True
    if v in _FALSE:
        return False
    raise ValueError(f"option {name} must be true or false, got {value!r}")


def parse_int(name: str, value: Any, default: int | None = None, minimum: int = 0) -> int | None:
    if value is None or str(value).strip() == "":
        return default
    try:
        n = int(str(value).strip())
    except ValueError:
        raise ValueError(f"option {name} must be an integer, got {value!r}") from None
    if n < minimum:
        raise ValueError(f"option {name} must be >= {minimum}, got {n}")
    return n


def parse_float(name: str, value: Any, default: float) -> float:
    if value is None or str(value).strip() == "":
        return default
    try:
        return float(str(value).strip())
    except ValueError:
        raise ValueError(f"option {name} must be a number, got {value!r}") from None


@dataclass
class StreamOptions:
    database: str | None = None
    collection: str | None = None
    pipeline: list = field(default_factory=list)
    full_document: str | None = None
    full_document_before_change: str | None = None
    show_expanded_events: bool = False
    start_at_operation_time: Any = None  # bson.Timestamp
    start_after: str | None = None
    full_document_schema: str | None = None
    include_raw: bool = False

    @classmethod
    def parse(cls, options: Mapping[str, Any]) -> "StreamOptions":
        low = {k.lower(): v for k, v in options.items()}  # Spark hands them over lower-cased

        def get(name: str) -> Any:
            return low.get(name.lower())

        db, coll = get("database") or None, get("collection") or None
        if coll and not db:
            raise ValueError("option collection needs the option database")
        raw_pipeline = get("pipeline")
        pipeline: list = []
        if raw_pipeline:
            try:
                pipeline = json_util.loads(raw_pipeline)
            except ValueError as exc:
                raise ValueError(f"option pipeline is not valid JSON: {exc}") from None
            if isinstance(pipeline, dict):
                pipeline = [pipeline]
            if not isinstance(pipeline, list) or not all(isinstance(s, dict) for s in pipeline):
                raise ValueError("option pipeline must be a JSON array of stage documents")
        start_at = get("startAtOperationTime")
        start_after = get("startAfter")
        if start_at and start_after:
            raise ValueError("give at most one of startAtOperationTime and startAfter")
        if start_after:
            start_after = str(start_after).strip()
            try:
                int(start_after, 16)
            except ValueError:
                raise ValueError(f"option startAfter must be a resume token's _data (hex), got {start_after!r}") from None
        fd = get("fullDocument") or None
        fdb = get("fullDocumentBeforeChange") or None
        if fd is not None and fd not in ("default", "updateLookup", "whenAvailable", "required"):
            raise ValueError(f"option fullDocument: unknown value {fd!r}")
        if fdb is not None and fdb not in ("off", "whenAvailable", "required"):
            raise ValueError(f"option fullDocumentBeforeChange: unknown value {fdb!r}")
        return cls(
            database=db, collection=coll, pipeline=pipeline, full_document=fd, full_document_before_change=fdb,
            show_expanded_events=parse_bool("showExpandedEvents", get("showExpandedEvents")),
            start_at_operation_time=parse_operation_time(start_at) if start_at else None,
            start_after=start_after or None,
            full_document_schema=get("fullDocumentSchema") or None,
            include_raw=parse_bool("includeRawEvent", get("includeRawEvent")),
        )

    @property
    def level(self) -> str:
        return "collection" if self.collection else ("database" if self.database else "cluster")

    def change_stream_spec(self) -> dict:
        """The `$changeStream` stage's document, without a start point (for the batch source)."""
        spec: dict[str, Any] = {}
        if self.full_document is not None:
            spec["fullDocument"] = self.full_document
        if self.full_document_before_change is not None:
            spec["fullDocumentBeforeChange"] = self.full_document_before_change
        if self.show_expanded_events:
            spec["showExpandedEvents"] = True
        if self.level == "cluster":
            spec["allChangesForCluster"] = True
        return spec
