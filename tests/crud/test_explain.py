"""explain through pymongo, both topologies: the server's shapes at each verbosity, for every
explainable command, and mongos's wrapper (SINGLE_SHARD / SHARD_MERGE / SHARD_MERGE_SORT)."""

from __future__ import annotations

import pytest
from pymongo.errors import OperationFailure

QP_FIELDS = ["namespace", "parsedQuery", "indexFilterSet", "queryHash", "planCacheKey", "optimizationTimeMillis",
             "maxIndexedOrSolutionsReached", "maxIndexedAndSolutionsReached", "maxScansToExplodeReached",
             "prunedSimilarIndexes", "winningPlan", "rejectedPlans"]
IXSCAN_FIELDS = ["stage", "keyPattern", "indexName", "isMultiKey", "multiKeyPaths", "isUnique", "isSparse",
                 "isPartial", "indexVersion", "direction", "indexBounds"]
STATS = ["nReturned", "executionTimeMillisEstimate", "works", "advanced", "needTime", "needYield", "saveState",
         "restoreState", "isEOF"]


@pytest.fixture
def coll(client, request):
    db = client[f"ex_{request.node.name.split('[')[0][-24:]}"]
    client.drop_database(db.name)
    db.c.insert_many([{"_id": i, "a": i % 4, "b": i} for i in range(20)])
    db.c.create_index("a")
    db.c.create_index([("a", 1), ("b", 1)])
    return db.c


def is_sharded(client) -> bool:
    return client.admin.command("hello").get("msg") == "isdbgrid"


def shard_explain(client, ex: dict) -> tuple[dict, dict | None]:
    """(the node's queryPlanner, its executionStats) whatever the topology; checks mongos's wrapper."""
    if not is_sharded(client):
        assert ex["explainVersion"] == "1"
        return ex["queryPlanner"], ex.get("executionStats")
    qp = ex["queryPlanner"]
    assert qp["mongosPlannerVersion"] == 1 and qp["winningPlan"]["stage"] == "SINGLE_SHARD"
    shard = qp["winningPlan"]["shards"][0]
    assert list(shard)[:4] == ["explainVersion", "shardName", "connectionString", "serverInfo"]
    assert shard["connectionString"].startswith(shard["shardName"] + "/")
    stats = None
    if "executionStats" in ex:
        es = ex["executionStats"]
        assert es["executionStages"]["stage"] == "SINGLE_SHARD"
        stats = es["executionStages"]["shards"][0]
        assert stats["shardName"] == shard["shardName"] and es["nReturned"] == stats["nReturned"]
    return {k: v for k, v in shard.items() if k in QP_FIELDS}, stats


def test_find_explain_at_each_verbosity(client, coll):
    cmd = {"find": "c", "filter": {"a": 2, "b": {"$gt": 5}}}
    ex = coll.database.command("explain", cmd, verbosity="queryPlanner")
    qp, es = shard_explain(client, ex)
    assert list(qp) == QP_FIELDS and es is None and "executionStats" not in ex
    assert qp["parsedQuery"] == {"$and": [{"a": {"$eq": 2}}, {"b": {"$gt": 5}}]}
    win = qp["winningPlan"]
    assert win["isCached"] is False and win["stage"] == "FETCH" and "filter" not in win
    ix = win["inputStage"]
    assert list(ix) == IXSCAN_FIELDS and ix["indexName"] == "a_1_b_1"
    assert ix["indexBounds"] == {"a": ["[2, 2]"], "b": ["(5, inf.0]"]}
    rejected = qp["rejectedPlans"][0]
    assert rejected["inputStage"]["indexName"] == "a_1" and rejected["filter"] == {"b": {"$gt": 5}}
    for k in ("serverInfo", "serverParameters", "command", "queryShapeHash"):
        assert k in ex
    assert ex["command"]["find"] == "c" and ex["command"]["$db"] == coll.database.name

    ex = coll.database.command("explain", cmd, verbosity="executionStats")
    _qp, es = shard_explain(client, ex)
    assert es["executionSuccess"] is True and es["nReturned"] == 4  # b in 6, 10, 14, 18
    assert es["totalKeysExamined"] == 4 and es["totalDocsExamined"] == 4
    stages = es["executionStages"]
    assert stages["stage"] == "FETCH" and [k for k in stages if k in STATS] == STATS
    assert stages["docsExamined"] == 4 and stages["inputStage"]["keysExamined"] == 4
    assert "allPlansExecution" not in es

    ex = coll.database.command("explain", cmd)  # default: allPlansExecution
    _qp, es = shard_explain(client, ex)
    plans = es["allPlansExecution"]
    assert len(plans) == 2 and [list(p)[:5] for p in plans] == [
        ["nReturned", "executionTimeMillisEstimate", "totalKeysExamined", "totalDocsExamined", "score"]] * 2
    assert plans[0]["score"] >= plans[1]["score"]
    if is_sharded(client):
        assert ex["executionStats"]["allPlansExecution"][0]["shardName"]


def test_cursor_explain_from_pymongo(client, coll):
    ex = coll.find({"a": 1}).sort("b", -1).limit(2).explain()
    qp, es = shard_explain(client, ex)
    stages = []
    plan = qp["winningPlan"]
    while plan:
        stages.append(plan["stage"])
        plan = plan.get("inputStage")
    assert stages == ["LIMIT", "FETCH", "IXSCAN"]  # {a: 1, b: 1} backward gives the order: no SORT
    assert es["nReturned"] == 2
    ex = coll.find({"_id": 3}).explain()
    qp, es = shard_explain(client, ex)
    assert qp["winningPlan"] == {"isCached": False, "stage": "EXPRESS_IXSCAN", "keyPattern": "{ _id: 1 }",
                                 "indexName": "_id_"}
    assert es["executionStages"]["keysExamined"] == 1 and es["executionStages"]["docsExamined"] == 1
    qp, _es = shard_explain(client, coll.find({"b": 3}, {"b": 1, "_id": 0}).explain())
    assert qp["winningPlan"]["stage"] == "PROJECTION_SIMPLE" and qp["winningPlan"]["transformBy"] == {"b": 1, "_id": 0}
    assert qp["winningPlan"]["inputStage"]["stage"] == "COLLSCAN"


def test_count_distinct_update_delete_explain(client, coll):
    db = coll.database
    qp, es = shard_explain(client, db.command("explain", {"count": "c", "query": {"a": {"$gte": 2}}},
                                              verbosity="executionStats"))
    assert qp["winningPlan"]["stage"] == "COUNT" and qp["winningPlan"]["inputStage"]["stage"] == "COUNT_SCAN"
    assert es["executionStages"]["nCounted"] == 10
    qp, _ = shard_explain(client, db.command("explain", {"count": "c"}, verbosity="queryPlanner"))
    assert qp["winningPlan"]["stage"] == "RECORD_STORE_FAST_COUNT"
    qp, _ = shard_explain(client, db.command("explain", {"distinct": "c", "key": "b", "query": {"a": 3}},
                                             verbosity="queryPlanner"))
    assert qp["winningPlan"]["stage"] == "FETCH"
    qp, es = shard_explain(client, db.command("explain", {"update": "c", "updates": [
        {"q": {"a": 1}, "u": {"$set": {"x": 1}}, "multi": True}]}, verbosity="executionStats"))
    assert qp["winningPlan"]["stage"] == "UPDATE" and qp["winningPlan"]["inputStage"]["stage"] == "FETCH"
    assert es["executionStages"]["nMatched"] == 5 and es["executionStages"]["nWouldModify"] == 5
    assert coll.count_documents({"x": 1}) == 0  # explained, not run
    qp, es = shard_explain(client, db.command("explain", {"delete": "c", "deletes": [{"q": {"_id": 4}, "limit": 1}]},
                                              verbosity="executionStats"))
    assert qp["winningPlan"]["stage"] == "EXPRESS_DELETE" and coll.count_documents({}) == 20
    with pytest.raises(OperationFailure) as e:
        db.command("explain", {"update": "c", "updates": [{"q": {}, "u": {}}, {"q": {}, "u": {}}]})
    assert e.value.code == 16  # InvalidLength: explained write batches must be of size 1


def test_aggregate_explain(client, coll):
    db = coll.database
    ex = db.command("aggregate", "c", pipeline=[{"$match": {"a": 2}}, {"$group": {"_id": "$a", "n": {"$sum": 1}}}],
                    explain=True)
    if is_sharded(client):
        assert ex["splitPipeline"] is None
        ex = next(iter(ex["shards"].values()))
    cursor = ex["stages"][0]["$cursor"]
    assert cursor["queryPlanner"]["winningPlan"]["inputStage"]["indexName"] == "a_1"
    assert ex["stages"][1] == {"$group": {"_id": "$a", "n": {"$sum": 1}}}
    ex = db.command("explain", {"aggregate": "c", "pipeline": [{"$match": {"a": 2}}], "cursor": {}},
                    verbosity="executionStats")
    if is_sharded(client):
        ex = next(iter(ex["shards"].values()))
    assert ex["queryPlanner"]["winningPlan"]["stage"] == "FETCH" and ex["executionStats"]["nReturned"] == 5


def test_explain_errors(client, coll):
    db = coll.database
    with pytest.raises(OperationFailure) as e:
        db.command("explain", {"find": "c"}, verbosity="everything")
    assert e.value.code == 9
    with pytest.raises(OperationFailure) as e:
        db.command("explain", {"frobnicate": "c"})
    assert e.value.code == 59
    ex = db.command("explain", {"find": "nothere", "filter": {"a": 1}}, verbosity="queryPlanner")
    qp, _ = shard_explain(client, ex) if not is_sharded(client) else (ex["queryPlanner"]["winningPlan"]["shards"][0],
                                                                        None)
    assert qp["winningPlan"]["stage"] == "EOF"


def test_sharded_merge_stages(client, coll):
    if not is_sharded(client):
        pytest.skip("mongos's merge stages: the sharded topology only")
    db = coll.database
    client.admin.command("enableSharding", db.name)
    client.admin.command("shardCollection", f"{db.name}.s", key={"k": 1})
    client.admin.command("split", f"{db.name}.s", middle={"k": 10})
    shards = sorted(s["_id"] for s in client.config.shards.find())
    owner = client.config.chunks.find_one({"min.k": 10})["shard"]
    client.admin.command("moveChunk", f"{db.name}.s", find={"k": 10}, to=next(s for s in shards if s != owner))
    db.s.insert_many([{"k": i, "v": i % 3} for i in range(20)])
    db.s.create_index("v")
    ex = db.s.find({"v": 1}).explain()
    assert ex["queryPlanner"]["winningPlan"]["stage"] == "SHARD_MERGE"
    shard_plans = ex["queryPlanner"]["winningPlan"]["shards"]
    assert len(shard_plans) == 2
    assert all(p["winningPlan"]["stage"] == "SHARDING_FILTER" for p in shard_plans)
    assert ex["executionStats"]["nReturned"] == 7
    ex = db.s.find({"v": 1}).sort("k", 1).skip(1).limit(3).explain()
    assert ex["queryPlanner"]["winningPlan"]["stage"] == "SHARD_MERGE_SORT"
    st = ex["executionStats"]["executionStages"]
    assert st["limitAmount"] == 3 and st["skipAmount"] == 1 and ex["executionStats"]["nReturned"] == 3
    assert db.s.find({"k": 3}).explain()["queryPlanner"]["winningPlan"]["stage"] == "SINGLE_SHARD"


def test_change_stream_explain_still_answers(client, coll):
    if not is_sharded(client):
        pytest.skip("the router's split-pipeline explain")
    ex = coll.database.command("explain", {"aggregate": "c", "pipeline": [{"$changeStream": {}}], "cursor": {}})
    assert ex["mergeType"] == "router" and ex["splitPipeline"]["mergerPart"][0]["$mergeCursors"]
