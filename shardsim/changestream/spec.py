"""The `$changeStream` stage's options: parsing, validation, and the stream's level.

Parsing follows the server's IDL (DocumentSourceChangeStreamSpec): unknown
fields, wrong types and bad enumeration values are errors with the server's
codes and messages.  Validation follows
`DocumentSourceChangeStream::assertIsLegalSpecification`: where a stream may be
opened (collection, database, or the whole cluster on `admin` with
`allChangesForCluster`), and which resume options may be combined.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bson import Timestamp

from mongosim.oplog.errors import MongoError
from mongosim.oplog.resume_token import ResumeTokenData, decode_resume_token
from mongosim.shardsim.query.idl_errors import wrong_type

FULL_DOCUMENT = ("default", "updateLookup", "whenAvailable", "required")
FULL_DOCUMENT_BEFORE_CHANGE = ("off", "whenAvailable", "required")

_BOOL_FIELDS = {
    "allChangesForCluster": "all_changes_for_cluster",
    "showMigrationEvents": "show_migration_events",
    "showSystemEvents": "show_system_events",
    "allowToRunOnConfigDB": "allow_to_run_on_config_db",
    "allowToRunOnSystemNS": "allow_to_run_on_system_ns",
    "showExpandedEvents": "show_expanded_events",
    "showRawUpdateDescription": "show_raw_update_description",
    "matchCollectionUUIDForUpdateLookup": "match_collection_uuid_for_update_lookup",
    "showCommitTimestamp": "show_commit_timestamp",
    "ignoreRemovedShards": "ignore_removed_shards",
}

COLLECTION, DATABASE, CLUSTER = "collection", "database", "cluster"


@dataclass
class ChangeStreamSpec:
    resume_after: dict | None = None
    start_after: dict | None = None
    start_at_operation_time: Timestamp | None = None
    full_document: str = "default"
    full_document_before_change: str = "off"
    all_changes_for_cluster: bool = False
    show_migration_events: bool = False
    show_system_events: bool = False
    allow_to_run_on_config_db: bool = False
    allow_to_run_on_system_ns: bool = False
    show_expanded_events: bool = False
    show_raw_update_description: bool = False
    match_collection_uuid_for_update_lookup: bool = False
    show_commit_timestamp: bool = False
    ignore_removed_shards: bool = False
    raw: dict = field(default_factory=dict)

    @property
    def resume_token(self) -> dict | None:
        return self.resume_after if self.resume_after is not None else self.start_after

    def token_data(self) -> ResumeTokenData | None:
        tok = self.resume_token
        return decode_resume_token(tok) if tok is not None else None

    def to_bson(self) -> dict:
        """The spec as sent to shards (same field names; the resolved start time included)."""
        out: dict[str, Any] = {}
        if self.resume_after is not None:
            out["resumeAfter"] = self.resume_after
        if self.start_after is not None:
            out["startAfter"] = self.start_after
        if self.start_at_operation_time is not None:
            out["startAtOperationTime"] = self.start_at_operation_time
        if self.full_document != "default" or "fullDocument" in self.raw:
            out["fullDocument"] = self.full_document
        if self.full_document_before_change != "off" or "fullDocumentBeforeChange" in self.raw:
            out["fullDocumentBeforeChange"] = self.full_document_before_change
        for name, attr in _BOOL_FIELDS.items():
            if name in self.raw or getattr(self, attr):
                out[name] = getattr(self, attr)
        return out


def parse_spec(value: Any) -> ChangeStreamSpec:
    if not isinstance(value, dict):
        raise MongoError(50808, "$changeStream stage expects a document as argument")
    spec = ChangeStreamSpec(raw=dict(value))
    for k, v in value.items():
        if k in ("resumeAfter", "startAfter"):
            if not isinstance(v, dict):
                raise wrong_type(f"$changeStream.{k}", v, "object")
            decode_resume_token(v)  # validates
            setattr(spec, "resume_after" if k == "resumeAfter" else "start_after", v)
        elif k == "startAtOperationTime":
            if not isinstance(v, Timestamp):
                raise wrong_type(f"$changeStream.{k}", v, "timestamp")
            spec.start_at_operation_time = v
        elif k == "fullDocument":
            if not isinstance(v, str):
                raise wrong_type(f"$changeStream.{k}", v, "string")
            if v not in FULL_DOCUMENT:
                raise MongoError("BadValue", f"Enumeration value '{v}' for field '$changeStream.fullDocument' is not a valid value.")
            spec.full_document = v
        elif k == "fullDocumentBeforeChange":
            if not isinstance(v, str):
                raise wrong_type(f"$changeStream.{k}", v, "string")
            if v not in FULL_DOCUMENT_BEFORE_CHANGE:
                raise MongoError("BadValue", f"Enumeration value '{v}' for field '$changeStream.fullDocumentBeforeChange' is not a valid value.")
            spec.full_document_before_change = v
        elif k in _BOOL_FIELDS:
            if not isinstance(v, bool):
                raise wrong_type(f"$changeStream.{k}", v, "bool")
            setattr(spec, _BOOL_FIELDS[k], v)
        elif k == "version":
            if v not in ("v1", "v2"):
                raise MongoError("BadValue", f"Enumeration value '{v}' for field '$changeStream.version' is not a valid value.")
        else:
            raise MongoError(40415, f"BSON field '$changeStream.{k}' is an unknown field.")
    return spec


def stream_level(db: str, coll: Any) -> str:
    if coll == 1:
        return CLUSTER if db == "admin" else DATABASE
    return COLLECTION


def validate(spec: ChangeStreamSpec, db: str, coll: Any, *, in_router: bool) -> str:
    """Check where and how the stream may be opened; return its level."""
    collectionless = coll == 1
    if isinstance(coll, str):
        full_ns = f"{db}.{coll}"
    else:
        full_ns = f"{db}.$cmd.aggregate"
    if spec.all_changes_for_cluster and not (db == "admin" and collectionless):
        raise MongoError(
            "InvalidOptions",
            "A $changeStream with 'allChangesForCluster:true' may only be opened on the 'admin' database, "
            f"and with no collection name; found {full_ns}",
        )
    not_banned = db != "local" and (db != "config" or spec.allow_to_run_on_config_db)
    allowed = spec.all_changes_for_cluster if db == "admin" else not_banned
    if not allowed:
        raise MongoError("InvalidNamespace", f"$changeStream may not be opened on the internal {db} database")
    if isinstance(coll, str) and coll.startswith("system.") and not (spec.allow_to_run_on_system_ns and not in_router):
        suffix = " through router" if spec.allow_to_run_on_system_ns else ""
        raise MongoError("InvalidNamespace", f"$changeStream may not be opened on the internal {full_ns} collection{suffix}")
    if in_router and spec.show_migration_events:
        raise MongoError(31123, "Change streams from router may not show migration events")
    if spec.resume_after is not None and spec.start_after is not None:
        raise MongoError(50865, "Do not specify both 'resumeAfter' and 'startAfter' in a $changeStream stage")
    token = spec.token_data()
    if spec.start_at_operation_time is not None and token is not None:
        raise MongoError(40674, "Only one type of resume option is allowed, but multiple were found")
    if spec.resume_after is not None and token is not None and token.from_invalidate:
        raise MongoError(
            "InvalidResumeToken",
            "Attempting to resume a change stream using 'resumeAfter' is not allowed from an invalidate notification",
        )
    level = stream_level(db, coll)
    if level == COLLECTION and token is not None and token.uuid is None and token.token_type != 0:
        raise MongoError(
            "InvalidResumeToken",
            "Attempted to resume a single-collection stream, but the resume token does not include a UUID",
        )
    return level
