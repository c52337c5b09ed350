"""mapReduce and $where on a deployment started without a script engine (`--noscripting`:
shardsim.javascript.engine.ENABLED off), and checkMetadataConsistency through mongos."""

from __future__ import annotations

import pytest
from bson import Code
from pymongo.errors import OperationFailure

from mongosim.shardsim.javascript import engine

MAP = Code("function inc() { return emit(0, this.x + 1) }")
REDUCE = Code("function sum(key, values) { return values.reduce((acc, x) => acc + x); }")


@pytest.fixture
def db(client, request):
    db = client[f"js_{request.node.name.split('[')[0][-24:]}"]
    client.drop_database(db.name)
    return db


@pytest.fixture
def noscripting(monkeypatch):
    monkeypatch.setattr(engine, "ENABLED", False)


def test_map_reduce_over_no_documents_answers_as_the_server(db, noscripting):
    reply = db.command("mapReduce", "c", map=MAP, reduce=REDUCE, out={"inline": 1})
    assert reply["results"] == [] and reply["ok"] == 1.0
    assert db.command("mapReduce", "c", map=MAP, reduce=REDUCE, out="res")["result"] == "res"
    assert "res" in db.list_collection_names()
    assert db.command("mapReduce", "c", map=MAP, reduce=REDUCE, out={"replace": "r2", "db": db.name})["result"] == \
        {"db": db.name, "collection": "r2"}


def test_map_reduce_needs_the_javascript_engine_for_its_first_document(db, noscripting):
    db.c.insert_many([{"_id": 1, "x": 0}, {"_id": 2, "x": 1}])
    with pytest.raises(OperationFailure) as e:
        db.command("mapReduce", "c", map=MAP, reduce=REDUCE, out={"inline": 1})
    assert (e.value.code, e.value.details["codeName"]) == (31246, "Location31246")
    assert "Cannot run server-side javascript without the javascript engine enabled" in str(e.value)
    assert db.command("mapReduce", "c", map=MAP, reduce=REDUCE, out={"inline": 1}, query={"x": 5})["results"] == []


def test_map_reduce_shape_errors(db):
    with pytest.raises(OperationFailure) as e:
        db.command("mapReduce", "c", map=MAP, reduce=REDUCE)
    assert e.value.code == 40414 and "'MapReduceCommandRequest.out' is missing" in str(e.value)
    with pytest.raises(OperationFailure) as e:
        db.command("mapReduce", "c", map=MAP, reduce=REDUCE, out={"inline": 1}, bogus=1)
    assert e.value.code == 40415
    with pytest.raises(OperationFailure) as e:
        db.command("mapReduce", "c", map=MAP, reduce=REDUCE, out={"inline": 1}, **{"$_reduced": True})
    assert e.value.code == 40415


def test_where_is_refused_when_parsed(db, noscripting):
    db.other.insert_one({})  # (the database exists: mongos asks its primary shard, which parses the filter)
    with pytest.raises(OperationFailure) as e:
        db.c.find_one({"$where": "this.x == 1"})  # even on a collection that does not exist
    assert (e.value.code, str(e.value).split(",")[0]) == (6108304, "no globalScriptEngine in $where parsing")


def test_check_metadata_consistency(sharded_client):
    db = sharded_client.js_metadata
    sharded_client.drop_database(db.name)
    sharded_client.admin.command("enableSharding", db.name, primaryShard="shard00")
    db.good.insert_one({"_id": 1})
    reply = db.command("checkMetadataConsistency")
    assert reply["cursor"] == {"firstBatch": [], "id": 0, "ns": f"{db.name}.$cmd.aggregate"}
    cluster = sharded_client.mongosim_cluster
    node = cluster.core.nodes["shard01"]
    cluster.call(node.run_command, db.name, {"create": "stray"})  # behind the router's back
    [found] = db.command("checkMetadataConsistency")["cursor"]["firstBatch"]
    assert found["type"] == "MisplacedCollection"
    assert found["details"]["namespace"] == f"{db.name}.stray" and found["details"]["shard"] == "shard01"
    assert sharded_client.admin.command("checkMetadataConsistency")["cursor"]["firstBatch"] == [found]
    assert db.command("checkMetadataConsistency", "good")["cursor"]["firstBatch"] == []


def test_build_info_names_the_engine_built_in_with_or_without_scripting(client, monkeypatch):
    """buildInfo.javascriptEngine is a build-time string: "mozjs", also under --noscripting."""
    assert client.admin.command("buildInfo")["javascriptEngine"] == "mozjs"
    monkeypatch.setattr(engine, "ENABLED", False)
    assert client.admin.command("buildInfo")["javascriptEngine"] == "mozjs"
