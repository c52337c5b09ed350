"""The README's example: property-testing your own consumer with mongosim.testing (pymongo, real time)."""

import pymongo
import pytest
from hypothesis import HealthCheck, given, settings

from mongosim import Cluster
from mongosim.testing.harness import apply_workload, assert_sink_matches_source, assert_stream_consistent, reference_sink
from mongosim.testing.strategies import fault_schedules, workloads


@pytest.fixture(scope="module")
def cluster():
    with Cluster(shards=2, port=0, instant_hwm=True) as c:
        yield c


def my_consumer(stream, sink: dict, stop_at_id) -> list[dict]:
    """The consumer under test: apply change events to `sink` until the event of `stop_at_id`."""
    events = []
    while True:
        ev = stream.next()
        events.append(ev)
        reference_sink([ev], sink)  # your own sink logic goes here
        if ev.get("documentKey", {}).get("_id") == stop_at_id:
            return events


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(workload=workloads(max_ops=25), faults=fault_schedules(["shard00", "shard01"]))
def test_sink_ends_identical_to_source(cluster, workload, faults):
    client = pymongo.MongoClient(cluster.uri, serverSelectionTimeoutMS=5000)
    coll = client.example.items
    coll.drop()
    sink: dict = {}
    with coll.watch(max_await_time_ms=50) as stream:
        source = apply_workload(cluster, coll, workload, faults)  # writes, with shard faults injected
        coll.insert_one({"_id": "end"})
        source["end"] = {"_id": "end"}
        events = my_consumer(stream, sink, "end")
    assert_stream_consistent(events)
    assert_sink_matches_source(sink, source)
    client.close()
