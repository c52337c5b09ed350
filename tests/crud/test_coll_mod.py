"""collMod of collections through pymongo, on both topologies (mongos sends it to the primary shard's
CollModCoordinator; a sharded collection's to every shard holding it).

Facts from the server, and where they were read (mongodb/mongo; the versions the index holds are not
all 8.0's — each one's vintage is said):
- coll_mod.idl (a 6.x version: cappedSize/cappedMax with their validators, collectionUUID; it still
  lists recordPreImages, which SERVER-60919 removed from create and collMod in 6.2; the
  timeseriesBucketsMayHaveMixedSchemaData field is 8.0's, read from 8.0-era jstests and
  timeseries_collmod.cpp): strict, 40415 for any other field; safeInt64 conversions; "BSON field
  'cappedSize' value must be >= 1, actual value '0'" (IDL validators, BadValue, checked before anything
  else; the same answers a mongod 8.2 gave another emulator's tests, seen in the search index);
- catalog/coll_mod.cpp parseCollModRequest (6.x): "Collection must be capped.", the time-series and view
  refusals, "'expireAfterSeconds' option is only supported on collections clustered by _id", "Invalid
  string value for the 'clusteredIndex::expireAfterSeconds' option. Got: 'x'. Accepted value is 'off'";
  index_key_validate.cpp validateExpireAfterSeconds (kClusteredTTLIndex: below 0, above now);
- catalog/collection_options.cpp (6.2+): checkAndAdjustCappedSize no longer rounds to 256 bytes
  (featureFlagCappedCollectionsRelaxedSize, SERVER-67246, 6.2; jstests/core/capped/capped_resize.js
  expects a size of 50 * 1023 back), a cappedMax <= 0 is 2^31 - 1;
- timeseries/timeseries_options.cpp (7.x) isTimeseriesGranularityValidAndUnchanged: only coarser
  granularities ("Invalid transition for timeseries.granularity. ..."), custom bucketing both-or-neither,
  equal, never smaller;
- catalog/collection_uuid_mismatch.cpp (8.x): CollectionUUIDMismatch with db, collectionUUID,
  expectedCollection, actualCollection (null unless the UUID's collection is in the same database);
- s/commands/cluster_collection_mod_cmd.cpp (8.0): "Database does not exist" for a collectionUUID on a
  missing database; s/collmod_coordinator.cpp (8.0 era): 6201808 for bucketing options on a collection
  that is not a time-series one; the reply of a sharded collection's collMod is the first shard's fields,
  `raw` removed (SERVER-84560, 8.0.0-rc0).
"""

from __future__ import annotations

import datetime

import pytest
from bson import Binary, Int64
from pymongo.errors import OperationFailure

from tests.crud.conftest import shard_two_ways


@pytest.fixture
def db(client, request):
    db = client[f"cm_{request.node.name.split('[')[0][-24:]}"]
    client.drop_database(db.name)
    return db


def _options(db, name: str) -> dict:
    return next(c["options"] for c in db.list_collections(filter={"name": name}))


def _refused(db, cmd: dict) -> tuple[int, str]:
    with pytest.raises(OperationFailure) as e:
        db.command(cmd)
    return e.value.code, e.value.details["errmsg"]


def _reply(reply: dict) -> dict:
    return {k: v for k, v in reply.items() if k not in ("$clusterTime", "operationTime")}


@pytest.mark.parametrize("field, value", [
    ("capped", True), ("size", 1000), ("max", 5), ("collation", {"locale": "fr"}), ("storageEngine", {}),
    ("clusteredIndex", {"key": {"_id": 1}, "unique": True}), ("idIndex", {"key": {"_id": 1}, "name": "_id_"}),
    ("temp", True), ("autoIndexId", True), ("indexOptionDefaults", {}), ("recordPreImages", True), ("flags", 1),
    ("encryptedFields", {}), ("isTimeseriesNamespace", True),
])
def test_create_only_options_are_unknown_fields(db, field, value):
    db.create_collection("c", validator={"a": {"$exists": True}})
    assert _refused(db, {"collMod": "c", field: value}) == (40415, f"BSON field 'collMod.{field}' is an unknown field.")
    assert _options(db, "c") == {"validator": {"a": {"$exists": True}}}


@pytest.mark.parametrize("fields, code, message", [
    ({"cappedSize": "x"}, 14,
     "BSON field 'collMod.cappedSize' is the wrong type 'string', expected types '[long, int, decimal, double]'"),
    ({"cappedMax": True}, 14,
     "BSON field 'collMod.cappedMax' is the wrong type 'bool', expected types '[long, int, decimal, double]'"),
    ({"index": 1}, 14, "BSON field 'collMod.index' is the wrong type 'int', expected type 'object'"),
    ({"index": {"name": "a_1", "bogus": 1}}, 40415, "BSON field 'collMod.index.bogus' is an unknown field."),
    ({"expireAfterSeconds": True}, 14, "BSON field 'collMod.expireAfterSeconds' is the wrong type 'bool', expected "
                                       "types '[string, long, int, decimal, double]'"),
    ({"timeseries": 1}, 14, "BSON field 'collMod.timeseries' is the wrong type 'int', expected type 'object'"),
    ({"timeseries": {"granularity": "days"}}, 2,
     "Enumeration value 'days' for field 'collMod.timeseries.granularity' is not a valid value."),
    ({"timeseries": {"bucketMaxSpanSeconds": 0}}, 2, "BSON field 'bucketMaxSpanSeconds' value must be >= 1, actual "
                                                     "value '0'"),
    ({"changeStreamPreAndPostImages": {}}, 40414,
     "BSON field 'collMod.changeStreamPreAndPostImages.enabled' is missing but a required field"),
    ({"collectionUUID": "abc"}, 14, "BSON field 'collMod.collectionUUID' is the wrong type 'string', expected type "
                                    "'binData'"),
    ({"cappedSize": 0}, 2, "BSON field 'cappedSize' value must be >= 1, actual value '0'"),
    ({"cappedSize": -5.5}, 2, "BSON field 'cappedSize' value must be >= 1, actual value '-5'"),
    ({"cappedSize": 2 ** 50 + 1}, 2,
     "BSON field 'cappedSize' value must be <= 1125899906842624, actual value '1125899906842625'"),
    ({"cappedMax": 2 ** 31}, 2, "BSON field 'cappedMax' value must be < 2147483648, actual value '2147483648'"),
])
def test_the_idl_checks_come_first(db, fields, code, message):
    """Even on a collection that is not capped: the IDL parser runs before the command."""
    db.create_collection("c")
    assert _refused(db, {"collMod": "c", **fields}) == (code, message)


def test_a_null_is_no_value(db):
    db.create_collection("c", capped=True, size=5000)
    assert _reply(db.command({"collMod": "c", "cappedSize": None, "validator": None, "index": None})) == {"ok": 1.0}
    assert _options(db, "c") == {"capped": True, "size": 5000}


def test_capped_resize(db):
    """capped_resize.js: more room keeps more documents, less room evicts on the next insert; the size is
    kept as given (no 256-byte rounding in 8.0), a max of 0 or less means no document limit."""
    db.create_collection("c", capped=True, size=25 * 1024, max=2)
    doc = {"key": "a" * 10 * 1024}
    db.c.insert_many([dict(doc) for _ in range(5)])
    assert db.c.count_documents({}) == 2
    assert _reply(db.command("collMod", "c", cappedSize=50 * 1023, cappedMax=4)) == {"ok": 1.0}
    assert _options(db, "c") == {"capped": True, "size": 51150, "max": 4}
    db.c.insert_many([dict(doc) for _ in range(5)])
    assert db.c.count_documents({}) == 4
    db.command("collMod", "c", cappedSize=256)
    db.c.insert_one({"small": 1})
    assert list(db.c.find({}, {"_id": 0})) == [{"small": 1}]
    db.command("collMod", "c", cappedMax=-1, cappedSize=7000.9)
    assert _options(db, "c") == {"capped": True, "size": 7000, "max": 2147483647}
    assert type(_options(db, "c")["size"]) is int
    db.command("collMod", "c", cappedSize=2 ** 40)
    size = _options(db, "c")["size"]
    assert (size, type(size)) == (2 ** 40, Int64)


def test_capped_options_only_on_a_capped_collection(db):
    db.create_collection("plain")
    db.create_collection("ts", timeseries={"timeField": "t"})
    assert _refused(db, {"collMod": "plain", "cappedSize": 5000}) == (72, "Collection must be capped.")
    assert _refused(db, {"collMod": "plain", "cappedMax": 5}) == (72, "Collection must be capped.")
    assert _refused(db, {"collMod": "plain", "cappedSize": 0}) == (
        2, "BSON field 'cappedSize' value must be >= 1, actual value '0'")
    # a time-series collection's buckets collMod does not carry them (makeTimeseriesBucketsCollModCommand)
    assert _reply(db.command("collMod", "ts", cappedSize=5000)) == {"ok": 1.0}
    assert _options(db, "plain") == {}


def test_clustered_expire_after_seconds(db):
    db.create_collection("cl", clusteredIndex={"key": {"_id": 1}, "unique": True, "name": "by_id"})
    db.command("collMod", "cl", expireAfterSeconds=3600)
    opts = _options(db, "cl")
    assert opts == {"clusteredIndex": {"v": 2, "key": {"_id": 1}, "name": "by_id", "unique": True},
                    "expireAfterSeconds": 3600}
    assert type(opts["expireAfterSeconds"]) is Int64
    assert list(opts) == ["clusteredIndex", "expireAfterSeconds"]
    db.command("collMod", "cl", expireAfterSeconds="off")
    db.command("collMod", "cl", expireAfterSeconds="off")  # already off: nothing to do
    assert "expireAfterSeconds" not in _options(db, "cl")
    db.create_collection("plain")
    for target, value, message in [
        ("plain", 10, "'expireAfterSeconds' option is only supported on collections clustered by _id"),
        ("cl", "on", "Invalid string value for the 'clusteredIndex::expireAfterSeconds' option. Got: 'on'. Accepted "
                     "value is 'off'"),
        ("cl", -1, "TTL index 'expireAfterSeconds' option cannot be less than 0"),
        ("cl", 10 ** 11, "TTL index 'expireAfterSeconds' option must be within an acceptable range, try a lower "
                         "number"),
    ]:
        assert _refused(db, {"collMod": target, "expireAfterSeconds": value}) == (72, message)


def test_clustered_ttl_takes_effect(db, client):
    db.create_collection("cl", clusteredIndex={"key": {"_id": 1}, "unique": True})
    old = datetime.datetime(2000, 1, 1)
    db.cl.insert_many([{"_id": old}, {"_id": datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=1)}])
    db.command("collMod", "cl", expireAfterSeconds=60)
    from mongosim.shardsim.ttl_monitor import run_once

    cluster = client.mongosim_cluster
    assert sum(cluster.call(lambda: [run_once(n) for n in _nodes(cluster)]) or [0]) == 1
    assert db.cl.count_documents({}) == 1


def _nodes(cluster):
    core = cluster.core
    return list(core.nodes.values())


def test_time_series_granularity_and_bucketing(db):
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    db.ts.insert_one({"t": datetime.datetime(2024, 1, 1, 0, 0, 10), "m": 1, "v": 1})
    db.command("collMod", "ts", timeseries={"granularity": "minutes"})
    assert _options(db, "ts") == {"timeseries": {"timeField": "t", "metaField": "m", "granularity": "minutes",
                                                 "bucketMaxSpanSeconds": 86400}}
    view = next(c for c in db.list_collections(filter={"name": "system.views"}))
    assert view["type"] == "collection"
    db.command("collMod", "ts", timeseries={"granularity": "minutes"})  # the same: nothing changes
    for mod, message in [
        ({"granularity": "seconds"}, "Invalid transition for timeseries.granularity. Can only transition from "
                                     "'seconds' to 'minutes' or 'minutes' to 'hours'."),
        ({"bucketMaxSpanSeconds": 100000}, "Timeseries 'bucketMaxSpanSeconds' and 'bucketRoundingSeconds' need to be "
                                           "set alongside each other"),
        ({"bucketMaxSpanSeconds": 100000, "bucketRoundingSeconds": 90000},
         "Timeseries 'bucketRoundingSeconds' needs to be equal to 'bucketMaxSpanSeconds'"),
        ({"bucketMaxSpanSeconds": 3000, "bucketRoundingSeconds": 3000},
         "Timeseries 'bucketMaxSpanSeconds' needs to be equal or greater to transition"),
        ({"granularity": "hours", "bucketRoundingSeconds": 86400},
         "Timeseries 'bucketRoundingSeconds' is not configurable alongside the granularity parameter"),
        ({"granularity": "hours", "bucketMaxSpanSeconds": 5},
         "Timeseries 'bucketMaxSpanSeconds' is not configurable to a value other than the default for the provided "
         "granularity"),
    ]:
        assert _refused(db, {"collMod": "ts", "timeseries": mod}) == (72, message)
    db.command("collMod", "ts", timeseries={"bucketMaxSpanSeconds": 100000, "bucketRoundingSeconds": 100000})
    assert _options(db, "ts")["timeseries"] == {"timeField": "t", "metaField": "m", "bucketRoundingSeconds": 100000,
                                                "bucketMaxSpanSeconds": 100000}
    assert _refused(db, {"collMod": "ts", "timeseries": {"granularity": "hours"}}) == (  # (rounding 86400 < 100000)
        72, "Timeseries 'bucketRoundingSeconds' needs to be equal or greater to transition")
    db.command("collMod", "ts", timeseries={"bucketMaxSpanSeconds": 2592000, "bucketRoundingSeconds": 2592000})
    assert _options(db, "ts")["timeseries"]["bucketMaxSpanSeconds"] == 2592000
    db.ts.insert_one({"t": datetime.datetime(2024, 1, 20), "m": 1, "v": 2})
    assert [d["v"] for d in db.ts.find({}, {"_id": 0}).sort("t", 1)] == [1, 2]


def test_time_series_other_options(db):
    db.create_collection("ts", timeseries={"timeField": "t"}, expireAfterSeconds=100)
    db.command("collMod", "ts", expireAfterSeconds=200)
    opts = _options(db, "ts")
    assert list(opts) == ["expireAfterSeconds", "timeseries"] and opts["expireAfterSeconds"] == 200
    db.command("collMod", "ts", expireAfterSeconds="off")
    assert "expireAfterSeconds" not in _options(db, "ts")
    db.command("collMod", "ts", timeseriesBucketsMayHaveMixedSchemaData=True)
    assert _options(db, "ts")["storageEngine"] == {
        "wiredTiger": {"configString": "app_metadata=(timeseriesBucketsMayHaveMixedSchemaData=true)"}}
    for fields, message in [
        ({"validator": {}}, "option not supported on a time-series collection: validator"),
        ({"validationLevel": "off"}, "option not supported on a time-series collection: validationLevel"),
        ({"changeStreamPreAndPostImages": {"enabled": True}},
         "option not supported on a time-series collection: changeStreamPreAndPostImages"),
    ]:
        assert _refused(db, {"collMod": "ts", **fields}) == (72, message)
    db.create_collection("plain")
    assert _refused(db, {"collMod": "plain", "timeseriesBucketsMayHaveMixedSchemaData": True}) == (
        72, "option only supported on a time-series collection: timeseriesBucketsMayHaveMixedSchemaData")


def test_time_series_index_by_its_user_key_pattern(db):
    """An index of a time-series collection is named by the user's key pattern, which collMod translates
    to the bucket index's (timeseries_collmod.cpp makeTimeseriesBucketsCollModCommand); a key pattern
    with no bucket form is IndexNotFound carrying the translation's status and the request."""
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    db.ts.insert_one({"t": datetime.datetime(2024, 1, 1), "m": 1, "v": 1})
    db.ts.create_index([("v", 1)], name="v1")
    reply = db.command("collMod", "ts", index={"keyPattern": {"v": 1}, "hidden": True})
    assert (reply["hidden_old"], reply["hidden_new"]) == (False, True)
    buckets = {i["name"]: i for i in db["system.buckets.ts"].list_indexes()}
    assert buckets["v1"]["key"] == {"control.min.v": 1, "control.max.v": 1} and buckets["v1"]["hidden"] is True
    assert db.command("collMod", "ts", index={"keyPattern": {"m": 1, "t": 1}, "hidden": True})["hidden_new"] is True
    assert _refused(db, {"collMod": "ts", "index": {"keyPattern": {}, "hidden": True}}) == (
        27, 'BadValue: Empty object is not a valid index spec Command request: '
            '{ collMod: "ts", index: { keyPattern: {}, hidden: true }, $db: "%s" }' % db.name)
    assert _refused(db, {"collMod": "ts", "index": {"keyPattern": {"w": 1}, "hidden": True}})[0] == 27


def _uuid(db, name: str) -> Binary:
    return next(c for c in db.list_collections(filter={"name": name}))["info"]["uuid"]


def test_collection_uuid(db, client):
    db.create_collection("a")
    db.create_collection("b")
    db.create_collection("v", viewOn="a", pipeline=[])
    db.create_collection("ts", timeseries={"timeField": "t"})
    a = _uuid(db, "a")
    assert _reply(db.command("collMod", "a", collectionUUID=a, validator={"x": 1})) == {"ok": 1.0}
    for target in ("b", "missing", "v", "ts"):
        with pytest.raises(OperationFailure) as e:
            db.command("collMod", target, collectionUUID=a, validator={"y": 1})
        details = {k: e.value.details[k] for k in ("code", "codeName", "errmsg", "db", "collectionUUID",
                                                   "expectedCollection", "actualCollection")}
        assert details == {"code": 361, "codeName": "CollectionUUIDMismatch",
                           "errmsg": "Collection UUID does not match that specified", "db": db.name,
                           "collectionUUID": a, "expectedCollection": target, "actualCollection": "a"}
    other = client[db.name + "_x"]
    other.create_collection("c")
    with pytest.raises(OperationFailure) as e:
        db.command("collMod", "b", collectionUUID=_uuid(other, "c"))
    assert e.value.code == 361 and e.value.details["actualCollection"] is None
    client.drop_database(other.name)
    assert _options(db, "b") == {} and _options(db, "a") == {"validator": {"x": 1}}


def test_collection_uuid_of_a_missing_database(client):
    db = client.cm_nodb
    client.drop_database(db.name)
    uuid = Binary(b"\x01" * 16, 4)
    with pytest.raises(OperationFailure) as e:
        db.command("collMod", "c", collectionUUID=uuid)
    expected = ("Database does not exist" if client.topology_name == "sharded"
                else "Collection UUID does not match that specified")
    assert (e.value.code, e.value.details["errmsg"]) == (361, expected)
    assert e.value.details["actualCollection"] is None and e.value.details["expectedCollection"] == "c"


def test_index_options_reply_and_unique_conversion_resets_prepare_unique(db):
    db.c.create_index("a")
    db.c.create_index("t", expireAfterSeconds=10)
    reply = _reply(db.command("collMod", "c", index={"name": "a_1", "hidden": True}))
    assert reply == {"hidden_old": False, "hidden_new": True, "ok": 1.0}
    assert _reply(db.command("collMod", "c", index={"name": "a_1", "hidden": True})) == {"ok": 1.0}
    reply = _reply(db.command("collMod", "c", index={"keyPattern": {"t": 1}, "expireAfterSeconds": 20}))
    assert reply == {"expireAfterSeconds_old": 10, "expireAfterSeconds_new": 20, "ok": 1.0}
    reply = _reply(db.command("collMod", "c", index={"name": "a_1", "prepareUnique": True}))
    assert reply == {"prepareUnique_old": False, "prepareUnique_new": True, "ok": 1.0}
    assert _reply(db.command("collMod", "c", index={"name": "a_1", "unique": True})) == {"unique_new": True, "ok": 1.0}
    spec = next(ix for ix in db.c.list_indexes() if ix["name"] == "a_1")
    assert spec.get("unique") is True and "prepareUnique" not in spec
    for index, code, message in [
        ({"name": "a_1", "unique": True, "forceNonUnique": True}, 72,
         "collMod does not support 'unique' and 'forceNonUnique' options at the same time"),
        ({"name": "a_1", "keyPattern": {"a": 1}, "hidden": True}, 72, "Cannot specify both key pattern and name."),
        ({"hidden": True}, 72, "Must specify either index name or key pattern."),
        ({"name": "_id_", "expireAfterSeconds": 5}, 72, "the _id field does not support TTL indexes"),
        ({"name": "t_1", "expireAfterSeconds": -5}, 72, "TTL index 'expireAfterSeconds' option cannot be less than 0"),
    ]:
        assert _refused(db, {"collMod": "c", "index": index}) == (code, message)
    db.c.create_index("b")
    assert _refused(db, {"collMod": "c", "index": {"name": "b_1", "prepareUnique": True}, "validator": {}}) == (
        72, "prepareUnique cannot be combined with any other modification.")
    # (on an index already unique prepareUnique changes nothing, so it is no other modification's rival)
    assert _reply(db.command("collMod", "c", index={"name": "a_1", "prepareUnique": False}, validator={})) == {
        "ok": 1.0}


def test_dry_run(db):
    db.c.insert_many([{"a": 1}, {"a": 1}])
    db.c.create_index("a")
    assert _refused(db, {"collMod": "c", "dryRun": True, "validator": {}}) == (
        72, "dry run mode requires an valid index modification.")
    assert _refused(db, {"collMod": "c", "dryRun": True, "index": {"name": "a_1", "hidden": True}}) == (
        72, "dry run mode requires an index modification with unique: true.")
    assert _refused(db, {"collMod": "c", "dryRun": True, "index": {"name": "a_1", "unique": True, "hidden": True},
                         })[0] == 72
    code, _ = _refused(db, {"collMod": "c", "dryRun": True, "index": {"name": "a_1", "unique": True,
                                                                       "prepareUnique": True}})
    assert code == 72  # (two modifications)
    db.command("collMod", "c", index={"name": "a_1", "prepareUnique": True})
    assert _refused(db, {"collMod": "c", "dryRun": True, "index": {"name": "a_1", "unique": True}})[0] == 359


def test_sharded_collection_is_modified_on_every_shard(sharded_client):
    client = sharded_client
    client.drop_database("s")
    shard_two_ways(client, "s.c")
    db = client.s
    db.c.insert_many([{"_id": 1, "k": 1}, {"_id": 2, "k": 200}])
    db.c.create_index("x")
    reply = _reply(db.command("collMod", "c", index={"name": "x_1", "hidden": True}, validator={"k": {"$lt": 1000}}))
    assert reply == {"hidden_old": False, "hidden_new": True, "ok": 1.0}  # (the primary shard's: no raw)
    cluster = client.mongosim_cluster
    for shard in ("shard00", "shard01"):
        node = cluster.core.nodes[shard]
        coll = node.catalog.collection("s", "c")
        assert coll.options == {"validator": {"k": {"$lt": 1000}}}
        assert coll.index("x_1")["hidden"] is True
    with pytest.raises(OperationFailure) as e:
        db.c.insert_one({"_id": 3, "k": 5000})
    assert e.value.code == 121
    assert _refused(db, {"collMod": "c", "timeseries": {"granularity": "hours"}}) == (
        6201808, "Cannot use time-series options for a non-timeseries collection")
    assert _refused(db, {"collMod": "c", "cappedSize": 100}) == (72, "Collection must be capped.")


def test_modify_events_through_pymongo(db, client):
    """A database stream with showExpandedEvents sees the capped resize as a `modify` event: the entry's
    `o` without `collMod` (longs, as logged) and the options before it."""
    db.create_collection("c", capped=True, size=4096)
    with db.watch(show_expanded_events=True) as stream:
        db.command("collMod", "c", cappedSize=2000, cappedMax=7)
        db.other.insert_one({"_id": 1})
        events = [stream.next() for _ in range(3)]
    modify = events[0]
    assert (modify["operationType"], modify["ns"]) == ("modify", {"db": db.name, "coll": "c"})
    assert modify["operationDescription"] == {"cappedSize": 2000, "cappedMax": 7}
    assert all(type(v) is Int64 for v in modify["operationDescription"].values())
    assert modify["stateBeforeChange"] == {"collectionOptions": {"uuid": _uuid(db, "c"), "capped": True, "size": 4096}}
    assert [e["operationType"] for e in events[1:]] == ["create", "insert"]


def test_a_sharded_collections_modify_events_through_pymongo(sharded_client):
    client = sharded_client
    client.drop_database("s")
    shard_two_ways(client, "s.c")
    db = client.s
    with db.c.watch(show_expanded_events=True) as stream:
        db.command("collMod", "c", validationLevel="moderate")
        db.c.insert_one({"_id": 1, "k": 1})
        events = [stream.next() for _ in range(3)]
    assert [e["operationType"] for e in events] == ["modify", "modify", "insert"]
    assert all(e["operationDescription"] == {"validationLevel": "moderate"} for e in events[:2])


# -- create: 8.0's create.idl is strict too; recordPreImages left it with SERVER-60919 -------------------
def test_create_refuses_record_pre_images(db, client):
    assert _refused(db, {"create": "c", "recordPreImages": True}) == (
        40415, "BSON field 'create.recordPreImages' is an unknown field.")
    assert _refused(db, {"create": "c", "recordPreImages": False, "capped": True, "size": 4096}) == (
        40415, "BSON field 'create.recordPreImages' is an unknown field.")
    assert db.name not in client.list_database_names()  # (refused as parsed: mongos creates no database)
    # the fields 8.0's create still has
    db.command({"create": "c", "temp": False, "flags": 1, "autoIndexId": True, "indexOptionDefaults": {},
                "storageEngine": {}, "changeStreamPreAndPostImages": {"enabled": True}})
    assert _options(db, "c")["changeStreamPreAndPostImages"] == {"enabled": True}
