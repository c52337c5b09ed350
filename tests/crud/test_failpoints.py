"""Server failpoints drivers' tests use, on a replica-set member: onPrimaryTransactionalWrite and
maxTimeAlwaysTimeOut (failCommand and failGetMoreAfterCursorCheckout are covered by the spec tests)."""

from __future__ import annotations

import pymongo
import pytest
from bson import Int64
from pymongo import monitoring
from pymongo.errors import AutoReconnect, ExecutionTimeout, WriteError

from mongosim import Cluster


class Started(monitoring.CommandListener):
    def __init__(self):
        self.names = []

    def started(self, event):
        self.names.append(event.command_name)

    def succeeded(self, event):
        pass

    def failed(self, event):
        pass


STARTED = Started()


@pytest.fixture(scope="module")
def rs_client():
    with Cluster(port=0, topology="replset") as cluster:
        client = pymongo.MongoClient(cluster.uri, heartbeatFrequencyMS=500, event_listeners=[STARTED])
        yield client
        client.admin.command("configureFailPoint", "onPrimaryTransactionalWrite", mode="off")
        client.close()


def _failpoint(client, name, mode, **data):
    client.admin.command({"configureFailPoint": name, "mode": mode, "data": data})


def test_committed_on_first_attempt_then_retried(rs_client):
    coll = rs_client.fp.retry
    coll.drop()
    _failpoint(rs_client, "onPrimaryTransactionalWrite", {"times": 1})
    STARTED.names.clear()
    coll.insert_many([{"_id": 2}, {"_id": 3}])  # the connection closes after the first write; the retry answers
    assert STARTED.names == ["insert", "insert"]  # sent twice: the first reply was lost with the connection
    assert sorted(d["_id"] for d in coll.find()) == [2, 3]
    _failpoint(rs_client, "onPrimaryTransactionalWrite", {"times": 1})
    res = coll.update_one({"_id": 2}, {"$inc": {"x": 1}})
    assert res.modified_count == 1 and coll.find_one({"_id": 2}) == {"_id": 2, "x": 1}  # applied once


def test_fail_before_commit_writes_nothing(rs_client):
    coll = rs_client.fp.nothing
    coll.drop()
    coll.insert_one({"_id": 1})
    _failpoint(rs_client, "onPrimaryTransactionalWrite", "alwaysOn", failBeforeCommitExceptionCode=1)
    try:
        with pytest.raises((AutoReconnect, WriteError)):
            coll.insert_many([{"_id": 2}, {"_id": 3}])
    finally:
        _failpoint(rs_client, "onPrimaryTransactionalWrite", "off")
    assert [d["_id"] for d in coll.find()] == [1]


def test_fail_before_commit_without_closing_is_a_write_error_per_statement(rs_client):
    coll = rs_client.fp.per_statement
    coll.drop()
    coll.insert_many([{"_id": 0, "x": 0}, {"_id": 1, "x": 1}])
    _failpoint(rs_client, "onPrimaryTransactionalWrite", {"skip": 1}, closeConnection=False,
               failBeforeCommitExceptionCode=1)
    try:
        with rs_client.start_session() as s:
            reply = rs_client.fp.command({"update": "per_statement", "ordered": True, "lsid": s.session_id,
                                          "txnNumber": Int64(7),
                                          "updates": [{"q": {"x": 0}, "u": {"$inc": {"y": 1}}},
                                                      {"q": {"x": 1}, "u": {"$inc": {"y": 1}}}]})
    finally:
        _failpoint(rs_client, "onPrimaryTransactionalWrite", "off")
    assert reply["nModified"] == 1
    assert [(e["index"], e["code"]) for e in reply["writeErrors"]] == [(1, 1)]


def test_max_time_always_times_out(rs_client):
    rs_client.fp.mt.insert_one({"_id": 1})
    _failpoint(rs_client, "maxTimeAlwaysTimeOut", "alwaysOn")
    try:
        with pytest.raises(ExecutionTimeout) as e:
            rs_client.fp.mt.find_one({}, max_time_ms=1000)
        assert e.value.code == 50
        assert rs_client.fp.mt.find_one({}) == {"_id": 1}  # without a time limit: unaffected
    finally:
        _failpoint(rs_client, "maxTimeAlwaysTimeOut", "off")


def test_max_time_always_times_out_a_getmore_of_a_time_limited_cursor(rs_client):
    """A cursor opened with a maxTimeMS keeps a time limit for its getMores (which may not name one): the
    failpoint fails the getMore and frees the cursor; a cursor opened without one is unaffected."""
    rs_client.fp.mtg.insert_many([{"_id": i} for i in range(5)])
    limited = rs_client.fp.command("find", "mtg", batchSize=1, maxTimeMS=60000)["cursor"]["id"]
    free = rs_client.fp.command("find", "mtg", batchSize=1)["cursor"]["id"]
    _failpoint(rs_client, "maxTimeAlwaysTimeOut", "alwaysOn")
    try:
        with pytest.raises(ExecutionTimeout) as e:
            rs_client.fp.command("getMore", limited, collection="mtg")
        assert e.value.code == 50 and e.value.details["codeName"] == "MaxTimeMSExpired"
        more = rs_client.fp.command("getMore", free, collection="mtg", batchSize=1)
        assert more["cursor"]["nextBatch"] == [{"_id": 1}]
    finally:
        _failpoint(rs_client, "maxTimeAlwaysTimeOut", "off")
    with pytest.raises(pymongo.errors.OperationFailure) as e:
        rs_client.fp.command("getMore", limited, collection="mtg")
    assert e.value.code == 43  # CursorNotFound: the failed getMore freed it
    rs_client.fp.command("killCursors", "mtg", cursors=[free])


# -- failCommand's matching (commands.cpp shouldActivateFailCommandFailPoint) -------------------------

def _fail_times(client, **data):
    client.admin.command({"configureFailPoint": "failCommand", "mode": {"times": 1}, "data": data})


def _off(client):
    client.admin.command({"configureFailPoint": "failCommand", "mode": "off"})


def test_fail_command_by_app_name_fails_the_handshake_hello(rs_client):
    """A connection's first hello brings the client metadata: failCommand's appName matches it there
    (drivers' tests fail a named client's handshakes so), and other clients connect as usual."""
    uri = f"mongodb://{rs_client.address[0]}:{rs_client.address[1]}/?directConnection=true"
    rs_client.admin.command({"configureFailPoint": "failCommand", "mode": "alwaysOn",
                             "data": {"failCommands": ["hello", "isMaster"], "errorCode": 1234,
                                      "appName": "handshakeFails"}})
    try:
        with pymongo.MongoClient(uri, appName="handshakeFails", serverSelectionTimeoutMS=300) as named:
            with pytest.raises(pymongo.errors.ServerSelectionTimeoutError) as err:
                named.admin.command("ping")
            assert "Failing command via 'failCommand' failpoint" in str(err.value)
        with pymongo.MongoClient(uri, appName="other", serverSelectionTimeoutMS=5000) as other:
            assert other.admin.command("ping")["ok"] == 1.0
    finally:
        rs_client.admin.command({"configureFailPoint": "failCommand", "mode": "off"})
    with pymongo.MongoClient(uri, appName="handshakeFails", serverSelectionTimeoutMS=5000) as named:
        assert named.admin.command("ping")["ok"] == 1.0


def test_fail_command_matches_a_command_by_its_aliases(rs_client):
    """failCommands names a command by any of its names: findandmodify fails findAndModify."""
    coll = rs_client.fp.alias
    coll.drop()
    coll.insert_one({"_id": 1})
    _fail_times(rs_client, failCommands=["findandmodify"], errorCode=2)
    with pytest.raises(pymongo.errors.OperationFailure) as exc:
        coll.find_one_and_update({"_id": 1}, {"$set": {"a": 1}})
    assert exc.value.code == 2
    assert coll.find_one_and_update({"_id": 1}, {"$set": {"a": 1}}) == {"_id": 1}  # fired once only


def test_fail_all_commands(rs_client):
    client = pymongo.MongoClient(rs_client.address[0], rs_client.address[1], appname="fp-all",
                                 directConnection=True)
    try:
        client.admin.command("ping")
        # (the namespace keeps the client's monitoring hellos out of it: they would use up `times`)
        _fail_times(rs_client, failAllCommands=True, errorCode=2, appName="fp-all", namespace="fp.any")
        with pytest.raises(pymongo.errors.OperationFailure) as exc:
            client.fp.any.count_documents({})
        assert exc.value.code == 2
        assert client.fp.any.count_documents({}) == 0
    finally:
        client.close()
        _off(rs_client)


def test_fail_command_without_an_action_never_fires(rs_client):
    """errorLabels alone ask for nothing: the failpoint stays unhit (its `times` are not used up)."""
    _fail_times(rs_client, failCommands=["aggregate"], errorLabels=["Nope"])
    assert rs_client.fp.none.count_documents({}) == 0
    reply = rs_client.admin.command({"configureFailPoint": "failCommand", "mode": "off"})
    assert reply["count"] == 0


def test_block_connection_needs_block_time(rs_client):
    _fail_times(rs_client, failCommands=["aggregate"], blockConnection=True)
    try:
        with pytest.raises(pymongo.errors.OperationFailure) as exc:
            rs_client.fp.block.count_documents({})
        assert exc.value.code == 72 and "blockTimeMS" in str(exc.value)  # InvalidOptions
    finally:
        _off(rs_client)
