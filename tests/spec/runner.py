"""An interpreter of the driver specifications' unified test format, written from the format's
specification (mongodb/specifications, source/unified-test-format/unified-test-format.md).

A `SpecRunner` is bound to one deployment (a connection string; on a sharded
cluster also the list of its mongos routers).  `run_test(file, test)` runs one
test the way "Executing a Test" says:

1. the schema version and the file's and test's runOnRequirements decide
   whether the test applies (`RequirementsNotMet` names the requirement);
2. the file's databases are dropped and `initialData` written with the
   internal client ("majority");
3. the entities are created (`entities.py`), the operations run
   (`operations.py`, `special_operations.py`) with their expectResult /
   expectError (`expected_error.py`) checked as they go;
4. listeners stop, failpoints are turned off, then `expectEvents`
   (`events.py`) and `outcome` are checked;
5. sessions end, cursors and clients close; after a failure or a test that
   started a transaction, killAllSessions ends any transaction left open.

A failure raises AssertionError; whatever the runner does not implement
raises `UnsupportedByRunner` (a failure too, never a pass or a skip).

Speed: one runner (one internal client) serves every test of a deployment.
While a test runs, pymongo's minimum interval between server checks
(`pymongo.common.MIN_HEARTBEAT_INTERVAL`, 0.5 s) is lowered, as the format
allows ("minHeartbeatFrequencyMS"), so a client recovers at once from the
"not primary" / network errors the failpoints inject.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any, Iterator

import pymongo
import pymongo.common
from bson import json_util
from pymongo.errors import AutoReconnect, OperationFailure, PyMongoError
from pymongo.read_concern import ReadConcern
from pymongo.uri_parser import parse_uri
from pymongo.write_concern import WriteConcern

from tests.spec.entities import (CLIENT_DEFAULTS, ClientConfig, EntityMap, create_bucket, create_client,
                                 create_collection, create_database, create_session, with_hosts)
from tests.spec.errors import RequirementsNotMet, SkippedByFile, UnsupportedByRunner
from tests.spec.events import check_events
from tests.spec.expected_error import check_error
from tests.spec.matching import Matcher, exactly_equal
from tests.spec.operations import Args, handler_for
from tests.spec.requirements import Deployment, check_requirements, check_schema_version
from tests.spec.results import describe_error, result_to_document
from tests.spec.special_operations import SPECIAL_OPERATIONS

FAST_CHECK_INTERVAL_S = 0.02  # pymongo.common.MIN_HEARTBEAT_INTERVAL while a test runs
FILE_FIELDS = {"description", "schemaVersion", "runOnRequirements", "createEntities", "initialData", "tests",
               "_yamlAnchors"}
TEST_FIELDS = {"description", "runOnRequirements", "skipReason", "operations", "expectEvents", "outcome"}
OPERATION_FIELDS = {"name", "object", "arguments", "expectResult", "expectError", "saveResultAsEntity",
                    "ignoreResultAndError"}
# killAllSessions failures the format lets a runner ignore: Interrupted, Unauthorized, CommandNotFound.
IGNORABLE_KILL_ALL_SESSIONS = {11601, 13, 59}
# Packages whose TypeError / ValueError is the driver refusing bad input (a client error of the operation);
# raised anywhere else, it is a bug of the runner.
DRIVER_PACKAGES = tuple(os.path.dirname(m.__file__) + os.sep for m in (pymongo, __import__("bson"),
                                                                       __import__("gridfs")))


def load_spec_file(path: Path) -> dict:
    """A test file as Extended JSON (relaxed or canonical), key order kept, dates naive UTC as pymongo decodes."""
    opts = json_util.JSONOptions(document_class=dict, tz_aware=False)
    return json_util.loads(path.read_text(), json_options=opts)


def spec_files(root: Path) -> list[Path]:
    """Every test file of the suite (`*.json` under root)."""
    return sorted(root.rglob("*.json"))


@contextlib.contextmanager
def fast_server_checks() -> Iterator[None]:
    saved = pymongo.common.MIN_HEARTBEAT_INTERVAL
    pymongo.common.MIN_HEARTBEAT_INTERVAL = FAST_CHECK_INTERVAL_S
    try:
        yield
    finally:
        pymongo.common.MIN_HEARTBEAT_INTERVAL = saved


class SpecRunner:
    """Runs unified-format tests against one deployment."""

    def __init__(self, uri: str, *, routers: list[str] | None = None, serverless: bool = False,
                 auth: bool = False) -> None:
        self.uri = uri
        seeds = [f"{h}:{p}" for h, p in parse_uri(uri)["nodelist"]]
        probe = pymongo.MongoClient(with_hosts(uri, seeds[:1]), **CLIENT_DEFAULTS)
        try:
            build = probe.admin.command("buildInfo")
            hello = probe.admin.command("hello")
        finally:
            probe.close()
        if hello.get("msg") == "isdbgrid":
            topology = "sharded"
        elif "setName" in hello:
            topology = "replicaset"
        else:
            topology = "single"
        routers = list(routers or seeds) if topology == "sharded" else []
        # On a sharded cluster the internal client uses one mongos (the format: initialData through one).
        self.internal = pymongo.MongoClient(with_hosts(uri, routers[:1]) if routers else uri, **CLIENT_DEFAULTS)
        self.deployment = Deployment(tuple(build["versionArray"][:3]), topology, routers=routers,
                                     serverless=serverless, auth=auth,
                                     parameter=self._server_parameter)
        if topology == "sharded":
            shards = self.internal.admin.command("listShards").get("shards", [])
            self.deployment.shards_are_replsets = all("/" in s.get("host", "") for s in shards)
        self._parameters: dict[str, Any] = {}
        self._router_clients: dict[str, pymongo.MongoClient] = {}
        self.terminate_transactions()

    def close(self) -> None:
        for client in self._router_clients.values():
            client.close()
        self.internal.close()

    # -- the deployment's nodes ----------------------------------------------------------------
    def client_for(self, address: Any) -> pymongo.MongoClient:
        """An internal client connected to one mongos ("host:port" or (host, port))."""
        key = address if isinstance(address, str) else f"{address[0]}:{address[1]}"
        if self.deployment.routers[:1] == [key]:
            return self.internal
        if key not in self._router_clients:
            self._router_clients[key] = pymongo.MongoClient(with_hosts(self.uri, [key]), directConnection=True,
                                                            **CLIENT_DEFAULTS)
        return self._router_clients[key]

    def node_clients(self) -> list[pymongo.MongoClient]:
        """Internal clients for every mongos of a sharded cluster, else the internal client."""
        if self.deployment.topology == "sharded":
            return [self.client_for(r) for r in self.deployment.routers]
        return [self.internal]

    def terminate_transactions(self) -> None:
        """killAllSessions on every mongos (or the primary): ends every open transaction ("Terminating Open
        Transactions")."""
        for client in self.node_clients():
            try:
                client.admin.command("killAllSessions", [])
            except OperationFailure as exc:
                if exc.code not in IGNORABLE_KILL_ALL_SESSIONS:
                    raise
            except AutoReconnect:
                pass

    def _server_parameter(self, name: str) -> Any:
        if name not in self._parameters:
            try:
                reply = self.internal.admin.command({"getParameter": 1, name: 1})
                self._parameters[name] = reply.get(name, KeyError)
            except OperationFailure:
                self._parameters[name] = KeyError
        return self._parameters[name]

    # -- one test ------------------------------------------------------------------------------
    def check_applies(self, spec: dict, test: dict) -> None:
        """Raise RequirementsNotMet / SkippedByFile if the test does not run here."""
        check_schema_version(spec)
        check_requirements(self.deployment, spec.get("runOnRequirements"), "file")
        check_requirements(self.deployment, test.get("runOnRequirements"), "test")
        if "skipReason" in test:
            raise SkippedByFile(test["skipReason"])

    def run_test(self, spec: dict, test: dict) -> None:
        self.check_applies(spec, test)
        for fields, known, what in ((spec, FILE_FIELDS, "file"), (test, TEST_FIELDS, "test")):
            extra = set(fields) - known
            if extra:
                raise UnsupportedByRunner(f"unsupported {what} fields {sorted(extra)}")
        with fast_server_checks():
            self.drop_databases(spec)
            self.load_initial_data(spec.get("initialData") or [])
            run = CaseRun(self, spec, test)
            passed = False
            try:
                run.execute()
                passed = True
            finally:
                run.clean_up(terminate_transactions=not passed or run.starts_transaction)

    # -- setup and outcome ---------------------------------------------------------------------
    @staticmethod
    def databases_of(spec: dict) -> set[str]:
        """Every database a file names (entities, initialData, outcome), but admin, config and local."""
        names: set[str] = set()

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
            walk(test.get("outcome"))
            for op in test["operations"]:
                if op["name"] == "createEntities":
                    walk(op.get("arguments"))
        return names - {"admin", "config", "local"}

    def drop_databases(self, spec: dict) -> None:
        """Start from nothing: what an earlier test left in the file's databases is gone."""
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
            if data["documents"]:
                db[name].insert_many(data["documents"])
            elif "createOptions" not in data:
                db.create_collection(name, check_exists=False)

    def cluster_time(self) -> dict | None:
        """The latest cluster time the internal client knows (gossiped to sessions of the test)."""
        return self.internal.admin.command("ping").get("$clusterTime")

    def check_outcome(self, data: dict) -> None:
        coll = self.internal[data["databaseName"]].get_collection(
            data["collectionName"], read_preference=pymongo.ReadPreference.PRIMARY, read_concern=ReadConcern("local"))
        actual = coll.find({}, sort=[("_id", 1)]).to_list()
        expected = data["documents"]
        if not exactly_equal(expected, actual):
            raise AssertionError(f"outcome of {data['databaseName']}.{data['collectionName']}: "
                                 f"expected {expected!r}, got {actual!r}")


class CaseRun:
    """One test being run: its entity map, the failpoints it configured, its operations."""

    def __init__(self, runner: SpecRunner, spec: dict, test: dict) -> None:
        self.runner = runner
        self.spec = spec
        self.test = test
        self.entities = EntityMap()
        self.matcher = Matcher(self.entities)
        self.failpoints: list[tuple[Any, str]] = []  # (mongos address or None for "where the client went", name)
        names = set(_operation_names(test["operations"]))
        self.starts_transaction = bool(names & {"startTransaction", "withTransaction"})
        dep = runner.deployment
        self.client_config = ClientConfig(uri=runner.uri, topology=dep.topology, routers=dep.routers,
                                          failpoints=bool(names & {"failPoint", "targetedFailPoint"}))
        self._cluster_time: Any = None

    def execute(self) -> None:
        self.create_entities(self.spec.get("createEntities") or [])
        for op in self.test["operations"]:
            self.run_operation(op)
        self.entities.stop_listening()
        self.disable_failpoints()
        for expected in self.test.get("expectEvents") or []:
            check_events(self.matcher, expected, self.entities.recorders)
        for data in self.test.get("outcome") or []:
            self.runner.check_outcome(data)

    def clean_up(self, *, terminate_transactions: bool) -> None:
        try:
            self.disable_failpoints()
        finally:
            self.entities.close()
            if terminate_transactions:
                self.runner.terminate_transactions()

    # -- entities ------------------------------------------------------------------------------
    def create_entities(self, entities: list) -> None:
        for ent in entities:
            if len(ent) != 1:
                raise UnsupportedByRunner(f"an entity must have exactly one key: {ent!r}")
            kind, desc = next(iter(ent.items()))
            if kind == "client":
                value = create_client(desc, self.client_config, self.entities)
            elif kind == "database":
                value = create_database(desc, self.entities)
            elif kind == "collection":
                value = create_collection(desc, self.entities)
            elif kind == "session":
                if self._cluster_time is None:
                    self._cluster_time = self.runner.cluster_time()
                value = create_session(desc, self.entities, self._cluster_time)
            elif kind == "bucket":
                value = create_bucket(desc, self.entities)
            else:
                raise UnsupportedByRunner(f"unsupported entity type {kind!r}")
            self.entities.add(desc["id"], value)

    def disable_failpoints(self) -> None:
        """Every failpoint the test configured, off on the node it was set on (for a client entity's failpoint:
        every mongos, since the client may have picked any)."""
        failpoints, self.failpoints = self.failpoints, []
        for address, name in failpoints:
            clients = self.runner.node_clients() if address is None else [self.runner.client_for(address)]
            for client in clients:
                client.admin.command({"configureFailPoint": name, "mode": "off"})

    # -- operations ----------------------------------------------------------------------------
    def run_operation(self, op: dict, *, propagate: bool = False) -> None:
        """Run one operation and check its expectations; with `propagate` (a withTransaction callback) the
        operation's error is raised again after its expectations are checked."""
        extra = set(op) - OPERATION_FIELDS
        if extra:
            raise UnsupportedByRunner(f"unsupported operation fields {sorted(extra)}")
        name, obj = op["name"], op["object"]
        if obj == "testRunner":
            handler = SPECIAL_OPERATIONS.get(name)
            if handler is None:
                raise UnsupportedByRunner(f"unsupported testRunner operation {name!r}")
            handler(self, dict(op.get("arguments") or {}))
            return
        target = self.entities.get(obj)
        handler = handler_for(name, target)
        result = error = None
        try:
            result = handler(self, target, Args(self, name, op.get("arguments")))
        except (PyMongoError, TypeError, ValueError) as exc:
            if not isinstance(exc, PyMongoError) and not _raised_by_driver(exc):
                raise
            error = exc
        where = f"operation {name} on {obj}"
        if op.get("ignoreResultAndError"):
            if propagate and error is not None:
                raise error
            return
        if "expectError" in op:
            if error is None:
                raise AssertionError(f"{where}: expected an error, got result {result!r}")
            check_error(self.matcher, op["expectError"], error, where)
            if propagate:
                raise error
            return
        if error is not None:
            raise AssertionError(f"{where} failed unexpectedly: {describe_error(error)}") from error
        doc = result_to_document(result)
        if "expectResult" in op:
            try:
                self.matcher.match(op["expectResult"], doc, root=True)
            except AssertionError as exc:
                raise AssertionError(f"{where}: result {doc!r} does not match: {exc}") from None
        if "saveResultAsEntity" in op:
            if result is None:
                raise UnsupportedByRunner(f"{where} returned nothing to save")
            self.entities.add(op["saveResultAsEntity"], doc)


def _operation_names(ops: list) -> Iterator[str]:
    for op in ops:
        yield op["name"]
        if op["name"] == "withTransaction":
            yield from _operation_names(op.get("arguments", {}).get("callback", []))


def _raised_by_driver(exc: BaseException) -> bool:
    """A TypeError / ValueError raised inside pymongo, bson or gridfs (input the driver refuses)."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and tb.tb_frame.f_code.co_filename.startswith(DRIVER_PACKAGES)


__all__ = ["SpecRunner", "CaseRun", "RequirementsNotMet", "SkippedByFile", "UnsupportedByRunner",
           "load_spec_file", "spec_files"]
