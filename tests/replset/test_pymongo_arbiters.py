"""As a user would: pymongo over TCP (real time) against PSA deployments (`--members 2 --arbiters 1`):
a replica set the driver discovers with its arbiter, the commit point that stops with the secondary
down (w: "majority" times out, w: 1 goes on, the stream waits), the same through mongos, and reads
routed by member tags."""

from __future__ import annotations

import time

import pymongo
import pytest
from pymongo.errors import NotPrimaryError, WriteConcernError
from pymongo.read_preferences import Secondary
from pymongo.write_concern import WriteConcern

import mongosim
from tests.replset.conftest import next_ids

ELECTION_TIMEOUT = 0.5  # seconds (the server's 10 s, scaled for a test)


@pytest.fixture(scope="module")
def psa():
    with mongosim.Cluster(topology="replset", members=2, arbiters=1, port=0,
                          election_timeout=ELECTION_TIMEOUT) as cl:
        yield cl


def _client(uri: str, **kw) -> pymongo.MongoClient:
    c = pymongo.MongoClient(uri, serverSelectionTimeoutMS=10_000, **kw)
    c.admin.command("ping")
    return c


def _wait(cond, seconds: float = 10.0) -> None:
    deadline = time.time() + seconds
    while not cond():
        assert time.time() < deadline, "timed out"
        time.sleep(0.02)


def test_pymongo_discovers_the_arbiter(psa):
    rs = psa.core.replica_sets["shard00"]
    with _client(psa.uri) as c:
        _wait(lambda: c.primary is not None and len(c.secondaries) == 1 and len(c.arbiters) == 1)
        host, port = rs.arbiters[0].host.rsplit(":", 1)
        assert c.arbiters == {(host, int(port))}
        assert rs.arbiters[0].host not in psa.uri  # (the URI names the data-bearing members)
        status = c.admin.command("replSetGetStatus")
        assert [m["stateStr"] for m in status["members"]] == ["PRIMARY", "SECONDARY", "ARBITER"]
        assert "defaultWriteConcern" not in c.admin.command("getDefaultRWConcern")
        with pymongo.MongoClient(rs.arbiters[0].host, directConnection=True) as direct:
            assert direct.admin.command("hello")["arbiterOnly"] is True
            with pytest.raises(NotPrimaryError) as info:
                direct.db.c.find_one()  # (a direct connection reads with secondaryOk: the arbiter has no data)
            assert info.value.details["code"] == 13436


def test_secondary_down_the_commit_point_stops_and_the_stream_waits(psa):
    with _client(psa.uri) as c:
        coll = c.psa.c
        coll.drop()
        with coll.watch(max_await_time_ms=100) as stream:
            c.admin.command({"mongosimFault": "shard00", "kill": True, "member": "secondary"})
            try:
                coll.insert_one({"_id": 1})  # the implicit default of a PSA set: w: 1
                with pytest.raises(WriteConcernError) as info:
                    coll.with_options(write_concern=WriteConcern(w="majority", wtimeout=300)).insert_one({"_id": 2})
                assert info.value.code == 64 and info.value.details["codeName"] == "WriteConcernTimeout"
                time.sleep(4 * ELECTION_TIMEOUT)
                assert c.admin.command("hello")["isWritablePrimary"] is True  # the arbiter's vote
                for _ in range(5):
                    assert stream.try_next() is None  # nothing past the commit point
            finally:
                c.admin.command({"mongosimFault": "shard00", "clear": True})  # the secondary restarts
            assert next_ids(stream, 2) == [1, 2]


def test_reads_by_member_tags():
    """pymongo picks the secondary by the tags each member's hello reports."""
    with mongosim.Cluster(topology="replset", members=3, arbiters=1, port=0, election_timeout=ELECTION_TIMEOUT) as cl:
        with _client(cl.uri) as c:
            config = c.admin.command("replSetGetConfig")["config"]
            config["version"] += 1
            for m, dc in zip(config["members"], ["east", "east", "west"]):
                m["tags"] = {"dc": dc}
            c.admin.command("replSetReconfig", config)
            west = config["members"][2]["host"]
            c.db.c.insert_one({"_id": 1})
            coll = c.db.c.with_options(read_preference=Secondary(tag_sets=[{"dc": "west"}]))
            _wait(lambda: coll.find_one({"_id": 1}) is not None)
            cursor = coll.find({})
            list(cursor)
            assert "%s:%d" % cursor.address == west


def test_through_mongos_a_majority_write_to_a_psa_shard_times_out():
    with mongosim.Cluster(shards=2, members=2, arbiters=1, port=0, instant_hwm=True,
                          election_timeout=ELECTION_TIMEOUT) as cl, _client(cl.uri) as router:
        assert router.admin.command("getDefaultRWConcern")["defaultWriteConcern"] == {"w": 1, "wtimeout": 0}
        router.admin.command("enableSharding", "m", primaryShard="shard00")
        router.admin.command({"mongosimFault": "shard00", "kill": True, "member": "secondary"})
        coll = router.m.c
        coll.insert_one({"_id": 1})  # the cluster-wide default, w: 1
        with pytest.raises(WriteConcernError) as info:
            coll.with_options(write_concern=WriteConcern(w="majority", wtimeout=300)).insert_one({"_id": 2})
        assert info.value.code == 64 and "shard00" in str(info.value)
        router.admin.command({"mongosimFault": "shard00", "clear": True})
        _wait(lambda: coll.count_documents({}) == 2)
