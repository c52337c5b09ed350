"""A compact interpreter for the driver specifications' unified test format.

Written from the format's specification (mongodb/specifications,
source/unified-test-format/unified-test-format.md), covering what the
change-stream and retryable-reads change-stream files use:

- entities: client (uriOptions, observeEvents, ignoreCommandMonitoringEvents,
  useMultipleMongoses), database, collection, session; change streams saved
  with `saveResultAsEntity`;
- operations: createChangeStream (client/database/collection),
  iterateUntilDocumentOrError, iterateOnce, close, the CRUD writes, DDL
  (createCollection, dropCollection, rename, createIndex, dropIndex),
  runCommand, and the testRunner operations failPoint and createEntities;
- assertions: expectResult, expectError (isError, isClientError,
  errorContains, errorCode, errorCodeName, errorLabelsContain,
  errorLabelsOmit, errorResponse), expectEvents (command started / succeeded /
  failed events, ignoreExtraEvents), the matchers `$$exists`, `$$type`,
  `$$unsetOrMatches`, `$$matchesEntity`, `$$sessionLsid`, `$$lte`;
- runOnRequirements (file and test level): minServerVersion,
  maxServerVersion, topologies, serverless, auth, serverParameters, csfle.

A `SpecRunner` is bound to one deployment (a URI); `run_test(file, test)`
raises `RequirementsNotMet` for a test that does not apply there and
`AssertionError` for a failure.  Anything the runner does not implement is an
error, never a silent pass.
"""

from __future__ import annotations

import copy
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pymongo
from bson import Binary, Code, DBRef, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, Timestamp, json_util
from bson.son import SON
from pymongo import monitoring
from pymongo.change_stream import ChangeStream
from pymongo.client_session import ClientSession
from pymongo.collection import Collection
from pymongo.database import Database
from pymongo.errors import NotPrimaryError, OperationFailure, PyMongoError
from pymongo.read_concern import ReadConcern
from pymongo.read_preferences import make_read_preference, read_pref_mode_from_name
from pymongo.results import DeleteResult, InsertManyResult, InsertOneResult, UpdateResult
from pymongo.write_concern import WriteConcern

SUPPORTED_SCHEMA = (1, 9)
ITERATE_TIMEOUT_S = 15.0
FAILPOINT_HEARTBEAT_MS = 500  # pymongo's minimum heartbeatFrequencyMS
CLIENT_DEFAULTS = {"serverSelectionTimeoutMS": 10_000, "socketTimeoutMS": 30_000}
# Commands whose monitoring events a runner never reports (command monitoring "security" section).
SENSITIVE_COMMANDS = {"authenticate", "saslstart", "saslcontinue", "getnonce", "createuser", "updateuser",
                      "copydbgetnonce", "copydbsaslstart", "copydb"}
HELLO_COMMANDS = {"hello", "ismaster"}
# Failpoints the runner turns off after every test whatever the test did.
RESET_FAILPOINTS = ("failCommand", "failGetMoreAfterCursorCheckout")


class RequirementsNotMet(Exception):
    """The test (or its file) does not apply to this deployment."""


class SkippedByFile(Exception):
    """The test has a skipReason."""


class UnsupportedByRunner(Exception):
    """The file uses something this runner does not implement (a runner error, reported as a failure)."""


# ----------------------------------------------------------------------------- loading


def load_spec_file(path: Path) -> dict:
    """Parse a test file as Extended JSON (relaxed or canonical), keeping key order."""
    return json_util.loads(path.read_text(), json_options=json_util.JSONOptions(document_class=dict))


def check_schema_version(doc: dict) -> None:
    parts = [int(p) for p in str(doc["schemaVersion"]).split(".")]
    major, minor = parts[0], (parts[1] if len(parts) > 1 else 0)
    if major != SUPPORTED_SCHEMA[0] or minor > SUPPORTED_SCHEMA[1]:
        major, minor = SUPPORTED_SCHEMA
        raise UnsupportedByRunner(f"schemaVersion {doc['schemaVersion']} not supported "
                                  f"(runner supports {major}.0-{major}.{minor})")


def parse_version(text: str) -> tuple[int, int, int]:
    parts = [int(re.match(r"\d+", p).group()) for p in str(text).split(".")[:3]]
    while len(parts) < 3:
        parts.append(0)
    return tuple(parts)  # type: ignore[return-value]


# ----------------------------------------------------------------------------- matching

BSON_TYPES: dict[str, Callable[[Any], bool]] = {
    "double": lambda v: isinstance(v, float),
    "string": lambda v: isinstance(v, str),
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "binData": lambda v: isinstance(v, (Binary, bytes)),
    "objectId": lambda v: isinstance(v, ObjectId),
    "bool": lambda v: isinstance(v, bool),
    "date": lambda v: hasattr(v, "isoformat") and not isinstance(v, Timestamp),
    "null": lambda v: v is None,
    "regex": lambda v: isinstance(v, (Regex, re.Pattern)),
    "dbPointer": lambda v: isinstance(v, DBRef),
    "javascript": lambda v: isinstance(v, Code) and v.scope is None,
    "javascriptWithScope": lambda v: isinstance(v, Code) and v.scope is not None,
    "int": lambda v: type(v) is int and -(2**31) <= v < 2**31,
    "timestamp": lambda v: isinstance(v, Timestamp),
    "long": lambda v: isinstance(v, Int64) or (type(v) is int and not -(2**31) <= v < 2**31),
    "decimal": lambda v: isinstance(v, Decimal128),
    "minKey": lambda v: isinstance(v, MinKey),
    "maxKey": lambda v: isinstance(v, MaxKey),
}
BSON_TYPES["number"] = lambda v: any(BSON_TYPES[t](v) for t in ("int", "long", "double", "decimal"))


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _operator(value: Any) -> str | None:
    """The special operator of an expected value: a document whose first and only key starts with $$."""
    if isinstance(value, dict) and len(value) == 1:
        key = next(iter(value))
        if key.startswith("$$"):
            return key
    return None


class Matcher:
    def __init__(self, entities: "EntityMap") -> None:
        self.entities = entities

    def match(self, expected: Any, actual: Any, *, root: bool = True, path: str = "") -> None:
        op = _operator(expected)
        if op is not None:
            self._special(op, expected[op], actual, present=True, path=path)
            return
        if isinstance(expected, dict):
            if not isinstance(actual, dict):
                self.fail(path, f"expected a document, got {actual!r}")
            for key, value in expected.items():
                sub = f"{path}.{key}" if path else key
                vop = _operator(value)
                if vop == "$$exists":
                    if bool(value[vop]) != (key in actual):
                        self.fail(sub, f"expected the key to {'exist' if value[vop] else 'be absent'}"
                                  f" in {actual!r}")
                    continue
                if vop == "$$unsetOrMatches":
                    if key not in actual:
                        continue
                    self.match(value[vop], actual[key], root=False, path=sub)
                    continue
                if key not in actual:
                    self.fail(sub, f"missing in {actual!r}")
                self.match(value, actual[key], root=False, path=sub)
            if not root:
                extra = [k for k in actual if k not in expected]
                if extra:
                    self.fail(path, f"unexpected extra keys {extra} in {actual!r}")
            return
        if isinstance(expected, list):
            if not isinstance(actual, list):
                self.fail(path, f"expected an array, got {actual!r}")
            if len(actual) != len(expected):
                self.fail(path, f"expected {len(expected)} elements, got {len(actual)}: {actual!r}")
            for i, (e, a) in enumerate(zip(expected, actual)):
                self.match(e, a, root=False, path=f"{path}[{i}]")
            return
        self.equal(expected, actual, path)

    def equal(self, expected: Any, actual: Any, path: str) -> None:
        if _is_number(expected) and _is_number(actual):
            if expected != actual:
                self.fail(path, f"expected {expected!r}, got {actual!r}")
            return
        if type(expected) is not type(actual) and not (isinstance(expected, str) and isinstance(actual, str)):
            if not (isinstance(expected, (bytes, Binary)) and isinstance(actual, (bytes, Binary))):
                self.fail(path, f"expected {expected!r} ({type(expected).__name__}), "
                                f"got {actual!r} ({type(actual).__name__})")
        if expected != actual:
            self.fail(path, f"expected {expected!r}, got {actual!r}")

    def _special(self, op: str, arg: Any, actual: Any, *, present: bool, path: str) -> None:
        if op == "$$type":
            names = arg if isinstance(arg, list) else [arg]
            for name in names:
                if name not in BSON_TYPES:
                    raise UnsupportedByRunner(f"unknown $$type {name!r}")
            if not any(BSON_TYPES[n](actual) for n in names):
                self.fail(path, f"expected a value of type {names}, got {actual!r}")
        elif op == "$$unsetOrMatches":
            self.match(arg, actual, root=False, path=path)
        elif op == "$$matchesEntity":
            self.match(self.entities.get(arg), actual, root=False, path=path)
        elif op == "$$sessionLsid":
            session = self.entities.get(arg, ClientSession)
            self.match(session.session_id, actual, root=False, path=path)
        elif op == "$$lte":
            if not (_is_number(actual) and actual <= arg):
                self.fail(path, f"expected a number <= {arg!r}, got {actual!r}")
        elif op == "$$matchesHexBytes":
            if bytes(actual) != bytes.fromhex(arg):
                self.fail(path, f"expected bytes {arg}, got {actual!r}")
        elif op == "$$exists":  # reached only for a present value (e.g. under $$unsetOrMatches)
            if not arg:
                self.fail(path, f"expected no value, got {actual!r}")
        else:
            raise UnsupportedByRunner(f"unknown special operator {op}")

    @staticmethod
    def fail(path: str, msg: str) -> None:
        raise AssertionError(f"{path or '<root>'}: {msg}")


# ----------------------------------------------------------------------------- events


@dataclass
class ObservedEvent:
    kind: str  # commandStartedEvent | commandSucceededEvent | commandFailedEvent
    command_name: str
    database_name: str
    command: dict | None = None
    reply: dict | None = None
    has_service_id: bool = False
    has_server_connection_id: bool = False

    def describe(self) -> str:
        body = self.command if self.kind == "commandStartedEvent" else self.reply
        return f"{self.kind} {self.command_name} on {self.database_name}: {body!r}"


class EventRecorder(monitoring.CommandListener):
    """Command-monitoring listener of one client entity, filtered the way the format requires."""

    def __init__(self, observe: list[str], ignore: list[str], observe_sensitive: bool) -> None:
        self.observe = set(observe)
        self.ignore = set(ignore) | {"configureFailPoint"}
        self.observe_sensitive = observe_sensitive
        self.events: list[ObservedEvent] = []
        self.enabled = True
        self._skipped: set[tuple] = set()  # (connection, request id) of started events left out

    def _ignored(self, name: str, command: dict) -> bool:
        if name in self.ignore:
            return True
        if not self.observe_sensitive:
            low = name.lower()
            if low in SENSITIVE_COMMANDS:
                return True
            # hello with speculativeAuthenticate is sensitive; the driver redacts it to an empty document
            if low in HELLO_COMMANDS and (not command or "speculativeAuthenticate" in command):
                return True
        return False

    def _record(self, kind: str, event: Any, **fields: Any) -> None:
        if kind in self.observe:
            self.events.append(ObservedEvent(kind, event.command_name, event.database_name,
                                             has_service_id=event.service_id is not None,
                                             has_server_connection_id=event.server_connection_id is not None,
                                             **fields))

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        if not self.enabled:
            return
        if self._ignored(event.command_name, event.command):
            self._skipped.add((event.connection_id, event.request_id))
            return
        self._record("commandStartedEvent", event, command=copy.deepcopy(dict(event.command)))

    def _finished(self, event: Any) -> bool:
        key = (event.connection_id, event.request_id)
        if key in self._skipped:
            self._skipped.discard(key)
            return False
        return self.enabled and event.command_name not in self.ignore

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        if self._finished(event):
            self._record("commandSucceededEvent", event, reply=copy.deepcopy(dict(event.reply)))

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        if self._finished(event):
            self._record("commandFailedEvent", event)


# ----------------------------------------------------------------------------- entities


class EntityMap:
    def __init__(self) -> None:
        self._map: dict[str, Any] = {}
        self.recorders: dict[str, EventRecorder] = {}
        self.change_streams: list[ChangeStream] = []

    def add(self, name: str, value: Any) -> None:
        if name in self._map:
            raise UnsupportedByRunner(f"entity {name!r} already exists")
        self._map[name] = value

    def get(self, name: str, kind: type | tuple | None = None) -> Any:
        if name not in self._map:
            raise UnsupportedByRunner(f"no entity named {name!r}")
        value = self._map[name]
        if kind is not None and not isinstance(value, kind):
            raise UnsupportedByRunner(f"entity {name!r} is a {type(value).__name__}, not {kind}")
        return value

    def close_listeners(self) -> None:
        for rec in self.recorders.values():
            rec.enabled = False

    def close(self) -> None:
        self.close_listeners()
        for cs in self.change_streams:
            try:
                cs.close()
            except PyMongoError:
                pass
        for value in self._map.values():
            if isinstance(value, ClientSession):
                try:
                    value.end_session()
                except PyMongoError:
                    pass
        for value in self._map.values():
            if isinstance(value, pymongo.MongoClient):
                value.close()
        self._map.clear()


def _read_concern(doc: dict) -> ReadConcern:
    return ReadConcern(**doc)


def _write_concern(doc: dict) -> WriteConcern:
    doc = dict(doc)
    if "journal" in doc:
        doc["j"] = doc.pop("journal")
    if "wtimeoutMS" in doc:
        doc["wtimeout"] = doc.pop("wtimeoutMS")
    return WriteConcern(**doc)


def _read_preference(doc: dict):
    mode = read_pref_mode_from_name(doc["mode"])
    return make_read_preference(mode, doc.get("tagSets"), doc.get("maxStalenessSeconds", -1))


def _db_or_coll_options(opts: dict | None) -> dict:
    out: dict = {}
    for key, value in (opts or {}).items():
        if key == "readConcern":
            out["read_concern"] = _read_concern(value)
        elif key == "writeConcern":
            out["write_concern"] = _write_concern(value)
        elif key == "readPreference":
            out["read_preference"] = _read_preference(value)
        else:
            raise UnsupportedByRunner(f"unsupported database/collection option {key!r}")
    return out


# ----------------------------------------------------------------------------- results


def result_to_document(result: Any) -> Any:
    if isinstance(result, InsertOneResult):
        return {"insertedId": result.inserted_id}
    if isinstance(result, InsertManyResult):
        return {"insertedIds": dict(enumerate(result.inserted_ids))}
    if isinstance(result, UpdateResult):
        return {"matchedCount": result.matched_count, "modifiedCount": result.modified_count,
                "upsertedCount": 0 if result.upserted_id is None else 1, "upsertedId": result.upserted_id}
    if isinstance(result, DeleteResult):
        return {"deletedCount": result.deleted_count}
    return result


def server_reply(exc: BaseException) -> dict | None:
    """The server's error document behind an exception, or None for a client-side error."""
    if isinstance(exc, (OperationFailure, NotPrimaryError)) and isinstance(getattr(exc, "details", None), dict):
        return exc.details
    return None


# ----------------------------------------------------------------------------- the runner


@dataclass
class Deployment:
    version: tuple[int, int, int]
    topology: str  # single | replicaset | sharded
    parameters: dict = field(default_factory=dict)
    shards_are_replsets: bool = True


class SpecRunner:
    """Runs unified-format tests against one deployment."""

    def __init__(self, uri: str, *, serverless: bool = False, auth: bool = False) -> None:
        self.uri = uri
        self.serverless = serverless
        self.auth = auth
        self.internal = pymongo.MongoClient(uri, **CLIENT_DEFAULTS)
        build = self.internal.admin.command("buildInfo")
        hello = self.internal.admin.command("hello")
        if hello.get("msg") == "isdbgrid":
            topology = "sharded"
        elif "setName" in hello:
            topology = "replicaset"
        else:
            topology = "single"
        self.deployment = Deployment(tuple(build["versionArray"][:3]), topology)
        if topology == "sharded":
            shards = self.internal.admin.command("listShards").get("shards", [])
            self.deployment.shards_are_replsets = all("/" in s.get("host", "") for s in shards)
        try:  # terminate open transactions before the first test (format: "Terminating Open Transactions")
            self.internal.admin.command("killAllSessions", [])
        except OperationFailure:
            pass

    def close(self) -> None:
        self.internal.close()

    # -- requirements --------------------------------------------------------------------------
    def _server_parameter(self, name: str) -> Any:
        if name not in self.deployment.parameters:
            try:
                reply = self.internal.admin.command({"getParameter": 1, name: 1})
                self.deployment.parameters[name] = reply.get(name, KeyError)
            except OperationFailure:
                self.deployment.parameters[name] = KeyError
        return self.deployment.parameters[name]

    def requirement_problem(self, req: dict) -> str | None:
        """Why one runOnRequirement is not met, or None when it is."""
        dep = self.deployment
        for key, value in req.items():
            if key == "minServerVersion":
                if dep.version < parse_version(value):
                    return f"server {'.'.join(map(str, dep.version))} < minServerVersion {value}"
            elif key == "maxServerVersion":
                if dep.version > parse_version(value):
                    return f"server {'.'.join(map(str, dep.version))} > maxServerVersion {value}"
            elif key == "topologies":
                ok = dep.topology in value or (
                    dep.topology == "sharded" and "sharded-replicaset" in value and dep.shards_are_replsets)
                if not ok:
                    return f"topology {dep.topology} not in {value}"
            elif key == "serverless":
                if (value == "require" and not self.serverless) or (value == "forbid" and self.serverless):
                    return f"serverless: {value}"
            elif key == "auth":
                if bool(value) != self.auth:
                    return f"auth: {value}"
            elif key == "authMechanism":
                if not self.auth:
                    return f"authMechanism {value} without auth"
            elif key == "csfle":
                if value:  # the runner has no client-side encryption
                    return "csfle: true"
            elif key == "serverParameters":
                for name, expected in value.items():
                    actual = self._server_parameter(name)
                    try:
                        Matcher(EntityMap()).equal(expected, actual, name)
                    except AssertionError:
                        return f"server parameter {name}={actual!r} != {expected!r}"
            else:
                raise UnsupportedByRunner(f"unknown runOnRequirement field {key!r}")
        return None

    def check_requirements(self, reqs: list | None, where: str) -> None:
        if not reqs:
            return
        problems = [self.requirement_problem(r) for r in reqs]
        if all(p is not None for p in problems):
            raise RequirementsNotMet(f"{where} runOnRequirements not met: " + "; ".join(problems))

    # -- one test ------------------------------------------------------------------------------
    def run_test(self, spec: dict, test: dict) -> None:
        check_schema_version(spec)
        self.check_requirements(spec.get("runOnRequirements"), "file")
        self.check_requirements(test.get("runOnRequirements"), "test")
        if "skipReason" in test:
            raise SkippedByFile(test["skipReason"])
        for key in test:
            if key not in ("description", "runOnRequirements", "skipReason", "operations", "expectEvents", "outcome"):
                raise UnsupportedByRunner(f"unsupported test field {key!r}")
        self.reset(spec)
        self.load_initial_data(spec.get("initialData") or [])
        run = CaseRun(self, spec, test)
        try:
            run.create_entities(spec.get("createEntities") or [])
            for op in test["operations"]:
                run.run_operation(op)
            run.entities.close_listeners()
            run.disable_failpoints()
            for expected in test.get("expectEvents") or []:
                run.check_events(expected)
            for data in test.get("outcome") or []:
                self.check_outcome(data)
        finally:
            try:
                run.disable_failpoints()
            finally:
                run.entities.close()

    # -- setup / teardown ----------------------------------------------------------------------
    def databases_of(self, spec: dict) -> set[str]:
        names = set()

        def walk(x: Any) -> None:
            if isinstance(x, dict):
                for k, v in x.items():
                    if k == "databaseName" and isinstance(v, str):
                        names.add(v)
                    walk(v)
            elif isinstance(x, list):
                for v in x:
                    walk(v)

        walk(spec.get("createEntities"))
        walk(spec.get("initialData"))
        for test in spec["tests"]:
            for op in test["operations"]:
                if op["name"] == "createEntities":
                    walk(op.get("arguments"))
        return names - {"admin", "config", "local"}

    def reset(self, spec: dict) -> None:
        """Between tests: every failpoint off and the file's databases dropped."""
        for name in RESET_FAILPOINTS:
            self.internal.admin.command({"configureFailPoint": name, "mode": "off"})
        for db in sorted(self.databases_of(spec)):
            self.internal.drop_database(db)

    def load_initial_data(self, initial: list) -> None:
        majority = WriteConcern(w="majority")
        for data in initial:
            db = self.internal.get_database(data["databaseName"], write_concern=majority)
            name = data["collectionName"]
            db.drop_collection(name)
            if "createOptions" in data:
                db.create_collection(name, check_exists=False, **data["createOptions"])
            if data.get("documents"):
                db[name].insert_many(data["documents"])
            elif "createOptions" not in data:
                db.create_collection(name, check_exists=False)

    def check_outcome(self, data: dict) -> None:
        coll = self.internal[data["databaseName"]].get_collection(
            data["collectionName"], read_preference=pymongo.ReadPreference.PRIMARY, read_concern=ReadConcern("local"))
        actual = list(coll.find({}, sort=[("_id", 1)]))
        if actual != data["documents"]:
            raise AssertionError(f"outcome of {data['databaseName']}.{data['collectionName']}: "
                                 f"expected {data['documents']!r}, got {actual!r}")


class CaseRun:
    """The state of one test: its entity map and the failpoints it configured."""

    def __init__(self, runner: SpecRunner, spec: dict, test: dict) -> None:
        self.runner = runner
        self.spec = spec
        self.test = test
        self.entities = EntityMap()
        self.matcher = Matcher(self.entities)
        self.failpoints: list[str] = []
        self.uses_failpoints = any(op["name"] in ("failPoint", "targetedFailPoint") for op in test["operations"])

    # -- entities ------------------------------------------------------------------------------
    def create_entities(self, entities: list) -> None:
        for ent in entities:
            if len(ent) != 1:
                raise UnsupportedByRunner(f"an entity must have exactly one key: {ent!r}")
            kind, desc = next(iter(ent.items()))
            creator = getattr(self, f"_create_{kind}", None)
            if creator is None:
                raise UnsupportedByRunner(f"unsupported entity type {kind!r}")
            self.entities.add(desc["id"], creator(desc))

    def _create_client(self, desc: dict) -> pymongo.MongoClient:
        known = {"id", "uriOptions", "useMultipleMongoses", "observeEvents", "ignoreCommandMonitoringEvents",
                 "observeSensitiveCommands"}
        for key in desc:
            if key not in known:
                raise UnsupportedByRunner(f"unsupported client option {key!r}")
        if desc.get("useMultipleMongoses") and self.runner.deployment.topology == "sharded":
            hosts = self.runner.internal.topology_description.server_descriptions()
            if len(hosts) < 2:
                raise UnsupportedByRunner("useMultipleMongoses: true needs several mongoses")
        recorder = EventRecorder(desc.get("observeEvents") or [], desc.get("ignoreCommandMonitoringEvents") or [],
                                 bool(desc.get("observeSensitiveCommands")))
        self.entities.recorders[desc["id"]] = recorder
        options = dict(desc.get("uriOptions") or {})
        if self.uses_failpoints and not any(k.lower() == "heartbeatfrequencyms" for k in options):
            # The format allows a reduced heartbeat when a test configures failpoints: a "not primary" or
            # "shutting down" error marks the server Unknown, and with the streaming monitor the driver
            # only sees it again at the next heartbeat (10 s by default).
            options["heartbeatFrequencyMS"] = FAILPOINT_HEARTBEAT_MS
        for key, value in CLIENT_DEFAULTS.items():  # a broken server fails the test instead of hanging it
            if not any(k.lower() == key.lower() for k in options):
                options[key] = value
        return pymongo.MongoClient(self.runner.uri, event_listeners=[recorder], **options)

    def _create_database(self, desc: dict) -> Database:
        client = self.entities.get(desc["client"], pymongo.MongoClient)
        return client.get_database(desc["databaseName"], **_db_or_coll_options(desc.get("databaseOptions")))

    def _create_collection(self, desc: dict) -> Collection:
        db = self.entities.get(desc["database"], Database)
        return db.get_collection(desc["collectionName"], **_db_or_coll_options(desc.get("collectionOptions")))

    def _create_session(self, desc: dict) -> ClientSession:
        client = self.entities.get(desc["client"], pymongo.MongoClient)
        opts = dict(desc.get("sessionOptions") or {})
        kwargs = {}
        if "causalConsistency" in opts:
            kwargs["causal_consistency"] = opts.pop("causalConsistency")
        if "snapshot" in opts:
            kwargs["snapshot"] = opts.pop("snapshot")
        if opts:
            raise UnsupportedByRunner(f"unsupported session options {sorted(opts)}")
        return client.start_session(**kwargs)

    # -- operations ----------------------------------------------------------------------------
    def run_operation(self, op: dict) -> None:
        for key in op:
            if key not in ("name", "object", "arguments", "expectResult", "expectError", "saveResultAsEntity",
                           "ignoreResultAndError"):
                raise UnsupportedByRunner(f"unsupported operation field {key!r}")
        name, obj = op["name"], op["object"]
        args = dict(op.get("arguments") or {})
        if obj == "testRunner":
            handler = getattr(self, f"_runner_{name}", None)
            if handler is None:
                raise UnsupportedByRunner(f"unsupported testRunner operation {name!r}")
            handler(args)
            return
        target = self.entities.get(obj)
        handler = self._handler(name, target)
        result = error = None
        try:
            result = handler(target, args)
        except PyMongoError as exc:
            error = exc
        if op.get("ignoreResultAndError"):
            return
        if "expectError" in op:
            if error is None:
                raise AssertionError(f"operation {name} on {obj}: expected an error, got result {result!r}")
            self.check_error(op["expectError"], error, f"{name} on {obj}")
            return
        if error is not None:
            raise AssertionError(f"operation {name} on {obj} failed unexpectedly: {error!r} "
                                 f"{server_reply(error) or ''}") from error
        doc = result_to_document(result)
        if "expectResult" in op:
            try:
                self.matcher.match(op["expectResult"], doc, root=True)
            except AssertionError as exc:
                raise AssertionError(f"operation {name} on {obj}: result {doc!r} does not match: {exc}") from None
        if "saveResultAsEntity" in op:
            if result is None:
                raise UnsupportedByRunner(f"operation {name} returned nothing to save")
            self.entities.add(op["saveResultAsEntity"], result)

    def _handler(self, name: str, target: Any) -> Callable[[Any, dict], Any]:
        if isinstance(target, pymongo.MongoClient):
            kind = "client"
        elif isinstance(target, Database):
            kind = "database"
        elif isinstance(target, Collection):
            kind = "collection"
        elif isinstance(target, ChangeStream):
            kind = "changeStream"
        elif isinstance(target, ClientSession):
            kind = "session"
        else:
            raise UnsupportedByRunner(f"operations on {type(target).__name__} are not supported")
        handler = getattr(self, f"_{kind}_{name}", None) or getattr(self, f"_any_{name}", None)
        if handler is None:
            raise UnsupportedByRunner(f"unsupported operation {name!r} on a {kind}")
        return handler

    @staticmethod
    def _take(args: dict, *allowed: str) -> None:
        extra = [k for k in args if k not in allowed]
        if extra:
            raise UnsupportedByRunner(f"unsupported arguments {extra}")

    # testRunner operations
    def _runner_failPoint(self, args: dict) -> None:
        self._take(args, "client", "failPoint")
        client = self.entities.get(args["client"], pymongo.MongoClient)
        fp = args["failPoint"]
        client.admin.command(SON(fp))
        self.failpoints.append(fp["configureFailPoint"])

    def _runner_createEntities(self, args: dict) -> None:
        self._take(args, "entities")
        self.create_entities(args["entities"])

    def disable_failpoints(self) -> None:
        for name in self.failpoints:
            self.runner.internal.admin.command({"configureFailPoint": name, "mode": "off"})
        self.failpoints.clear()

    # change streams
    WATCH_OPTIONS = {
        "batchSize": "batch_size", "fullDocument": "full_document",
        "fullDocumentBeforeChange": "full_document_before_change", "resumeAfter": "resume_after",
        "startAfter": "start_after", "startAtOperationTime": "start_at_operation_time",
        "maxAwaitTimeMS": "max_await_time_ms", "showExpandedEvents": "show_expanded_events",
        "comment": "comment", "collation": "collation",
    }

    def _any_createChangeStream(self, target: Any, args: dict) -> ChangeStream:
        if isinstance(target, ChangeStream):
            raise UnsupportedByRunner("createChangeStream on a change stream")
        pipeline = args.pop("pipeline", [])
        kwargs = {}
        for key, value in args.items():
            if key not in self.WATCH_OPTIONS:
                raise UnsupportedByRunner(f"unsupported createChangeStream option {key!r}")
            kwargs[self.WATCH_OPTIONS[key]] = value
        stream = target.watch(pipeline, **kwargs)  # pymongo runs the aggregate here
        self.entities.change_streams.append(stream)
        return stream

    def _changeStream_iterateUntilDocumentOrError(self, stream: ChangeStream, args: dict) -> dict:
        self._take(args)
        deadline = time.monotonic() + ITERATE_TIMEOUT_S
        while stream.alive:  # what ChangeStream.next() does, with a deadline
            doc = stream.try_next()
            if doc is not None:
                return doc
            if time.monotonic() > deadline:
                raise AssertionError(f"no change event within {ITERATE_TIMEOUT_S} s")
        raise AssertionError("the change stream was closed before returning a document")

    def _changeStream_iterateOnce(self, stream: ChangeStream, args: dict) -> Any:
        self._take(args)
        return stream.try_next()

    def _changeStream_close(self, stream: ChangeStream, args: dict) -> None:
        self._take(args)
        stream.close()

    # CRUD
    def _collection_insertOne(self, coll: Collection, args: dict) -> Any:
        self._take(args, "document", "comment")
        return coll.insert_one(args["document"], **self._comment(args))

    def _collection_insertMany(self, coll: Collection, args: dict) -> Any:
        self._take(args, "documents", "ordered", "comment")
        return coll.insert_many(args["documents"], ordered=args.get("ordered", True), **self._comment(args))

    def _collection_updateOne(self, coll: Collection, args: dict) -> Any:
        self._take(args, "filter", "update", "upsert", "comment")
        return coll.update_one(args["filter"], args["update"], upsert=args.get("upsert", False), **self._comment(args))

    def _collection_updateMany(self, coll: Collection, args: dict) -> Any:
        self._take(args, "filter", "update", "upsert", "comment")
        return coll.update_many(args["filter"], args["update"], upsert=args.get("upsert", False), **self._comment(args))

    def _collection_replaceOne(self, coll: Collection, args: dict) -> Any:
        self._take(args, "filter", "replacement", "upsert", "comment")
        return coll.replace_one(args["filter"], args["replacement"], upsert=args.get("upsert", False),
                                **self._comment(args))

    def _collection_deleteOne(self, coll: Collection, args: dict) -> Any:
        self._take(args, "filter", "comment")
        return coll.delete_one(args["filter"], **self._comment(args))

    def _collection_deleteMany(self, coll: Collection, args: dict) -> Any:
        self._take(args, "filter", "comment")
        return coll.delete_many(args["filter"], **self._comment(args))

    def _collection_find(self, coll: Collection, args: dict) -> list:
        self._take(args, "filter", "sort", "limit", "batchSize", "projection")
        sort = list((args.get("sort") or {}).items()) or None
        return list(coll.find(args.get("filter", {}), projection=args.get("projection"), sort=sort,
                              limit=args.get("limit", 0), batch_size=args.get("batchSize", 0)))

    @staticmethod
    def _comment(args: dict) -> dict:
        return {"comment": args["comment"]} if "comment" in args else {}

    # DDL
    def _database_createCollection(self, db: Database, args: dict) -> Collection:
        args = dict(args)
        name = args.pop("collection")
        self._take(args, "viewOn", "pipeline", "capped", "size", "max", "changeStreamPreAndPostImages",
                   "validator", "expireAfterSeconds", "timeseries", "clusteredIndex", "collation")
        return db.create_collection(name, check_exists=False, **args)

    def _database_dropCollection(self, db: Database, args: dict) -> Any:
        self._take(args, "collection")
        return db.drop_collection(args["collection"])

    def _database_runCommand(self, db: Database, args: dict) -> dict:
        self._take(args, "command", "commandName", "readPreference")
        command = SON(args["command"])
        if "commandName" in args and next(iter(command)) != args["commandName"]:
            raise UnsupportedByRunner("commandName does not match the command's first key")
        kwargs = {}
        if "readPreference" in args:
            kwargs["read_preference"] = _read_preference(args["readPreference"])
        return db.command(command, **kwargs)

    def _collection_rename(self, coll: Collection, args: dict) -> Any:
        self._take(args, "to", "dropTarget")
        kwargs = {"dropTarget": args["dropTarget"]} if "dropTarget" in args else {}
        coll.rename(args["to"], **kwargs)
        return None

    def _collection_createIndex(self, coll: Collection, args: dict) -> str:
        self._take(args, "keys", "name", "unique")
        kwargs = {k: args[k] for k in ("name", "unique") if k in args}
        return coll.create_index(list(args["keys"].items()), **kwargs)

    def _collection_dropIndex(self, coll: Collection, args: dict) -> None:
        self._take(args, "name")
        coll.drop_index(args["name"])
        return None

    # -- assertions ----------------------------------------------------------------------------
    def check_error(self, expected: dict, exc: PyMongoError, where: str) -> None:
        reply = server_reply(exc)
        ctx = f"{where}: error {exc!r} (reply {reply!r})"
        for key, value in expected.items():
            if key == "isError":
                continue
            if key == "isClientError":
                if value != (reply is None):
                    raise AssertionError(f"{ctx}: expected isClientError={value}")
            elif key == "isTimeoutError":
                if value != bool(getattr(exc, "timeout", False)):
                    raise AssertionError(f"{ctx}: expected isTimeoutError={value}")
            elif key == "errorContains":
                if value.lower() not in str(exc).lower():
                    raise AssertionError(f"{ctx}: message does not contain {value!r}")
            elif key == "errorCode":
                if reply is None or reply.get("code") != value:
                    raise AssertionError(f"{ctx}: expected code {value}")
            elif key == "errorCodeName":
                if reply is None or str(reply.get("codeName", "")).lower() != value.lower():
                    raise AssertionError(f"{ctx}: expected codeName {value}")
            elif key == "errorLabelsContain":
                missing = [lbl for lbl in value if not exc.has_error_label(lbl)]
                if missing:
                    raise AssertionError(f"{ctx}: missing error labels {missing}")
            elif key == "errorLabelsOmit":
                present = [lbl for lbl in value if exc.has_error_label(lbl)]
                if present:
                    raise AssertionError(f"{ctx}: unexpected error labels {present}")
            elif key == "errorResponse":
                if reply is None:
                    raise AssertionError(f"{ctx}: expected a server response")
                self.matcher.match(value, reply, root=True)
            elif key == "expectResult":
                partial = getattr(exc, "details", None)
                self.matcher.match(value, result_to_document(partial), root=True)
            else:
                raise UnsupportedByRunner(f"unsupported expectError field {key!r}")

    def check_events(self, expected: dict) -> None:
        for key in expected:
            if key not in ("client", "events", "ignoreExtraEvents", "eventType"):
                raise UnsupportedByRunner(f"unsupported expectEvents field {key!r}")
        if expected.get("eventType", "command") != "command":
            raise UnsupportedByRunner(f"eventType {expected['eventType']!r} not supported")
        client = expected["client"]
        if client not in self.entities.recorders:
            raise UnsupportedByRunner(f"no client entity named {client!r}")
        actual = self.entities.recorders[client].events
        want = expected["events"]
        listing = "\n  ".join(e.describe() for e in actual) or "(none)"
        if len(actual) < len(want) or (len(actual) > len(want) and not expected.get("ignoreExtraEvents")):
            raise AssertionError(f"client {client}: expected {len(want)} events"
                                 f"{' or more' if expected.get('ignoreExtraEvents') else ''}, "
                                 f"observed {len(actual)}:\n  {listing}")
        for i, (exp, act) in enumerate(zip(want, actual)):
            try:
                self._match_event(exp, act)
            except AssertionError as exc:
                raise AssertionError(f"client {client}: event {i} does not match: {exc}\n"
                                     f"observed:\n  {listing}") from None

    def _match_event(self, expected: dict, actual: ObservedEvent) -> None:
        if len(expected) != 1:
            raise UnsupportedByRunner(f"an expected event must have exactly one key: {expected!r}")
        kind, body = next(iter(expected.items()))
        if kind not in ("commandStartedEvent", "commandSucceededEvent", "commandFailedEvent"):
            raise UnsupportedByRunner(f"unsupported expected event {kind!r}")
        if kind != actual.kind:
            raise AssertionError(f"expected a {kind}, got {actual.describe()}")
        for key, value in body.items():
            if key == "command":
                self.matcher.match(value, actual.command, root=True, path="command")
            elif key == "reply":
                self.matcher.match(value, actual.reply, root=True, path="reply")
            elif key == "commandName":
                if actual.command_name != value:
                    raise AssertionError(f"commandName {actual.command_name!r} != {value!r}")
            elif key == "databaseName":
                if actual.database_name != value:
                    raise AssertionError(f"databaseName {actual.database_name!r} != {value!r}")
            elif key == "hasServiceId":
                if actual.has_service_id != value:
                    raise AssertionError(f"hasServiceId {actual.has_service_id} != {value}")
            elif key == "hasServerConnectionId":
                if actual.has_server_connection_id != value:
                    raise AssertionError(f"hasServerConnectionId {actual.has_server_connection_id} != {value}")
            else:
                raise UnsupportedByRunner(f"unsupported {kind} field {key!r}")


def spec_files(root: Path) -> list[Path]:
    """The change-stream test files of the suite: change-streams/*.json and retryable-reads/changeStreams-*.json."""
    return sorted(root.glob("change-streams/*.json")) + sorted(root.glob("retryable-reads/changeStreams-*.json"))


__all__ = ["SpecRunner", "RequirementsNotMet", "SkippedByFile", "UnsupportedByRunner", "load_spec_file", "spec_files"]
