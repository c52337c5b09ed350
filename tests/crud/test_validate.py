"""`validate` through pymongo in both topologies: the report's fields and counts, the server's errors,
and a mongos's report of every shard holding the collection."""

from __future__ import annotations

import pytest
from pymongo.errors import OperationFailure

from tests.crud.conftest import shard_two_ways

FIELDS = ["valid", "repaired", "repairMode", "ns", "uuid", "warnings", "errors", "extraIndexEntries",
          "missingIndexEntries", "nInvalidDocuments", "nNonCompliantDocuments", "nrecords", "corruptRecords",
          "nIndexes", "keysPerIndex", "indexDetails", "ok"]


def _shard_report(reply: dict) -> dict:
    """The one shard's report (a mongos adds `raw` after it for an unsharded collection)."""
    return {k: v for k, v in reply.items() if k not in ("raw", "operationTime", "$clusterTime")}


def test_report_of_a_collection(client):
    client.drop_database("val")
    c = client.val.c
    c.insert_many([{"_id": i, "tags": [i, i + 1], **({"s": i} if i % 2 else {})} for i in range(6)])
    c.create_index("tags")
    c.create_index("s", sparse=True)
    reply = client.val.command("validate", "c", full=True)
    report = _shard_report(reply)
    assert list(report) == FIELDS
    assert (report["valid"], report["repaired"], report["repairMode"], report["ns"]) == (True, False, "None", "val.c")
    assert report["uuid"] == client.val.command("listCollections", filter={"name": "c"})["cursor"]["firstBatch"][0]["info"]["uuid"]
    assert (report["nrecords"], report["nInvalidDocuments"], report["nIndexes"]) == (6, 0, 3)
    assert report["keysPerIndex"] == {"_id_": 6, "s_1": 3, "tags_1": 12}  # multikey: 2 keys a document; sparse: 3
    assert report["indexDetails"]["s_1"] == {"valid": True, "spec": {"v": 2, "key": {"s": 1}, "name": "s_1", "sparse": True}}
    if client.topology_name == "sharded":
        assert len(reply["raw"]) == 1  # (its one shard, by name)


def test_documents_the_validator_rejects(client):
    client.drop_database("val")
    c = client.val.c
    c.insert_many([{"_id": 1, "x": "a"}, {"_id": 2, "x": 1}, {"_id": 3, "x": 2}])
    client.val.command("collMod", "c", validator={"x": {"$type": "string"}}, validationLevel="moderate")
    report = _shard_report(client.val.command("validate", "c"))
    assert report["nNonCompliantDocuments"] == 2 and report["valid"] is True
    assert report["warnings"] == ["Detected one or more documents not compliant with the collection's schema. "
                                  "Check logs for log id 5363500."]


@pytest.mark.parametrize("options, message", [
    ({"full": True, "background": True},
     "Running the validate command with both { background: true } and { full: true } is not supported."),
    ({"repair": True}, "Running the validate command with { repair: true } can only be performed in standalone mode."),
    ({"metadata": True, "full": True},
     "Running the validate command with { metadata: true } is not supported with any other options"),
])
def test_refused_options(client, options, message):
    client.drop_database("val")
    client.val.c.insert_one({"_id": 1})
    with pytest.raises(OperationFailure) as info:
        client.val.command({"validate": "c", **options})
    assert (info.value.code, info.value.details["errmsg"]) == (72, message)


def test_missing_collection_and_view(client):
    client.drop_database("val")
    client.val.c.insert_one({"_id": 1})
    with pytest.raises(OperationFailure) as info:
        client.val.command("validate", "nope")
    assert (info.value.code, info.value.details["errmsg"]) == (26, "Collection 'val.nope' does not exist to validate.")
    client.val.command("create", "v", viewOn="c", pipeline=[])
    with pytest.raises(OperationFailure) as info:
        client.val.command("validate", "v")
    assert info.value.code == 166


def test_a_sharded_collection_through_mongos(sharded_client):
    sharded_client.drop_database("s")
    shard_two_ways(sharded_client)
    sharded_client.s.c.insert_many([{"k": 1}, {"k": 2}, {"k": 150}])
    reply = sharded_client.s.command("validate", "c")
    assert reply["valid"] is True and set(reply["raw"]) == {"shard00", "shard01"}
    assert [reply["raw"][s]["nrecords"] for s in ("shard00", "shard01")] == [2, 1]
    assert list(reply)[:2] == ["valid", "raw"]
