"""Error labels as the server adds them (error_labels.cpp), seen through pymongo in both topologies.

A mongod (the replica-set endpoint) labels a retryable write, commitTransaction or
abortTransaction whose error or write concern error has a RetriableError code
RetryableWriteError; a mongos never does (the failCommand failpoint's own
errorLabels aside).  TransientTransactionError marks transaction errors that leave
no trace, commitTransaction's included.  The server never adds
UnknownTransactionCommitResult: pymongo adds it itself.
"""

from __future__ import annotations

import pymongo
import pytest
from pymongo import monitoring
from pymongo.errors import NotPrimaryError, OperationFailure, WriteConcernError


class Replies(monitoring.CommandListener):
    """The server's replies (successful and failed) by command name, in order."""

    def __init__(self) -> None:
        self.replies: list[tuple[str, dict]] = []

    def started(self, event) -> None:
        pass

    def succeeded(self, event) -> None:
        self.replies.append((event.command_name, dict(event.reply)))

    def failed(self, event) -> None:
        self.replies.append((event.command_name, dict(event.failure)))

    def of(self, name: str) -> list[dict]:
        return [r for n, r in self.replies if n == name]


@pytest.fixture
def watched(client):
    """A second client on the same cluster with a listener; failpoints off after the test."""
    replies = Replies()
    # a ShutdownInProgress (91) reply marks the server Unknown until the monitor's next hello:
    # a short heartbeat keeps that wait short, as it is against a real server
    cl = pymongo.MongoClient(client.mongosim_cluster.uri, event_listeners=[replies], serverSelectionTimeoutMS=5000,
                             heartbeatFrequencyMS=500)
    cl.topology_name = client.topology_name
    cl.replies = replies
    cl.drop_database("labels")
    cl.labels.c.insert_one({"_id": 0})
    replies.replies.clear()
    yield cl
    cl.admin.command("configureFailPoint", "failCommand", mode="off")
    cl.admin.command("killAllSessions", [])  # a transaction a failed test left open
    cl.close()


def _fail(cl, commands: list[str], times: int = 1, **data) -> None:
    cl.admin.command({"configureFailPoint": "failCommand", "mode": {"times": times},
                      "data": {"failCommands": commands, **data}})


def test_write_concern_error_on_a_retryable_write(watched):
    """WCE 91 (ShutdownInProgress, retriable) from failCommand without errorLabels: the mongod
    labels the reply and pymongo retries; the mongos does not, and pymongo raises."""
    _fail(watched, ["insert"], writeConcernError={"code": 91, "errmsg": "Replication is being shut down"})
    coll = watched.labels.c
    if watched.topology_name == "replset":
        coll.insert_one({"_id": 1})
        first, second = watched.replies.of("insert")
        assert first["errorLabels"] == ["RetryableWriteError"]
        assert first["writeConcernError"] == {"code": 91, "errmsg": "Replication is being shut down"}
        assert "errorLabels" not in second and "writeConcernError" not in second
    else:
        with pytest.raises(WriteConcernError) as info:
            coll.insert_one({"_id": 1})
        assert info.value.code == 91
        assert not info.value.has_error_label("RetryableWriteError")
        (reply,) = watched.replies.of("insert")
        assert "errorLabels" not in reply
    assert coll.count_documents({"_id": 1}) == 1  # written once either way


def test_non_retriable_write_concern_error_gets_no_label(watched):
    _fail(watched, ["insert"], writeConcernError={"code": 64, "errmsg": "waiting for replication timed out",
                                                  "errInfo": {"wtimeout": True}})
    with pytest.raises(WriteConcernError) as info:
        watched.labels.c.insert_one({"_id": 1})
    assert info.value.code == 64
    (reply,) = watched.replies.of("insert")
    assert "errorLabels" not in reply and reply["writeConcernError"]["errInfo"] == {"wtimeout": True}


def test_failpoint_error_labels_replace_the_servers(watched):
    """errorLabels of the failpoint: the reply's labels (both topologies); an empty list: none
    at all, so the retriable WCE is not retried; errorLabels inside the writeConcernError stay there."""
    _fail(watched, ["insert"], errorLabels=["RetryableWriteError"],
          writeConcernError={"code": 91, "errmsg": "Replication is being shut down"})
    watched.labels.c.insert_one({"_id": 1})  # retried in both topologies
    assert [r.get("errorLabels") for r in watched.replies.of("insert")] == [["RetryableWriteError"], None]

    watched.replies.replies.clear()
    _fail(watched, ["insert"], errorLabels=[],
          writeConcernError={"code": 91, "errmsg": "x", "errorLabels": ["Inner"]})
    with pytest.raises(WriteConcernError):
        watched.labels.c.insert_one({"_id": 2})
    (reply,) = watched.replies.of("insert")
    assert "errorLabels" not in reply
    assert reply["writeConcernError"] == {"code": 91, "errmsg": "x", "errorLabels": ["Inner"]}


def test_retriable_error_on_a_retryable_write(watched):
    """failCommand errorCode 91 without errorLabels: RetryableWriteError from a mongod, none from a mongos."""
    _fail(watched, ["insert"], errorCode=91)
    coll = watched.labels.c
    if watched.topology_name == "replset":
        coll.insert_one({"_id": 1})
        assert watched.replies.of("insert")[0]["errorLabels"] == ["RetryableWriteError"]
    else:
        with pytest.raises(NotPrimaryError) as info:  # (pymongo's class for code 91)
            coll.insert_one({"_id": 1})
        assert info.value.details["code"] == 91 and "errorLabels" not in info.value.details


@pytest.mark.parametrize("code", [24, 112, 246, 267, 251])
def test_commit_errors_that_leave_no_trace_are_transient(watched, code):
    """LockTimeout, WriteConflict, SnapshotUnavailable, PreparedTransactionInProgress,
    NoSuchTransaction on commitTransaction: TransientTransactionError, so withTransaction
    runs the transaction again (and the second commit goes through)."""
    _fail(watched, ["commitTransaction"], errorCode=code)
    runs = []

    def callback(session):
        runs.append(1)
        watched.labels.c.insert_one({"_id": len(runs) + 10}, session=session)

    with watched.start_session() as s:
        s.with_transaction(callback)
    assert len(runs) == 2
    first = watched.replies.of("commitTransaction")[0]
    assert first["code"] == code and first["errorLabels"] == ["TransientTransactionError"]
    assert watched.labels.c.count_documents({"_id": {"$gt": 10}}) == 1


def test_commit_with_a_retriable_error(watched):
    """ShutdownInProgress on commitTransaction: RetryableWriteError from a mongod (pymongo retries
    the commit), nothing from a mongos; never UnknownTransactionCommitResult from the server."""
    _fail(watched, ["commitTransaction"], errorCode=91)
    with watched.start_session() as s:
        s.start_transaction()
        watched.labels.c.insert_one({"_id": 1}, session=s)
        if watched.topology_name == "replset":
            s.commit_transaction()
            assert watched.replies.of("commitTransaction")[0]["errorLabels"] == ["RetryableWriteError"]
        else:
            with pytest.raises(NotPrimaryError) as info:
                s.commit_transaction()
            assert info.value.details["code"] == 91
            assert info.value.has_error_label("UnknownTransactionCommitResult")  # pymongo's own
            assert "errorLabels" not in watched.replies.of("commitTransaction")[0]
            s.commit_transaction()  # the driver may retry the commit by hand
    assert watched.labels.c.count_documents({"_id": 1}) == 1


def test_write_concern_error_on_commit(watched):
    _fail(watched, ["commitTransaction"], writeConcernError={"code": 91, "errmsg": "Replication is being shut down"})
    with watched.start_session() as s:
        s.start_transaction()
        watched.labels.c.insert_one({"_id": 1}, session=s)
        if watched.topology_name == "replset":
            s.commit_transaction()  # retried after the labelled WCE
            assert watched.replies.of("commitTransaction")[0]["errorLabels"] == ["RetryableWriteError"]
        else:
            with pytest.raises(OperationFailure) as info:
                s.commit_transaction()
            assert info.value.code == 91 and not info.value.has_error_label("RetryableWriteError")
    assert watched.labels.c.count_documents({"_id": 1}) == 1


def test_non_transient_statement_error_in_a_transaction(watched):
    """DuplicateKey inside a transaction: no label (the transaction is aborted)."""
    with watched.start_session() as s:
        s.start_transaction()
        with pytest.raises(OperationFailure) as info:
            watched.labels.c.insert_one({"_id": 0}, session=s)
        assert info.value.code == 11000 and not info.value._error_labels
        s.abort_transaction()


def test_retried_find_and_modify_after_a_write_concern_error(watched):
    """The retry of a findAndModify whose reply carried a writeConcernError is answered from the
    session's saved result: the same document, without that writeConcernError."""
    watched.labels.c.insert_many([{"_id": 1, "x": 11}, {"_id": 2, "x": 22}])
    _fail(watched, ["findAndModify"], errorLabels=["RetryableWriteError"],
          writeConcernError={"code": 91, "errmsg": "Replication is being shut down"})
    watched.replies.replies.clear()
    assert watched.labels.c.find_one_and_delete({"x": {"$gte": 11}}, sort=[("x", 1)]) == {"_id": 1, "x": 11}
    first, second = watched.replies.of("findAndModify")
    assert first == {"code": 91, "errmsg": "Replication is being shut down", "errorLabels": ["RetryableWriteError"]}
    assert "writeConcernError" not in second and second["value"] == {"_id": 1, "x": 11}
    assert sorted(d["_id"] for d in watched.labels.c.find()) == [0, 2]
