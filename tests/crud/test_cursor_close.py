"""When a cursor closes (its id 0): as the 8.0 server decides, seen by a driver's command monitoring.

A batch is filled by asking for the next document until it is full; the cursor closes when an ask
found nothing (the batch is not full), or, on a shard or replica set member, when the executor is at
EOF with the batch's last document (`exec->isEOF()`).  A scan, a blocking SORT and a pipeline learn
they are done only by trying past the end; a LIMIT that returned its n, a multi-planned winner that
ended in the trial, a list command's queued documents are at EOF at once.  mongos closes only when a
`next()` found nothing.
"""

from __future__ import annotations

import pymongo
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo import monitoring


class Getmores(monitoring.CommandListener):
    """The getMore and killCursors commands a client sends, and each reply's cursor."""

    def __init__(self) -> None:
        self.get_mores = 0
        self.kills = 0
        self.cursors: list[dict] = []

    def started(self, event) -> None:
        if event.command_name == "getMore":
            self.get_mores += 1
        elif event.command_name == "killCursors":
            self.kills += 1

    def succeeded(self, event) -> None:
        cur = event.reply.get("cursor")
        if isinstance(cur, dict):
            self.cursors.append(cur)

    def failed(self, event) -> None:
        pass


def _watched(client):
    listener = Getmores()
    return pymongo.MongoClient(client.mongosim_cluster.uri, event_listeners=[listener]), listener


def _load(client, n: int, name: str = "c"):
    coll = client.cursorclose[name]
    coll.drop()
    if n:
        coll.insert_many([{"_id": i, "a": i, "b": n - i} for i in range(n)])
    return coll


def test_exactly_full_last_batch_of_a_plain_find_stays_open(client):
    _load(client, 6)
    cl, seen = _watched(client)
    with cl:
        docs = list(cl.cursorclose.c.find({}).batch_size(3))
    assert len(docs) == 6
    # a COLLSCAN is not at EOF after its last document: a second getMore answers nothing and closes
    assert seen.get_mores == 2
    assert seen.cursors[1]["id"] != 0 and len(seen.cursors[1]["nextBatch"]) == 3
    assert seen.cursors[-1]["id"] == 0 and seen.cursors[-1]["nextBatch"] == []
    assert seen.kills == 0


def test_a_batch_short_of_full_closes_with_the_last_document(client):
    _load(client, 7)
    cl, seen = _watched(client)
    with cl:
        assert len(list(cl.cursorclose.c.find({}).batch_size(3))) == 7
    assert seen.get_mores == 2
    assert seen.cursors[-1]["id"] == 0 and len(seen.cursors[-1]["nextBatch"]) == 1


def test_a_blocking_sort_is_not_at_eof_with_its_last_document(client):
    # (SortStage::isEOF is its SortExecutor's, set only when an unspool finds nothing more)
    _load(client, 6)
    cl, seen = _watched(client)
    with cl:
        docs = list(cl.cursorclose.c.find({}).sort("b", 1).batch_size(3))
    assert [d["b"] for d in docs] == [1, 2, 3, 4, 5, 6]
    assert seen.get_mores == 2
    assert seen.cursors[-1]["id"] == 0 and seen.cursors[-1]["nextBatch"] == []


def test_a_find_whose_limit_ends_on_a_batch_boundary(client):
    _load(client, 10)
    cl, seen = _watched(client)
    with cl:
        docs = list(cl.cursorclose.c.find({}).limit(6).batch_size(3))
    assert len(docs) == 6
    assert seen.get_mores == 1
    if client.topology_name == "replset":
        # the LIMIT returned its 6: the executor is at EOF, the getMore's reply closes the cursor
        assert seen.cursors[-1]["id"] == 0 and seen.kills == 0
    else:
        # mongos's RouterStageLimit says EOF only when asked once more: the cursor stays open, and the
        # driver, at its limit, kills it
        assert seen.cursors[-1]["id"] != 0 and seen.kills == 1


def test_a_multi_planned_winner_that_ended_in_the_trial(client):
    coll = _load(client, 6)
    coll.create_index("a")
    coll.create_index("b")
    cl, seen = _watched(client)
    with cl:
        docs = list(cl.cursorclose.c.find({"a": {"$gte": 0}, "b": {"$gte": 0}}).batch_size(3))
    assert len(docs) == 6
    if client.topology_name == "replset":
        # the MultiPlanStage buffered the winner's every result: at EOF once they are handed out
        assert seen.get_mores == 1 and seen.cursors[-1]["id"] == 0
    else:
        assert seen.get_mores == 2 and seen.cursors[-1]["nextBatch"] == []


def test_an_aggregate_exactly_full_stays_open(client):
    _load(client, 6)
    cl, seen = _watched(client)
    with cl:
        docs = list(cl.cursorclose.c.aggregate([{"$match": {}}], batchSize=3))
    assert len(docs) == 6
    assert seen.get_mores == 2
    assert seen.cursors[-1]["id"] == 0 and seen.cursors[-1]["nextBatch"] == []


def test_a_first_batch_of_zero_keeps_the_cursor_of_a_scan(client):
    _load(client, 2)
    db = client.cursorclose
    assert db.command({"find": "c", "batchSize": 0})["cursor"]["id"] != 0
    if client.topology_name == "replset":
        # no collection: an EOF plan, at EOF before anything is asked
        assert db.command({"find": "nothere", "batchSize": 0})["cursor"]["id"] == 0


def _rule(total: int, k: int, eof_with_last: bool) -> int:
    """The getMores of batches of `k` over `total` results: a batch closes the cursor when it is not
    full, or when the executor is at EOF with the last document."""
    left = total
    get_mores = -1
    while True:
        taken = min(k, left)
        left -= taken
        if taken < k or (eof_with_last and left == 0):
            return get_mores + 1
        get_mores += 1


PLANS = ("collscan", "sort", "limit", "multiplan", "aggregate")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(0, 10), k=st.integers(1, 4), plan=st.sampled_from(PLANS), lim=st.integers(1, 8))
def test_get_mores_follow_the_servers_rule(client, n, k, plan, lim):
    coll = _load(client, n, "p")
    if plan == "multiplan":
        coll.create_index("a")
        coll.create_index("b")
    db = client.cursorclose
    if plan == "aggregate":
        reply = db.command({"aggregate": "p", "pipeline": [{"$match": {}}], "cursor": {"batchSize": k}})
    else:
        cmd: dict = {"find": "p", "batchSize": k}
        if plan == "sort":
            cmd["sort"] = {"b": 1}
        elif plan == "limit":
            cmd["limit"] = lim
        elif plan == "multiplan":
            cmd["filter"] = {"a": {"$gte": 0}, "b": {"$gte": 0}}
        reply = db.command(cmd)
    got = len(reply["cursor"]["firstBatch"])
    cid = reply["cursor"]["id"]
    get_mores = 0
    while cid:
        more = db.command({"getMore": cid, "collection": "p", "batchSize": k})
        get_mores += 1
        got += len(more["cursor"]["nextBatch"])
        cid = more["cursor"]["id"]
    total = min(n, lim) if plan == "limit" else n
    assert got == total
    on_mongod = client.topology_name == "replset"
    eof_with_last = on_mongod and ((plan == "limit" and n >= lim) or plan == "multiplan")
    assert get_mores == _rule(total, k, eof_with_last)


def test_list_commands_close_with_their_last_document(client):
    # (listCollections and listIndexes queue their documents up front: exec->isEOF() with the last one)
    db = client.cursorclose
    db.drop_collection("c")
    for name in ("x", "y"):
        db[name].insert_one({"a": 1})
    db.x.create_index("a")
    names = [c["name"] for c in db.command({"listCollections": 1, "cursor": {"batchSize": 2}})["cursor"]["firstBatch"]]
    assert sorted(names) == ["x", "y"]
    assert db.command({"listCollections": 1, "cursor": {"batchSize": 2}})["cursor"]["id"] == 0
    reply = db.command({"listIndexes": "x", "cursor": {"batchSize": 2}})["cursor"]
    assert len(reply["firstBatch"]) == 2 and reply["id"] == 0
    first = db.command({"listIndexes": "x", "cursor": {"batchSize": 1}})["cursor"]
    more = db.command({"getMore": first["id"], "collection": "$cmd.listIndexes.x", "batchSize": 1})["cursor"]
    assert len(more["nextBatch"]) == 1 and more["id"] == 0


def test_an_aggregate_the_query_absorbs_answers_getmores_as_its_plan(replset_client):
    # (every stage absorbed by the query layer: the plan's executor answers alone — canOptimizeAwayPipeline
    # — its first batch closes only when an ask found nothing, its getMores when the plan is at EOF: here a
    # multi-planned winner that ended in its trial)
    coll = _load(replset_client, 6)
    coll.create_index("a")
    coll.create_index("b")
    both = {"a": {"$gte": 0}, "b": {"$gte": 0}}
    db = replset_client.cursorclose
    first = db.command({"aggregate": "c", "pipeline": [{"$match": both}], "cursor": {"batchSize": 6}})["cursor"]
    assert len(first["firstBatch"]) == 6 and first["id"] != 0
    more = db.command({"getMore": first["id"], "collection": "c"})["cursor"]
    assert more["nextBatch"] == [] and more["id"] == 0
    cl, seen = _watched(replset_client)
    with cl:
        assert len(list(cl.cursorclose.c.aggregate([{"$match": both}], batchSize=3))) == 6
        assert seen.get_mores == 1 and seen.cursors[-1]["id"] == 0
        # a stage the query does not absorb keeps the pipeline: at EOF only once asked past the end
        assert len(list(cl.cursorclose.c.aggregate([{"$match": both}, {"$skip": 0}, {"$count": "n"}],
                                                   batchSize=1))) == 1
    assert seen.get_mores == 2 and seen.cursors[-1]["nextBatch"] == []
