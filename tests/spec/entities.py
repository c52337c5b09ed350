"""The entity map of one test and the creation of its entities (unified test format, "entity").

Entities are clients, databases, collections, sessions, GridFS buckets, and
the change streams, cursors and BSON values that operations save with
`saveResultAsEntity`.  Names are unique; fetching a missing name or an entity
of the wrong type is an error of the test file.

A client entity connects to the deployment's connection string with the
entity's `uriOptions` on top.  On a sharded cluster `useMultipleMongoses:
false` keeps it to the first mongos and `true` requires every mongos of the
deployment — at least two, else the test fails (`MissingFeature`: pinning to
a mongos cannot be exercised through one router).
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any

import pymongo
from gridfs import GridFSBucket
from pymongo.change_stream import ChangeStream
from pymongo.client_session import ClientSession, TransactionOptions
from pymongo.command_cursor import CommandCursor
from pymongo.collection import Collection
from pymongo.database import Database
from pymongo.errors import PyMongoError
from pymongo.read_concern import ReadConcern
from pymongo.read_preferences import _MONGOS_MODES, make_read_preference, read_pref_mode_from_name
from pymongo.server_api import ServerApi
from pymongo.write_concern import WriteConcern

from tests.spec.errors import MissingFeature, UnsupportedByRunner
from tests.spec.events import EventRecorder

# A broken server fails the test instead of hanging it (each may be overridden by uriOptions); 10 s:
# discovering a three-member set on a loaded 2-core machine can take more than 2.
CLIENT_DEFAULTS = {"serverSelectionTimeoutMS": 10_000, "socketTimeoutMS": 30_000}
# The format allows a reduced heartbeat for clients of a test that configures failpoints: a "not primary"
# or "shutting down" error marks the server Unknown, and a client sees it again at its next check.
FAILPOINT_HEARTBEAT_MS = 50


# ----------------------------------------------------------------------------- common options


def read_concern(doc: dict) -> ReadConcern:
    extra = set(doc) - {"level"}
    if extra:
        raise UnsupportedByRunner(f"unsupported readConcern fields {sorted(extra)}")
    return ReadConcern(doc.get("level"))


def write_concern(doc: dict) -> WriteConcern:
    names = {"w": "w", "journal": "j", "wtimeoutMS": "wtimeout"}
    extra = set(doc) - set(names)
    if extra:
        raise UnsupportedByRunner(f"unsupported writeConcern fields {sorted(extra)}")
    return WriteConcern(**{names[k]: v for k, v in doc.items()})


def read_preference(doc: dict) -> Any:
    extra = set(doc) - {"mode", "tagSets", "maxStalenessSeconds"}
    if extra:
        raise UnsupportedByRunner(f"unsupported readPreference fields {sorted(extra)}")
    modes = {m.lower(): m for m in _MONGOS_MODES}
    mode = read_pref_mode_from_name(modes[doc["mode"].lower()])
    return make_read_preference(mode, doc.get("tagSets"), doc.get("maxStalenessSeconds", -1))


def collection_or_database_options(opts: dict | None) -> dict:
    convert = {"readConcern": ("read_concern", read_concern), "writeConcern": ("write_concern", write_concern),
               "readPreference": ("read_preference", read_preference)}
    out: dict = {}
    for key, value in (opts or {}).items():
        if key not in convert:
            raise UnsupportedByRunner(f"unsupported database/collection option {key!r}")
        name, fn = convert[key]
        out[name] = fn(value)
    return out


def transaction_options(opts: dict) -> dict:
    """startTransaction / withTransaction / defaultTransactionOptions -> pymongo keyword arguments."""
    convert = {"readConcern": ("read_concern", read_concern), "writeConcern": ("write_concern", write_concern),
               "readPreference": ("read_preference", read_preference),
               "maxCommitTimeMS": ("max_commit_time_ms", lambda v: v)}
    out: dict = {}
    for key, value in opts.items():
        if key not in convert:
            raise UnsupportedByRunner(f"unsupported transaction option {key!r}")
        name, fn = convert[key]
        out[name] = fn(value)
    return out


# ----------------------------------------------------------------------------- the map


class EntityMap:
    def __init__(self) -> None:
        self._map: dict[str, Any] = {}
        self.recorders: dict[str, EventRecorder] = {}
        self._lsids: dict[str, dict] = {}  # a session's lsid, still known after the session ended
        self._closing: list[Any] = []  # what to close at the end of the test, in creation order

    def add(self, name: str, value: Any) -> None:
        if name in self._map:
            raise UnsupportedByRunner(f"entity {name!r} already exists")
        self._map[name] = value
        if isinstance(value, ClientSession):
            self._lsids[name] = copy.deepcopy(value.session_id)
        if isinstance(value, (pymongo.MongoClient, ClientSession, ChangeStream, CommandCursor)):
            self._closing.append(value)

    def get(self, name: str, kind: type | tuple | None = None) -> Any:
        if name not in self._map:
            raise UnsupportedByRunner(f"no entity named {name!r}")
        value = self._map[name]
        if kind is not None and not isinstance(value, kind):
            raise UnsupportedByRunner(f"entity {name!r} is a {type(value).__name__}, not {kind}")
        return value

    def lsid(self, name: str) -> dict:
        self.get(name, ClientSession)
        return self._lsids[name]

    def stop_listening(self) -> None:
        for rec in self.recorders.values():
            rec.enabled = False

    def close(self) -> None:
        """End sessions, close cursors and change streams, then close clients (errors ignored)."""
        self.stop_listening()
        order = sorted(self._closing, key=lambda v: isinstance(v, pymongo.MongoClient))
        for value in order:
            try:
                value.end_session() if isinstance(value, ClientSession) else value.close()
            except PyMongoError:
                pass
        self._map.clear()
        self._closing.clear()


# ----------------------------------------------------------------------------- creating entities


@dataclass
class ClientConfig:
    """How the runner connects client entities to the deployment."""

    uri: str
    topology: str  # single | replicaset | sharded
    routers: list[str] = field(default_factory=list)
    failpoints: bool = False  # the test configures failpoints: reduced heartbeat


def with_hosts(uri: str, hosts: list[str]) -> str:
    """The connection string with its host list replaced."""
    m = re.match(r"^(mongodb://(?:[^@/]*@)?)([^/?]*)(.*)$", uri)
    if m is None:
        raise UnsupportedByRunner(f"cannot rewrite the hosts of {uri!r}")
    return m.group(1) + ",".join(hosts) + m.group(3)


def _no_placeholders(value: Any, where: str) -> None:
    if isinstance(value, dict):
        if "$$placeholder" in value:
            raise UnsupportedByRunner(f"$$placeholder in {where}: no value to put there")
        for v in value.values():
            _no_placeholders(v, where)


def create_client(desc: dict, config: ClientConfig, entities: EntityMap) -> pymongo.MongoClient:
    known = {"id", "uriOptions", "useMultipleMongoses", "observeEvents", "ignoreCommandMonitoringEvents",
             "observeSensitiveCommands", "serverApi"}
    extra = set(desc) - known
    if extra:
        raise UnsupportedByRunner(f"unsupported client options {sorted(extra)}")
    uri = config.uri
    if config.topology == "sharded" and "useMultipleMongoses" in desc:
        if desc["useMultipleMongoses"]:
            if len(config.routers) < 2:
                raise MissingFeature(f"useMultipleMongoses: true needs at least two mongos routers; the "
                                     f"deployment has {len(config.routers)} ({', '.join(config.routers)})")
            uri = with_hosts(uri, config.routers)
        else:
            uri = with_hosts(uri, config.routers[:1])
    recorder = EventRecorder(desc.get("observeEvents") or [], desc.get("ignoreCommandMonitoringEvents") or [],
                             bool(desc.get("observeSensitiveCommands")))
    options = dict(desc.get("uriOptions") or {})
    _no_placeholders(options, "uriOptions")
    if config.failpoints and not any(k.lower() == "heartbeatfrequencyms" for k in options):
        options["heartbeatFrequencyMS"] = FAILPOINT_HEARTBEAT_MS
    for key, value in CLIENT_DEFAULTS.items():
        if not any(k.lower() == key.lower() for k in options):
            options[key] = value
    if "serverApi" in desc:
        api = desc["serverApi"]
        options["server_api"] = ServerApi(api["version"], strict=api.get("strict"),
                                          deprecation_errors=api.get("deprecationErrors"))
    client = pymongo.MongoClient(uri, event_listeners=[recorder], **options)
    entities.recorders[desc["id"]] = recorder
    return client


def create_database(desc: dict, entities: EntityMap) -> Database:
    _known(desc, "database", {"id", "client", "databaseName", "databaseOptions"})
    client = entities.get(desc["client"], pymongo.MongoClient)
    return client.get_database(desc["databaseName"], **collection_or_database_options(desc.get("databaseOptions")))


def create_collection(desc: dict, entities: EntityMap) -> Collection:
    _known(desc, "collection", {"id", "database", "collectionName", "collectionOptions"})
    db = entities.get(desc["database"], Database)
    return db.get_collection(desc["collectionName"], **collection_or_database_options(desc.get("collectionOptions")))


def create_session(desc: dict, entities: EntityMap, cluster_time: dict | None) -> ClientSession:
    """A session; it first hears the cluster time of the setup writes (format: "MigrationConflict Errors")."""
    _known(desc, "session", {"id", "client", "sessionOptions"})
    client = entities.get(desc["client"], pymongo.MongoClient)
    opts = dict(desc.get("sessionOptions") or {})
    kwargs: dict = {}
    if "causalConsistency" in opts:
        kwargs["causal_consistency"] = opts.pop("causalConsistency")
    if "snapshot" in opts:
        kwargs["snapshot"] = opts.pop("snapshot")
    if "defaultTransactionOptions" in opts:
        kwargs["default_transaction_options"] = TransactionOptions(
            **transaction_options(opts.pop("defaultTransactionOptions")))
    snapshot_time = opts.pop("snapshotTime", None)
    if opts:
        raise UnsupportedByRunner(f"unsupported session options {sorted(opts)}")
    session = client.start_session(**kwargs)
    if snapshot_time is not None:
        if not kwargs.get("snapshot"):
            raise UnsupportedByRunner("snapshotTime without snapshot: true")
        # The snapshot time of a snapshot session (sessions spec): pymongo 4.20 has no option for it; it
        # keeps the time the first read chose in `_snapshot_time` and sends it as atClusterTime, so the
        # session starts with it set.
        session._snapshot_time = entities.get(snapshot_time)  # the name of a saved snapshot time
    if cluster_time:
        session.advance_cluster_time(cluster_time)
    return session


def create_bucket(desc: dict, entities: EntityMap) -> GridFSBucket:
    _known(desc, "bucket", {"id", "database", "bucketOptions"})
    db = entities.get(desc["database"], Database)
    opts = dict(desc.get("bucketOptions") or {})
    kwargs: dict = {}
    for key, (name, fn) in {"bucketName": ("bucket_name", None), "chunkSizeBytes": ("chunk_size_bytes", None),
                            "writeConcern": ("write_concern", write_concern),
                            "readPreference": ("read_preference", read_preference)}.items():
        if key in opts:
            value = opts.pop(key)
            kwargs[name] = fn(value) if fn else value
    if opts:
        raise UnsupportedByRunner(f"unsupported bucket options {sorted(opts)}")
    return GridFSBucket(db, **kwargs)


def _known(desc: dict, kind: str, known: set[str]) -> None:
    extra = set(desc) - known
    if extra:
        raise UnsupportedByRunner(f"unsupported {kind} fields {sorted(extra)}")
