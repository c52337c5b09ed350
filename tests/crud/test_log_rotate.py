"""logRotate on mongos and on a replica-set member, through pymongo (generic_servers.cpp, logv2 rotateLogs):
mongosim writes no log file, so the "server" log has nothing to rotate, and there is no audit log; and compact
through mongos."""

from __future__ import annotations

import json

import pytest
from bson import Decimal128, Int64
from pymongo.errors import OperationFailure


def _code(fn) -> tuple[int, str, str]:
    with pytest.raises(OperationFailure) as info:
        fn()
    return info.value.code, info.value.details["codeName"], info.value.details["errmsg"]


@pytest.mark.parametrize("arg", [1, True, False, 0, Int64(1), 1.5, Decimal128("1")])
def test_rotating_every_log_succeeds(client, arg):
    reply = client.admin.command({"logRotate": arg})
    assert reply["ok"] == 1.0 and not {"errmsg", "code"} & reply.keys()


def test_a_named_log_type(client):
    # "server" is always registered (nothing to rename without a log file); no audit log in community
    assert client.admin.command({"logRotate": "server"})["ok"] == 1.0
    for log_type in ("audit", "Server", "nonsense"):
        assert _code(lambda: client.admin.command({"logRotate": log_type})) == (
            4, "NoSuchKey", "Log rotation failed due to one or more errors")
    # the detail went to the log (warning 6221500), not to the client
    lines = [json.loads(line) for line in client.admin.command({"getLog": "global"})["log"]]
    warning = [line for line in lines if line.get("id") == 6221500][-1]
    assert (warning["s"], warning["c"], warning["msg"]) == ("W", "CONTROL", "Unknown log type for rotate")
    assert warning["attr"] == {"logType": "nonsense"}


def test_bad_arguments(client):
    assert _code(lambda: client.admin.command({"logRotate": {"a": 1}})) == (
        14, "TypeMismatch", "BSON field 'logRotate.logRotate' is the wrong type 'object', expected types "
                            "'[bool, long, int, decimal, double, string]'")
    assert _code(lambda: client.admin.command({"logRotate": 1, "verbose": True})) == (
        40415, "IDLUnknownField", "BSON field 'logRotate.verbose' is an unknown field.")
    assert _code(lambda: client.test.command({"logRotate": 1})) == (
        13, "Unauthorized", "logRotate may only be run against the admin database.")
    assert client.admin.command({"logRotate": 1, "comment": "generic arguments are fine"})["ok"] == 1.0


def test_compact_is_refused_by_mongos(sharded_client):
    sharded_client.db.c.insert_one({"_id": 1})
    assert _code(lambda: sharded_client.db.command("compact", "c")) == (
        115, "CommandNotSupported", "compact not allowed through mongos")
