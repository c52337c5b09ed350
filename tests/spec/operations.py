"""Entity operations: each format operation as a call of pymongo 4.20's public API.

`OPERATIONS[(kind, name)]` holds the handler of operation `name` on an entity
of `kind` (client, database, collection, session, bucket, changeStream,
cursor).  A handler reads its arguments from an `Args`, which converts the
format's common options (session, readConcern, writeConcern, readPreference,
returnDocument) and refuses, before anything is sent, an argument
the handler did not take — an unknown argument is an error of the runner,
never ignored.

Iterables are iterated fully (find, aggregate, list*, runCursorCommand) and
returned as `RootDocuments`, whose elements match as root-level documents.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import pymongo
from bson import Code
from bson.son import SON
from gridfs import GridFSBucket
from pymongo import ReturnDocument
from pymongo.change_stream import ChangeStream
from pymongo.client_session import ClientSession
from pymongo.collection import Collection
from pymongo.command_cursor import CommandCursor
from pymongo.database import Database
from pymongo.operations import DeleteMany, DeleteOne, InsertOne, ReplaceOne, SearchIndexModel, UpdateMany, UpdateOne

from tests.spec.entities import read_concern, read_preference, transaction_options, write_concern
from tests.spec.errors import UnsupportedByRunner
from tests.spec.matching import RootDocuments

OPERATIONS: dict[tuple[str, str], Callable[[Any, Any, "Args"], Any]] = {}
ITERATE_TIMEOUT_S = 15.0  # iterateUntilDocumentOrError gives up (a failure) after this long


def operation(kind: str, *names: str) -> Callable:
    def register(fn: Callable) -> Callable:
        for name in names:
            key = (kind, name)
            assert key not in OPERATIONS, key
            OPERATIONS[key] = fn
        return fn
    return register


def entity_kind(target: Any) -> str:
    for kind, cls in (("client", pymongo.MongoClient), ("database", Database), ("collection", Collection),
                      ("session", ClientSession), ("bucket", GridFSBucket), ("changeStream", ChangeStream),
                      ("cursor", CommandCursor)):
        if isinstance(target, cls):
            return kind
    raise UnsupportedByRunner(f"operations on a {type(target).__name__} entity are not supported")


def handler_for(name: str, target: Any) -> Callable[[Any, Any, "Args"], Any]:
    kind = entity_kind(target)
    handler = OPERATIONS.get((kind, name))
    if handler is None:
        raise UnsupportedByRunner(f"unsupported operation {name!r} on a {kind}")
    return handler


class Args:
    """The arguments of one operation, taken by name; `call` refuses any left untaken."""

    def __init__(self, ctx: Any, name: str, raw: dict | None) -> None:
        self.ctx = ctx
        self.name = name
        self._raw = dict(raw or {})

    def required(self, key: str) -> Any:
        if key not in self._raw:
            raise UnsupportedByRunner(f"missing required argument {key!r}")
        return self._convert(key, self._raw.pop(key))

    def optional(self, key: str, default: Any = None) -> Any:
        return self._convert(key, self._raw.pop(key)) if key in self._raw else default

    def options(self, **names: str) -> dict:
        """{pymongo name: converted value} for each present format argument (format name=pymongo name)."""
        return {py: self._convert(key, self._raw.pop(key)) for key, py in names.items() if key in self._raw}

    def raw_options(self, *keys: str) -> dict:
        """The present arguments among `keys`, unconverted."""
        return {k: self._raw.pop(k) for k in keys if k in self._raw}

    def call(self, fn: Callable, *args: Any, **kwargs: Any) -> Any:
        if "rawData" in self._raw and self.ctx.runner.deployment.version < (8, 2, 0):
            # rawData (time-series buckets) is an 8.2 option a driver leaves out for an older server, which
            # is what pymongo 4.20, without the option, does; an 8.2 server would need it sent.
            del self._raw["rawData"]
        if self._raw:
            raise UnsupportedByRunner(f"unsupported arguments {sorted(self._raw)}")
        return fn(*args, **kwargs)

    def _convert(self, key: str, value: Any) -> Any:
        if key == "session":
            return self.ctx.entities.get(value, ClientSession)
        if key == "readConcern":
            return read_concern(value)
        if key == "writeConcern":
            return write_concern(value)
        if key == "readPreference":
            return read_preference(value)
        if key == "returnDocument":
            choices = {"before": ReturnDocument.BEFORE, "after": ReturnDocument.AFTER}
            if str(value).lower() not in choices:
                raise UnsupportedByRunner(f"returnDocument must be Before or After, not {value!r}")
            return choices[str(value).lower()]
        return value


# The options most CRUD methods take under the same pymongo names.
WRITE_OPTS = dict(session="session", comment="comment", let="let", hint="hint", collation="collation")


# ----------------------------------------------------------------------------- collection: writes


@operation("collection", "insertOne")
def insert_one(ctx, coll: Collection, a: Args) -> Any:
    return a.call(coll.insert_one, a.required("document"),
                  **a.options(session="session", comment="comment",
                              bypassDocumentValidation="bypass_document_validation"))


@operation("collection", "insertMany")
def insert_many(ctx, coll: Collection, a: Args) -> Any:
    return a.call(coll.insert_many, a.required("documents"),
                  **a.options(ordered="ordered", session="session", comment="comment",
                              bypassDocumentValidation="bypass_document_validation"))


@operation("collection", "updateOne", "updateMany")
def update(ctx, coll: Collection, a: Args) -> Any:
    fn = coll.update_many if a.name == "updateMany" else coll.update_one
    extra = {} if a.name == "updateMany" else {"sort": "sort"}
    return a.call(fn, a.required("filter"), a.required("update"),
                  **a.options(upsert="upsert", arrayFilters="array_filters",
                              bypassDocumentValidation="bypass_document_validation", **WRITE_OPTS, **extra))


@operation("collection", "replaceOne")
def replace_one(ctx, coll: Collection, a: Args) -> Any:
    return a.call(coll.replace_one, a.required("filter"), a.required("replacement"),
                  **a.options(upsert="upsert", bypassDocumentValidation="bypass_document_validation", sort="sort",
                              **WRITE_OPTS))


@operation("collection", "deleteOne", "deleteMany")
def delete(ctx, coll: Collection, a: Args) -> Any:
    fn = coll.delete_many if a.name == "deleteMany" else coll.delete_one
    return a.call(fn, a.required("filter"), **a.options(**WRITE_OPTS))


@operation("collection", "findOneAndUpdate")
def find_one_and_update(ctx, coll: Collection, a: Args) -> Any:
    return a.call(coll.find_one_and_update, a.required("filter"), a.required("update"),
                  **a.options(projection="projection", sort="sort", upsert="upsert", returnDocument="return_document",
                              arrayFilters="array_filters", bypassDocumentValidation="bypassDocumentValidation",
                              **WRITE_OPTS))


@operation("collection", "findOneAndReplace")
def find_one_and_replace(ctx, coll: Collection, a: Args) -> Any:
    return a.call(coll.find_one_and_replace, a.required("filter"), a.required("replacement"),
                  **a.options(projection="projection", sort="sort", upsert="upsert", returnDocument="return_document",
                              bypassDocumentValidation="bypassDocumentValidation", **WRITE_OPTS))


@operation("collection", "findOneAndDelete")
def find_one_and_delete(ctx, coll: Collection, a: Args) -> Any:
    return a.call(coll.find_one_and_delete, a.required("filter"),
                  **a.options(projection="projection", sort="sort", **WRITE_OPTS))


def write_model(request: dict, *, client_level: bool) -> Any:
    """A WriteModel from `{insertOne: {...}}` (collection bulkWrite requests, clientBulkWrite models)."""
    if len(request) != 1:
        raise UnsupportedByRunner(f"a write model must have exactly one key: {request!r}")
    kind, spec = next(iter(request.items()))
    spec = dict(spec)
    kwargs = {}
    if client_level:
        kwargs["namespace"] = spec.pop("namespace")
    names = {"insertOne": (InsertOne, ("document",), {}),
             "updateOne": (UpdateOne, ("filter", "update"), {"upsert": "upsert", "arrayFilters": "array_filters",
                                                             "collation": "collation", "hint": "hint", "sort": "sort"}),
             "updateMany": (UpdateMany, ("filter", "update"), {"upsert": "upsert", "arrayFilters": "array_filters",
                                                               "collation": "collation", "hint": "hint"}),
             "replaceOne": (ReplaceOne, ("filter", "replacement"), {"upsert": "upsert", "collation": "collation",
                                                                    "hint": "hint", "sort": "sort"}),
             "deleteOne": (DeleteOne, ("filter",), {"collation": "collation", "hint": "hint"}),
             "deleteMany": (DeleteMany, ("filter",), {"collation": "collation", "hint": "hint"})}
    if kind not in names:
        raise UnsupportedByRunner(f"unknown write model {kind!r}")
    cls, positional, optional = names[kind]
    args = [spec.pop(p) for p in positional]
    for key, py in optional.items():
        if key in spec:
            value = spec.pop(key)
            kwargs[py] = value
    if spec:
        raise UnsupportedByRunner(f"unsupported {kind} fields {sorted(spec)}")
    return cls(*args, **kwargs)


@operation("collection", "bulkWrite")
def bulk_write(ctx, coll: Collection, a: Args) -> Any:
    requests = [write_model(r, client_level=False) for r in a.required("requests")]
    return a.call(coll.bulk_write, requests,
                  **a.options(ordered="ordered", session="session", comment="comment", let="let",
                              bypassDocumentValidation="bypass_document_validation"))


@operation("client", "clientBulkWrite")
def client_bulk_write(ctx, client: pymongo.MongoClient, a: Args) -> Any:
    models = [write_model(m, client_level=True) for m in a.required("models")]
    return a.call(client.bulk_write, models,
                  **a.options(session="session", ordered="ordered", verboseResults="verbose_results",
                              bypassDocumentValidation="bypass_document_validation", comment="comment", let="let",
                              writeConcern="write_concern"))


# ----------------------------------------------------------------------------- collection: reads


@operation("collection", "find")
def find(ctx, coll: Collection, a: Args) -> RootDocuments:
    filter_ = a.required("filter")
    kwargs = a.options(session="session", sort="sort", skip="skip", limit="limit", batchSize="batch_size",
                       projection="projection", allowDiskUse="allow_disk_use", collation="collation",
                       comment="comment", let="let", hint="hint", maxTimeMS="max_time_ms")
    return RootDocuments(a.call(lambda: coll.find(filter_, **kwargs).to_list()))


@operation("collection", "findOne")
def find_one(ctx, coll: Collection, a: Args) -> Any:
    filter_ = a.required("filter")
    return a.call(coll.find_one, filter_,
                  **a.options(session="session", sort="sort", skip="skip", projection="projection",
                              collation="collation", comment="comment", let="let", hint="hint",
                              maxTimeMS="max_time_ms"))


@operation("collection", "aggregate")
@operation("database", "aggregate")
def aggregate(ctx, target: Collection | Database, a: Args) -> RootDocuments:
    pipeline = a.required("pipeline")
    kwargs = a.options(session="session", let="let", comment="comment", allowDiskUse="allowDiskUse",
                       batchSize="batchSize", collation="collation", maxTimeMS="maxTimeMS", hint="hint",
                       bypassDocumentValidation="bypassDocumentValidation")
    return RootDocuments(a.call(lambda: target.aggregate(pipeline, **kwargs).to_list()))


@operation("collection", "countDocuments")
def count_documents(ctx, coll: Collection, a: Args) -> int:
    return a.call(coll.count_documents, a.required("filter"),
                  **a.options(session="session", comment="comment", skip="skip", limit="limit",
                              collation="collation", hint="hint", maxTimeMS="maxTimeMS"))


@operation("collection", "estimatedDocumentCount")
def estimated_document_count(ctx, coll: Collection, a: Args) -> int:
    return a.call(coll.estimated_document_count, **a.options(comment="comment", maxTimeMS="maxTimeMS"))


@operation("collection", "count")
def count(ctx, coll: Collection, a: Args) -> int:
    """The deprecated count: the `count` command with a query.

    pymongo 4 has no Collection.count.  Without a session, estimated_document_count
    runs the same `count` command as a retryable read and adds its keyword
    arguments to the command, so the query and the count options go through
    it.  With a session (which estimated_document_count refuses) the command
    runs through Database.command, in the session's transaction if it has one
    (where reads are not retried).
    """
    kwargs = a.options(filter="query", skip="skip", limit="limit", collation="collation", hint="hint",
                       comment="comment", maxTimeMS="maxTimeMS")
    session = a.optional("session")
    if session is None:
        comment = kwargs.pop("comment", None)
        return a.call(coll.estimated_document_count, comment=comment, **kwargs)
    command = SON([("count", coll.name), *kwargs.items()])
    reply = a.call(coll.database.command, command, session=session, read_preference=coll.read_preference)
    return int(reply["n"])


@operation("collection", "distinct")
def distinct(ctx, coll: Collection, a: Args) -> list:
    return a.call(coll.distinct, a.required("fieldName"), a.required("filter"),
                  **a.options(session="session", comment="comment", hint="hint", collation="collation",
                              maxTimeMS="maxTimeMS"))


@operation("collection", "mapReduce")
def map_reduce(ctx, coll: Collection, a: Args) -> Any:
    """mapReduce (pymongo 4 removed the helper): the command, its inline results as documents."""
    cmd = SON([("mapReduce", coll.name), ("map", Code(a.required("map"))), ("reduce", Code(a.required("reduce"))),
               ("out", a.required("out"))])
    kwargs = a.options(session="session")
    reply = a.call(coll.database.command, cmd, read_preference=coll.read_preference, **kwargs)
    return RootDocuments(reply["results"]) if "results" in reply else reply


# ----------------------------------------------------------------------------- indexes, collections, databases


@operation("collection", "createIndex")
def create_index(ctx, coll: Collection, a: Args) -> str:
    keys = list(a.required("keys").items())
    return a.call(coll.create_index, keys,
                  **a.options(session="session", comment="comment", name="name", unique="unique",
                              sparse="sparse", expireAfterSeconds="expireAfterSeconds", hidden="hidden",
                              partialFilterExpression="partialFilterExpression", collation="collation"))


@operation("collection", "dropIndex")
def drop_index(ctx, coll: Collection, a: Args) -> None:
    a.call(coll.drop_index, a.required("name"), **a.options(session="session", comment="comment"))


@operation("collection", "dropIndexes")
def drop_indexes(ctx, coll: Collection, a: Args) -> None:
    a.call(coll.drop_indexes, **a.options(session="session", comment="comment"))


@operation("collection", "listIndexes")
def list_indexes(ctx, coll: Collection, a: Args) -> RootDocuments:
    kwargs = a.options(session="session", comment="comment")
    return RootDocuments(a.call(lambda: coll.list_indexes(**kwargs).to_list()))


@operation("collection", "listIndexNames")
def list_index_names(ctx, coll: Collection, a: Args) -> list:
    kwargs = a.options(session="session", comment="comment")
    return a.call(lambda: [ix["name"] for ix in coll.list_indexes(**kwargs)])


@operation("collection", "createSearchIndex")
def create_search_index(ctx, coll: Collection, a: Args) -> str:
    return a.call(coll.create_search_index, SearchIndexModel(**a.required("model")))


@operation("collection", "createSearchIndexes")
def create_search_indexes(ctx, coll: Collection, a: Args) -> list:
    return a.call(coll.create_search_indexes, [SearchIndexModel(**m) for m in a.required("models")])


@operation("collection", "listSearchIndexes")
def list_search_indexes(ctx, coll: Collection, a: Args) -> RootDocuments:
    name = a.optional("name")
    options = a.optional("aggregationOptions") or {}
    return RootDocuments(a.call(lambda: coll.list_search_indexes(name, **options).to_list()))


@operation("collection", "updateSearchIndex")
def update_search_index(ctx, coll: Collection, a: Args) -> None:
    a.call(coll.update_search_index, a.required("name"), a.required("definition"))


@operation("collection", "dropSearchIndex")
def drop_search_index(ctx, coll: Collection, a: Args) -> None:
    a.call(coll.drop_search_index, a.required("name"))


@operation("collection", "rename")
def rename(ctx, coll: Collection, a: Args) -> Any:
    return a.call(coll.rename, a.required("to"), **a.options(session="session", comment="comment",
                                                              dropTarget="dropTarget"))


CREATE_COLLECTION_OPTIONS = ("viewOn", "pipeline", "capped", "size", "max", "changeStreamPreAndPostImages",
                             "validator", "validationLevel", "validationAction", "expireAfterSeconds",
                             "timeseries", "clusteredIndex", "collation", "encryptedFields")


@operation("database", "createCollection")
def create_collection(ctx, db: Database, a: Args) -> Collection:
    name = a.required("collection")
    kwargs = a.options(session="session", **{k: k for k in CREATE_COLLECTION_OPTIONS})
    return a.call(db.create_collection, name, check_exists=False, **kwargs)


@operation("database", "dropCollection")
def drop_collection(ctx, db: Database, a: Args) -> Any:
    return a.call(db.drop_collection, a.required("collection"), **a.options(session="session", comment="comment"))


@operation("database", "modifyCollection")
def modify_collection(ctx, db: Database, a: Args) -> Any:
    """collMod (pymongo has no helper): the command with the given options."""
    name = a.required("collection")
    opts = a.options(index="index", changeStreamPreAndPostImages="changeStreamPreAndPostImages",
                     validator="validator", validationLevel="validationLevel",
                     validationAction="validationAction", expireAfterSeconds="expireAfterSeconds")
    session = a.options(session="session")
    return a.call(db.command, SON([("collMod", name), *opts.items()]), **session)


@operation("database", "listCollections")
def list_collections(ctx, db: Database, a: Args) -> RootDocuments:
    kwargs = a.options(session="session", filter="filter", comment="comment", batchSize="batchSize")
    if "batchSize" in kwargs:
        kwargs["cursor"] = {"batchSize": kwargs.pop("batchSize")}
    return RootDocuments(a.call(lambda: db.list_collections(**kwargs).to_list()))


@operation("database", "listCollectionObjects")
def list_collection_objects(ctx, db: Database, a: Args) -> RootDocuments:
    return list_collections(ctx, db, a)


@operation("database", "listCollectionNames")
def list_collection_names(ctx, db: Database, a: Args) -> list:
    return a.call(db.list_collection_names, **a.options(session="session", filter="filter", comment="comment"))


@operation("database", "runCommand")
def run_command(ctx, db: Database, a: Args) -> dict:
    command = _ordered_command(a)
    return a.call(db.command, command, **a.options(session="session", readPreference="read_preference"))


def _ordered_command(a: Args) -> SON:
    """The command document with its name first (the format gives `commandName` for that)."""
    command = a.required("command")
    name = a.required("commandName")
    if name not in command:
        raise UnsupportedByRunner(f"commandName {name!r} is not a key of the command")
    ordered = SON([(name, command[name])])
    ordered.update(command)
    return ordered


def _command_cursor(a: Args, db: Database) -> CommandCursor:
    command = _ordered_command(a)
    kwargs = a.options(session="session", readPreference="read_preference", comment="comment",
                       maxTimeMS="max_await_time_ms")
    batch_size = a.optional("batchSize")
    cursor_type = a.optional("cursorType", "nonTailable")
    if cursor_type not in ("nonTailable", "tailable", "tailableAwait"):
        raise UnsupportedByRunner(f"unknown cursorType {cursor_type!r}")
    if cursor_type != "nonTailable":
        command.setdefault("tailable", True)
        if cursor_type == "tailableAwait":
            command.setdefault("awaitData", True)
    cursor = a.call(db.cursor_command, command, **kwargs)
    if batch_size:
        cursor.batch_size(batch_size)
    return cursor


@operation("database", "runCursorCommand")
def run_cursor_command(ctx, db: Database, a: Args) -> RootDocuments:
    return RootDocuments(_command_cursor(a, db).to_list())


@operation("database", "createCommandCursor")
def create_command_cursor(ctx, db: Database, a: Args) -> CommandCursor:
    return _command_cursor(a, db)


@operation("client", "listDatabases")
@operation("client", "listDatabaseObjects")
def list_databases(ctx, client: pymongo.MongoClient, a: Args) -> RootDocuments:
    kwargs = a.options(session="session", filter="filter", comment="comment", nameOnly="nameOnly",
                       authorizedDatabases="authorizedDatabases")
    return RootDocuments(a.call(lambda: client.list_databases(**kwargs).to_list()))


@operation("client", "listDatabaseNames")
def list_database_names(ctx, client: pymongo.MongoClient, a: Args) -> list:
    return a.call(client.list_database_names, **a.options(session="session", comment="comment"))


@operation("client", "dropDatabase")
def drop_database(ctx, client: pymongo.MongoClient, a: Args) -> None:
    a.call(client.drop_database, a.required("database"), **a.options(session="session", comment="comment"))


@operation("client", "close")
def close_client(ctx, client: pymongo.MongoClient, a: Args) -> None:
    a.call(client.close)


# ----------------------------------------------------------------------------- change streams and cursors

WATCH_OPTIONS = dict(batchSize="batch_size", fullDocument="full_document",
                     fullDocumentBeforeChange="full_document_before_change", resumeAfter="resume_after",
                     startAfter="start_after", startAtOperationTime="start_at_operation_time",
                     maxAwaitTimeMS="max_await_time_ms", showExpandedEvents="show_expanded_events",
                     comment="comment", collation="collation", session="session")


@operation("client", "createChangeStream")
@operation("database", "createChangeStream")
@operation("collection", "createChangeStream")
def create_change_stream(ctx, target: Any, a: Args) -> ChangeStream:
    pipeline = a.optional("pipeline", [])
    return a.call(target.watch, pipeline, **a.options(**WATCH_OPTIONS))  # pymongo runs the aggregate here


@operation("changeStream", "iterateUntilDocumentOrError")
@operation("cursor", "iterateUntilDocumentOrError")
def iterate_until_document_or_error(ctx, cursor: Any, a: Args) -> Any:
    """try_next until a document (getMore after getMore: a sharded stream may answer empty batches for a while)."""
    def iterate() -> Any:
        deadline = time.monotonic() + ITERATE_TIMEOUT_S
        while cursor.alive:
            doc = cursor.try_next()
            if doc is not None:
                return doc
            if time.monotonic() > deadline:
                raise AssertionError(f"no document within {ITERATE_TIMEOUT_S} s")
        raise AssertionError("the cursor was closed before returning a document")
    return a.call(iterate)


@operation("changeStream", "iterateOnce")
@operation("cursor", "iterateOnce")
def iterate_once(ctx, cursor: Any, a: Args) -> Any:
    return a.call(cursor.try_next)


@operation("changeStream", "close")
@operation("cursor", "close")
def close_cursor(ctx, cursor: Any, a: Args) -> None:
    """Close; the format says errors from killCursors are suppressed."""
    try:
        a.call(cursor.close)
    except pymongo.errors.PyMongoError:
        pass


# ----------------------------------------------------------------------------- sessions


TRANSACTION_OPTIONS = ("readConcern", "writeConcern", "readPreference", "maxCommitTimeMS")


@operation("session", "startTransaction")
def start_transaction(ctx, session: ClientSession, a: Args) -> None:
    opts = transaction_options(a.raw_options(*TRANSACTION_OPTIONS))
    a.call(session.start_transaction, **opts)


@operation("session", "commitTransaction")
def commit_transaction(ctx, session: ClientSession, a: Args) -> None:
    a.call(session.commit_transaction)


@operation("session", "abortTransaction")
def abort_transaction(ctx, session: ClientSession, a: Args) -> None:
    a.call(session.abort_transaction)


@operation("session", "endSession")
def end_session(ctx, session: ClientSession, a: Args) -> None:
    a.call(session.end_session)


@operation("session", "getSnapshotTime")
def get_snapshot_time(ctx, session: ClientSession, a: Args) -> Any:
    """The snapshot time of a snapshot session (no public accessor in pymongo: its `_snapshot_time`)."""
    return a.call(lambda: session._snapshot_time)


@operation("session", "withTransaction")
def with_transaction(ctx, session: ClientSession, a: Args) -> Any:
    """with_transaction running the callback's operations; their errors propagate to with_transaction."""
    callback_ops = a.required("callback")
    opts = transaction_options(a.raw_options(*TRANSACTION_OPTIONS))

    def callback(_session: ClientSession) -> None:
        for op in callback_ops:
            ctx.run_operation(op, propagate=True)
    return a.call(session.with_transaction, callback, **opts)


# ----------------------------------------------------------------------------- GridFS buckets


@operation("bucket", "download")
def download(ctx, bucket: GridFSBucket, a: Args) -> bytes:
    file_id = a.required("id")
    return a.call(lambda: bucket.open_download_stream(file_id).read())


@operation("bucket", "downloadByName")
def download_by_name(ctx, bucket: GridFSBucket, a: Args) -> bytes:
    filename = a.required("filename")
    kwargs = a.options(revision="revision")
    return a.call(lambda: bucket.open_download_stream_by_name(filename, **kwargs).read())
