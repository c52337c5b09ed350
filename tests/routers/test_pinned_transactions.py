"""pymongo pins a transaction to the mongos that started it; a commit retried elsewhere recovers the
outcome with the recoveryToken (the driver specification's useMultipleMongoses behaviour)."""

from __future__ import annotations

import pymongo
import pytest
from pymongo import monitoring

import mongosim


class Recorder(monitoring.CommandListener):
    def __init__(self) -> None:
        self.events: list = []

    def started(self, event) -> None:
        self.events.append(event)

    def succeeded(self, event) -> None:
        pass

    def failed(self, event) -> None:
        pass


@pytest.fixture(scope="module")
def cluster():
    with mongosim.Cluster(shards=2, port=0, routers=2, instant_hwm=True) as c:
        yield c


def _client(cluster, rec):
    return pymongo.MongoClient(cluster.uri, event_listeners=[rec], localThresholdMS=1000, heartbeatFrequencyMS=500)


def test_every_statement_of_a_transaction_goes_to_one_router(cluster):
    rec = Recorder()
    client = _client(cluster, rec)
    client.pin.c.insert_one({"_id": 0})
    for _ in range(5):
        rec.events.clear()
        with client.start_session() as s, s.start_transaction():
            for i in range(6):
                client.pin.c.find_one({"_id": 0}, session=s)
            client.pin.c.insert_one({}, session=s)
        addresses = {e.connection_id for e in rec.events if e.command_name in ("find", "insert", "commitTransaction")}
        assert len(addresses) == 1
        commit = next(e for e in rec.events if e.command_name == "commitTransaction")
        assert "recoveryToken" in commit.command
    client.close()


def test_a_commit_retried_on_the_other_router_succeeds(cluster):
    """The spec's 'commitTransaction retry succeeds on new mongos': the first commit commits but
    answers a retryable writeConcernError; the driver retries it unpinned, on either router (the
    recovery on the other one is tested in test_transactions_across_routers.py)."""
    rec = Recorder()
    client = _client(cluster, rec)
    client.rec.c.drop()
    with client.start_session() as s:
        s.start_transaction()
        client.rec.c.insert_one({"_id": 1}, session=s)
        pinned = next(e.connection_id for e in rec.events if e.command_name == "insert")
        one = pymongo.MongoClient(f"mongodb://{pinned[0]}:{pinned[1]}/", directConnection=True)
        one.admin.command({"configureFailPoint": "failCommand", "mode": {"times": 1}, "data": {
            "failCommands": ["commitTransaction"], "errorLabels": ["RetryableWriteError"],
            "writeConcernError": {"code": 91, "errmsg": "Replication is being shut down"}}})
        s.commit_transaction()
        commits = [e for e in rec.events if e.command_name == "commitTransaction"]
        assert len(commits) == 2 and all("recoveryToken" in e.command for e in commits)
        one.close()
    assert [d["_id"] for d in client.rec.c.find()] == [1]
    client.close()
