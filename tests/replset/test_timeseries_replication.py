"""Secondaries apply time-series writes and indexes as the primary wrote them, and read the same.

The buckets collection's entries: inserts and `$v: 2` updates of buckets, the replacement or
delete of a bucket a delete rewrote, one `applyOps` entry without a session per bucket an update
rewrote, an internal transaction's `applyOps` (a child session) for a retryable update, and the
createIndexes entries of the translated indexes (shardsim/timeseries_modify.py).
"""

from __future__ import annotations

import datetime
import uuid

from bson import Binary, Int64

from tests.replset.conftest import member_client, member_state, secondary_read, settle

T0 = datetime.datetime(2024, 1, 1)


async def test_secondaries_converge_on_time_series_writes(rs3, autojump_clock):
    core, c = rs3
    rs = core.replica_sets["shard00"]
    await c.command("t", {"create": "w", "timeseries": {"timeField": "time", "metaField": "tag"}})
    await c.command("t", {"createIndexes": "w", "indexes": [{"key": {"x": 1}, "name": "x_1"}]})
    await c.insert("t", "w", [{"_id": i, "time": T0 + datetime.timedelta(minutes=i), "tag": i % 3, "x": i}
                              for i in range(30)])
    await c.command("t", {"update": "w", "updates": [{"q": {"x": {"$gte": 20}}, "u": {"$inc": {"x": 100}},
                                                      "multi": True}]})
    await c.command("t", {"delete": "w", "deletes": [{"q": {"x": {"$lt": 5}}, "limit": 0}]})
    await c.command("t", {"delete": "w", "deletes": [{"q": {"tag": 2}, "limit": 0}]})
    session = {"lsid": {"id": Binary(uuid.uuid4().bytes, 4)}, "txnNumber": Int64(1)}
    reply = await c.command("t", {"update": "w", "updates": [
        {"q": {"_id": 7}, "u": {"$set": {"tag": 5}}},
        {"q": {"tag": 9, "time": T0}, "u": {"$set": {"x": -1}}, "upsert": True}], **session})
    assert reply["n"] == 2 and reply["nModified"] == 1 and reply["upserted"][0]["index"] == 1
    again = await c.command("t", {"update": "w", "updates": [
        {"q": {"_id": 7}, "u": {"$set": {"tag": 5}}},
        {"q": {"tag": 9, "time": T0}, "u": {"$set": {"x": -1}}, "upsert": True}], **session})
    assert again["n"] == 2 and again["upserted"] == reply["upserted"]  # (answered from the session)
    await settle(rs)
    primary = member_state(rs.primary)
    for m in rs.members:
        assert member_state(m) == primary, m.host
        buckets = m.node.catalog.collection("t", "system.buckets.w")
        assert [s["name"] for s in buckets.indexes] == ["_id_", "tag_1_time_1", "x_1"]
    expected = await c.command("t", {"find": "w", "sort": {"_id": 1}})
    for m in rs.members[1:]:
        sec = member_client(core, m)
        reply = await sec.command("t", secondary_read({"find": "w", "sort": {"_id": 1}}))
        assert reply["cursor"]["firstBatch"] == expected["cursor"]["firstBatch"]
        reply = await sec.command("t", secondary_read({"listIndexes": "w"}))
        assert [i["name"] for i in reply["cursor"]["firstBatch"]] == ["tag_1_time_1", "x_1"]
