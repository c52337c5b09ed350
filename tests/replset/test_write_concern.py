"""Write concern and the majority commit point, on a replica set and through the router."""

from __future__ import annotations

import trio

from mongosim.core import open_cluster
from mongosim.testing import AsyncClient
from tests.replset.conftest import EPOCH


async def test_majority_waits_for_a_majority(rs3, autojump_clock):
    core, c = rs3
    rs = core.replica_sets["shard00"]
    core.faults.lag("shard00", 2.0)
    t0 = trio.current_time()
    reply = await c.command("db", {"insert": "c", "documents": [{"_id": 1}], "writeConcern": {"w": 1}})
    assert trio.current_time() - t0 < 0.01 and "writeConcernError" not in reply
    reply = await c.insert("db", "c", [{"_id": 2}])  # the implicit default: w majority
    assert 1.99 <= trio.current_time() - t0 <= 2.05 and "writeConcernError" not in reply
    assert rs.commit_key == rs.primary.last_key


async def test_majority_with_replication_stopped_times_out(rs3, autojump_clock):
    core, c = rs3
    core.faults.stop_replication("shard00")
    t0 = trio.current_time()
    reply = await c.command("db", {"insert": "c", "documents": [{"_id": 1}],
                                   "writeConcern": {"w": "majority", "wtimeout": 300}})
    assert 0.29 <= trio.current_time() - t0 <= 0.35
    assert reply["n"] == 1 and reply["ok"] == 1.0
    assert reply["writeConcernError"] == {
        "code": 64, "codeName": "WriteConcernTimeout", "errmsg": "waiting for replication timed out",
        "errInfo": {"wtimeout": True, "writeConcern": {"w": "majority", "wtimeout": 300, "provenance": "clientSupplied"}}}
    assert list(reply["writeConcernError"]["errInfo"]["writeConcern"]) == ["w", "wtimeout", "provenance"]
    reply = await c.command("db", {"insert": "c", "documents": [{"_id": 2}], "writeConcern": {"w": 3, "wtimeout": 10}})
    assert reply["writeConcernError"]["code"] == 64


async def test_unsatisfiable_and_unknown_write_concerns(rs3, autojump_clock):
    core, c = rs3
    reply = await c.command("db", {"insert": "c", "documents": [{"_id": 1}], "writeConcern": {"w": 4}})
    assert reply["n"] == 1
    assert reply["writeConcernError"] == {"code": 100, "codeName": "UnsatisfiableWriteConcern",
                                          "errmsg": "Not enough data-bearing nodes",
                                          "errInfo": {"writeConcern": {"w": 4, "wtimeout": 0,
                                                                       "provenance": "clientSupplied"}}}
    reply = await c.command("db", {"insert": "c", "documents": [{"_id": 2}], "writeConcern": {"w": "dc2"}})
    assert reply["writeConcernError"]["code"] == 79
    reply = await c.command("db", {"insert": "c", "documents": [{"_id": 3}], "writeConcern": {"w": 3, "j": True}})
    assert "writeConcernError" not in reply


async def test_one_member_set_refuses_w2(autojump_clock):
    async with open_cluster(topology="replset", listen=False, epoch=EPOCH) as core:
        c = AsyncClient(core.frontend)
        reply = await c.command("db", {"insert": "c", "documents": [{"_id": 1}], "writeConcern": {"w": 2}})
        assert reply["n"] == 1 and reply["writeConcernError"]["code"] == 100
        assert "writeConcernError" not in await c.command("db", {"insert": "c", "documents": [{"_id": 2}],
                                                                 "writeConcern": {"w": "majority"}})


async def test_change_stream_stops_at_the_commit_point(rs3, autojump_clock):
    """Nothing past the commit point: stopping replication holds the stream back; resuming it flows."""
    core, c = rs3
    cs = c.watch("db", "c", max_await_time_ms=100)
    await cs.open()
    await c.insert("db", "c", [{"_id": 1}])
    assert (await cs.try_next())["documentKey"] == {"_id": 1}
    core.faults.stop_replication("shard00")
    reply = await c.command("db", {"insert": "c", "documents": [{"_id": 2}], "writeConcern": {"w": 1}})
    assert "writeConcernError" not in reply
    pbrt = cs.resume_token
    for _ in range(20):
        assert await cs.try_next() is None
    assert cs.resume_token["_data"] <= _token_at(core, reply["operationTime"])  # the PBRT stops short too
    assert cs.resume_token == pbrt or cs.resume_token["_data"] < _token_at(core, reply["operationTime"])
    core.faults.start_replication("shard00")
    ev = await cs.try_next() or await cs.try_next()
    assert ev["documentKey"] == {"_id": 2}


def _token_at(core, ts) -> str:
    from mongosim.oplog.clock import ts_key
    from mongosim.oplog.resume_token import encode_high_water_mark

    return encode_high_water_mark(ts_key(ts))


async def test_router_stream_and_write_concern_through_mongos(sharded3, autojump_clock):
    core, c = sharded3
    await c.admin({"enableSharding": "db", "primaryShard": "shard00"})
    cs = c.watch("db", "c", max_await_time_ms=100)
    await cs.open()
    core.faults.stop_replication("shard00")
    reply = await c.command("db", {"insert": "c", "documents": [{"_id": 1}],
                                   "writeConcern": {"w": "majority", "wtimeout": 200}})
    assert reply["n"] == 1
    wce = reply["writeConcernError"]
    assert wce["code"] == 64 and wce["codeName"] == "WriteConcernTimeout"
    assert "shard00" in wce["errmsg"] and wce["errInfo"]["wtimeout"] is True
    for _ in range(10):
        assert await cs.try_next() is None
    core.faults.start_replication("shard00")
    t0 = trio.current_time()
    ev = None
    while ev is None:
        ev = await cs.try_next()
        assert trio.current_time() - t0 < 30
    assert ev["documentKey"] == {"_id": 1}
