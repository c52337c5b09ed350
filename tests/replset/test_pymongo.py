"""As a user would: pymongo against `Cluster(members=3)` over TCP (real time), through the router and
straight to each shard's replica set."""

from __future__ import annotations

import threading
import time

import pymongo
import pytest
from pymongo import ReadPreference
from pymongo.errors import WriteConcernError
from pymongo.write_concern import WriteConcern

import mongosim
from tests.replset.conftest import next_ids

ELECTION_TIMEOUT = 0.5  # seconds (the server's 10 s, scaled for a test)


@pytest.fixture(scope="module")
def cluster():
    with mongosim.Cluster(shards=2, members=3, port=0, instant_hwm=True, election_timeout=ELECTION_TIMEOUT) as cl:
        yield cl


def rs_client(cluster, name: str, **kw) -> pymongo.MongoClient:
    c = pymongo.MongoClient(cluster.core.replica_set_uri(name), serverSelectionTimeoutMS=10_000, **kw)
    c.admin.command("ping")
    return c


def test_each_shard_is_a_replica_set_pymongo_discovers(cluster):
    for name in ("shard00", "shard01", "config"):
        with rs_client(cluster, name) as c:
            deadline = time.time() + 5
            while (c.primary is None or len(c.secondaries) < 2) and time.time() < deadline:
                time.sleep(0.05)
            rs = cluster.core.replica_sets[name]
            assert c.primary == tuple(rs.primary.host.rsplit(":", 1)[:1]) + (int(rs.primary.host.rsplit(":")[1]),)
            assert len(c.secondaries) == 2
    with pymongo.MongoClient(cluster.uri) as router:
        hosts = {d["_id"]: d["host"] for d in router.config.shards.find()}
    assert hosts["shard00"] == cluster.core.replica_sets["shard00"].connection_string()


def test_majority_times_out_with_replication_stopped(cluster):
    with rs_client(cluster, "shard01") as c, pymongo.MongoClient(cluster.uri) as router:
        router.admin.command({"mongosimFault": "shard01", "stopReplication": True})
        try:
            coll = c.wc.c.with_options(write_concern=WriteConcern(w="majority", wtimeout=300))
            with pytest.raises(WriteConcernError) as info:
                coll.insert_one({"_id": 1})
            assert info.value.code == 64
            assert info.value.details["codeName"] == "WriteConcernTimeout"
            assert info.value.details["errInfo"] == {"wtimeout": True, "writeConcern": {
                "w": "majority", "wtimeout": 300, "provenance": "clientSupplied"}}
            with c.wc.c.watch(max_await_time_ms=100) as stream:
                c.wc.c.with_options(write_concern=WriteConcern(w=1)).insert_one({"_id": 2})
                for _ in range(5):
                    assert stream.try_next() is None  # past the commit point: nothing
                router.admin.command({"mongosimFault": "shard01", "startReplication": True})
                assert next_ids(stream, 1) == [2]
        finally:
            router.admin.command({"mongosimFault": "shard01", "clear": True})


def test_stop_repl_producer_failpoint_stops_one_secondary(cluster):
    """configureFailPoint stopReplProducer on a secondary (as drivers' tests do): its fetcher stops, so w: 3
    times out while w: 2 is still met by the other; turned off, the secondary catches up."""
    rs = cluster.core.replica_sets["shard00"]
    secondary = next(m for m in rs.members if m is not rs.primary)
    with rs_client(cluster, "shard00") as c, \
            pymongo.MongoClient(secondary.host, directConnection=True) as direct:
        direct.admin.command("configureFailPoint", "stopReplProducer", mode="alwaysOn")
        try:
            with pytest.raises(WriteConcernError) as info:
                c.fp.c.with_options(write_concern=WriteConcern(w=3, wtimeout=200)).insert_one({"_id": 1})
            assert info.value.code == 64 and info.value.details["errInfo"]["writeConcern"]["w"] == 3
            c.fp.c.with_options(write_concern=WriteConcern(w=2, wtimeout=5000)).insert_one({"_id": 2})
        finally:
            direct.admin.command("configureFailPoint", "stopReplProducer", mode="off")
        c.fp.c.with_options(write_concern=WriteConcern(w=3, wtimeout=5000)).insert_one({"_id": 3})
        assert direct.fp.c.count_documents({}) == 3


def test_an_aggregate_that_writes_waits_for_its_write_concern(cluster):
    """$out and $merge make an aggregate a write: its writeConcern is waited for and reported (a member's
    and mongos's reply); a read-only pipeline's is not."""
    with rs_client(cluster, "shard01") as c, pymongo.MongoClient(cluster.uri) as router:
        for client in (c, router):
            db = client.agg_wc
            db.src.insert_one({"_id": 1})
            four = db.src.with_options(write_concern=WriteConcern(w=4))
            for stage in ({"$out": "o"}, {"$merge": {"into": "m"}}):
                with pytest.raises(WriteConcernError) as info:
                    four.aggregate([stage])
                assert info.value.code == 100 and info.value.details["codeName"] == "UnsatisfiableWriteConcern"
            assert db.o.find_one() == db.m.find_one() == {"_id": 1}  # (written: only the wait failed)
            reply = db.command("aggregate", "src", pipeline=[], cursor={}, writeConcern={"w": 4})
            assert "writeConcernError" not in reply
            db.src.with_options(write_concern=WriteConcern(w=3, wtimeout=5000)).aggregate([{"$out": "o3"}])
            client.drop_database("agg_wc")


def test_out_and_merge_on_a_secondary_write_on_the_primary(cluster):
    """Since 5.0 a secondary runs an aggregate ending in $out or $merge and the primary takes the writes
    (they replicate to every member, the secondary included); its write concern is the primary's."""
    rs = cluster.core.replica_sets["shard01"]
    with rs_client(cluster, "shard01") as c:
        db = c.sec_out
        db.src.with_options(write_concern=WriteConcern(w=3)).insert_many([{"_id": 1}, {"_id": 2}])
        sec = db.src.with_options(read_preference=ReadPreference.SECONDARY,
                                 write_concern=WriteConcern(w=3, wtimeout=10_000))
        ran_on = {sec.aggregate([{"$match": {"_id": 2}}, {"$out": "o"}]).address,
                  sec.aggregate([{"$merge": {"into": "m"}}]).address}
        assert rs.primary.host not in {f"{host}:{port}" for host, port in ran_on}
        for m in rs.members:
            with pymongo.MongoClient(m.host, directConnection=True) as direct:
                assert list(direct.sec_out.o.find()) == [{"_id": 2}]
                assert sorted(d["_id"] for d in direct.sec_out.m.find()) == [1, 2]
        with pytest.raises(WriteConcernError) as info:
            sec.with_options(write_concern=WriteConcern(w=4)).aggregate([{"$out": "o4"}])
        assert info.value.code == 100
        c.drop_database("sec_out")


def test_a_stream_on_a_secondary(cluster):
    with rs_client(cluster, "shard00", readPreference="secondary") as sec, rs_client(cluster, "shard00") as c:
        with sec.sec.c.watch(max_await_time_ms=100) as stream:
            c.sec.c.insert_one({"_id": 1})
            ev = None
            deadline = time.time() + 10
            while ev is None and time.time() < deadline:
                ev = stream.try_next()
            assert ev["documentKey"] == {"_id": 1}
        assert sec.sec.c.with_options(read_preference=ReadPreference.SECONDARY).find_one({"_id": 1}) == {"_id": 1}


def _step_down(client: pymongo.MongoClient, rs) -> None:
    """Step the set's primary down, as a script would: the driver's view of who is primary may be a
    moment old (an election just ended), so a NotPrimaryError means ask again once the driver has
    rediscovered the primary."""
    errors = []
    for _ in range(50):
        try:
            client.admin.command("replSetStepDown", 1, secondaryCatchUpPeriodSecs=1)
            return
        except (pymongo.errors.NotPrimaryError, pymongo.errors.AutoReconnect) as exc:
            errors.append(f"{time.monotonic():.3f} {exc!r}"[:300])
            continue  # (pymongo marks the server unknown and selects the primary again)
    servers = [(sd.address, sd.server_type_name, sd.topology_version, repr(sd.error)[:120])
               for sd in client.topology_description.server_descriptions().values()]
    raise AssertionError("no primary accepted replSetStepDown:\n" + "\n".join(errors[:3] + errors[-2:])
                         + "\nthe driver's view: " + repr(servers) + "\nthe set: " + _set_state(rs))


def _set_state(rs) -> str:
    """The set's members and last elections, for a failure message."""
    lines = [f"term {rs.term} handoff {rs.handoff} no primary since {rs.no_primary_since}"]
    lines += [f"{m.host} {m.state} alive={m.alive} frozen_until={m.frozen_until:.3f} last={m.last_key}"
              for m in rs.members]
    return "\n".join(lines + [repr(e) for e in rs.elections[-4:]])


def _kill_primary(router: pymongo.MongoClient, core, name: str) -> None:
    """Kill the shard's primary, as a script would: mid-election there is none to kill yet, so ask
    again until one is elected (within 20 election timeouts: longer without a primary is a bug)."""
    deadline = time.monotonic() + 20 * ELECTION_TIMEOUT
    while True:
        try:
            router.admin.command({"mongosimFault": name, "kill": True})
            return
        except pymongo.errors.NotPrimaryError:
            if time.monotonic() > deadline:
                raise AssertionError(f"{name} has had no primary for {20 * ELECTION_TIMEOUT} s:\n"
                                     + _set_state(core.replica_sets[name])) from None
            time.sleep(0.02)


def test_failover_under_load(cluster):
    """The issue's "done when": a retryable writer and a watch() through the router while every shard
    primary steps down 20 times and members are killed and restarted: the stream holds every
    acknowledged write exactly once, in order, and nothing that was rolled back."""
    core = cluster.core
    router = pymongo.MongoClient(cluster.uri)
    router.admin.command("enableSharding", "load")
    router.admin.command("shardCollection", "load.c", key={"_id": "hashed"})
    coll = router.load.c
    acked: list[int] = []
    stop = threading.Event()
    errors: list[BaseException] = []
    at_round: list[int] = []  # writes acknowledged when each round began

    def writer() -> None:
        i = 0
        try:
            while not stop.is_set():
                i += 1
                coll.insert_one({"_id": i})
                acked.append(i)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    stream = coll.watch(max_await_time_ms=200)
    t = threading.Thread(target=writer)
    t.start()
    try:
        shards = {name: rs_client(cluster, name) for name in ("shard00", "shard01")}
        for round_ in range(20):
            at_round.append(len(acked))
            for name, c in shards.items():  # (a stepped-down member may not stand again for 1 s)
                _step_down(c, core.replica_sets[name])
            time.sleep(0.6)
            if round_ % 5 == 4:
                name = "shard00" if round_ % 10 == 4 else "shard01"
                _kill_primary(router, core, name)
                time.sleep(ELECTION_TIMEOUT * 3)
                router.admin.command({"mongosimFault": name, "clear": True})  # the dead member restarts
                time.sleep(0.2)
        for c in shards.values():
            c.close()
    finally:
        stop.set()
        t.join()
    assert errors == [], [repr(e)[:2000] for e in errors]
    # the writer kept writing through the failovers: writes were acknowledged between most rounds
    # (how many depends on the machine's load: a count would not; 19 of 19 seen at load 13)
    grew = sum(1 for a, b in zip(at_round, at_round[1:]) if b > a)
    assert grew >= 12 and len(acked) >= 20, at_round
    seen: list[int] = []
    events = set()
    deadline = time.time() + 60
    while len(seen) < len(acked) and time.time() < deadline:
        ev = stream.try_next()
        if ev is not None:
            seen.append(ev["documentKey"]["_id"])
            events.add((ev["clusterTime"], ev["documentKey"]["_id"]))
    stream.close()
    router.close()
    assert seen == acked  # every acknowledged write, once, in the order it was acknowledged
    rolled_back = {(e["ts"], e["o"]["_id"]) for name in ("shard00", "shard01")
                   for rb in core.replica_sets[name].rollbacks for e in rb["removed"] if e["op"] == "i"}
    assert not rolled_back & events  # (a retried write may have been written again: a new entry)
