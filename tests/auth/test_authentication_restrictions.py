"""authenticationRestrictions: the combination rules (router.auth.restrictions) and their enforcement
through pymongo, on mongos and on a replica set's member."""

from __future__ import annotations

import json

import pymongo
import pytest
from pymongo.errors import OperationFailure

from mongosim import Cluster
from mongosim.oplog.errors import MongoError
from mongosim.router.auth.restrictions import address_of, parse_cidr, restrictions_met, validated

HERE, THERE = "127.0.0.1:50000", "127.0.0.1:27017"


@pytest.mark.parametrize("arrays, met", [
    ([], True),
    ([[]], True),  # an empty array restricts nothing
    ([[{"clientSource": ["127.0.0.1"]}]], True),
    ([[{"clientSource": ["10.0.0.0/8"]}]], False),
    ([[{"clientSource": ["10.0.0.0/8", "127.0.0.0/8"]}]], True),  # any range of a field
    ([[{"clientSource": ["127.0.0.1"], "serverAddress": ["10.1.2.3"]}]], False),  # every field of a document
    ([[{"clientSource": ["10.0.0.0/8"]}, {"serverAddress": ["127.0.0.1/32"]}]], True),  # any document
    ([[{"clientSource": ["127.0.0.1"]}], [{"clientSource": ["10.0.0.0/8"]}]], False),  # every array (user, roles)
    ([[{"clientSource": ["not an address"]}]], False),
    ([[{"clientSource": ["::1"]}]], False),  # another address family
    ([[{"clientSource": ["127.0.0.5/8"]}]], True),  # host bits in a range are allowed
])
def test_how_restrictions_combine(arrays, met):
    assert restrictions_met(arrays, HERE, THERE) is met


@pytest.mark.parametrize("value, code, errmsg", [
    ([1], 12, "'authenticationRestrictions' array sub-documents must be address restriction objects"),
    ([{}], 162, "At least one of 'clientSource' and/or 'serverAddress' must be set"),
    ([{"clientSource": ["1.2.3.4"], "x": 1}], 2, "BSON field 'address restriction.x' is an unknown field."),
    ([{"clientSource": "1.2.3.4"}], 2,
     "BSON field 'address restriction.clientSource' is the wrong type 'string', expected type 'array'"),
    ([{"serverAddress": ["::1", 5]}], 2,
     "BSON field 'address restriction.serverAddress.1' is the wrong type 'int', expected type 'string'"),
    ([{"clientSource": ["1.2.3"]}], 2, "Invalid IP address in CIDR string"),
    ([{"clientSource": ["fe80::1%eth0"]}], 2, "Invalid IP address in CIDR string"),
    ([{"clientSource": ["10.0.0.0/33"]}], 2, "Invalid length in CIDR string"),
    ([{"clientSource": ["::/-1"]}], 2, "Invalid length in CIDR string"),
    ([{"clientSource": ["10.0.0.0/99999999999"]}], 2, "Invalid length in CIDR string"),
    ([{"clientSource": ["10.0.0.0/"]}], 2, "Non-numeric length in CIDR string"),
    ([{"clientSource": ["10.0.0.0/8 "]}], 2, "Non-numeric length in CIDR string"),
    ([{"clientSource": ["127.0.0.1"]}, {"serverAddress": ["x"]}], 2, "Invalid IP address in CIDR string"),
])
def test_restrictions_are_refused_as_the_server_refuses_them(value, code, errmsg):
    """getRawAuthenticationRestrictions (address_restriction.cpp) and the CIDR parser (cidr.cpp)."""
    with pytest.raises(MongoError) as info:
        validated(value)
    assert (info.value.code, info.value.errmsg) == (code, errmsg)


def test_restrictions_are_stored_as_the_server_reserializes_them():
    assert validated([{"serverAddress": ["::1"], "clientSource": ["10.0.0.0/ 8", "127.0.0.1/+32"]}]) == [
        {"clientSource": ["10.0.0.0/ 8", "127.0.0.1/+32"], "serverAddress": ["::1"]}]
    assert str(parse_cidr("10.1.2.3/ 8")) == "10.0.0.0/8"  # std::stoi's leading blanks; host bits allowed
    assert str(parse_cidr("::1")) == "::1/128"


def test_addresses_of_endpoints():
    assert str(address_of("10.1.2.3:4")) == "10.1.2.3"
    assert str(address_of("[::1]:27017")) == "::1"
    assert str(address_of("memory")) == str(address_of(None)) == "127.0.0.1"  # in process: the loopback


@pytest.fixture(scope="module", params=["sharded", "replset"])
def cluster(request, tmp_path_factory):
    users = tmp_path_factory.mktemp("restrictions") / "users.json"
    users.write_text(json.dumps([{"createUser": "admin", "pwd": "s3cret", "roles": ["root"]}]))
    with Cluster(shards=1, port=0, topology=request.param, auth=True, users_file=str(users)) as c:
        yield c


def _client(c, user: str, pwd: str) -> pymongo.MongoClient:
    return pymongo.MongoClient(c.uri, username=user, password=pwd, serverSelectionTimeoutMS=5000)


def _cannot_log_in(c, user: str, pwd: str) -> None:
    with _client(c, user, pwd) as client, pytest.raises(OperationFailure) as info:
        client.admin.command("ping")
    assert (info.value.code, info.value.details["errmsg"]) == (18, "Authentication failed.")


def test_invalid_restrictions_are_refused_when_stored(cluster):
    with _client(cluster, "admin", "s3cret") as admin:
        db = admin["r"]
        bad = [{"clientSource": ["300.1.2.3"]}]
        for command, args in (("createUser", {"pwd": "p", "roles": []}), ("createRole", {"privileges": [], "roles": []})):
            with pytest.raises(OperationFailure) as info:
                db.command(command, "badrestr", authenticationRestrictions=bad, **args)
            assert (info.value.code, info.value.details["errmsg"]) == (2, "Invalid IP address in CIDR string")
        assert db.command("usersInfo", "badrestr")["users"] == []
        assert db.command("rolesInfo", "badrestr")["roles"] == []
        db.command("createUser", "okrestr", pwd="p", roles=[],
                   authenticationRestrictions=[{"serverAddress": ["127.0.0.1"], "clientSource": ["127.0.0.0/8"]}])
        with pytest.raises(OperationFailure) as info:
            db.command("updateUser", "okrestr", authenticationRestrictions=[{"clientSource": []}, {}])
        assert info.value.code == 162  # CollectionIsEmpty
        user = db.command("usersInfo", "okrestr", showAuthenticationRestrictions=True)["users"][0]
        assert user["authenticationRestrictions"] == [[{"clientSource": ["127.0.0.0/8"], "serverAddress": ["127.0.0.1"]}]]
        db.command("dropUser", "okrestr")


def test_a_users_and_its_roles_restrictions(cluster):
    with _client(cluster, "admin", "s3cret") as admin:
        db = admin.admin
        db.command("createUser", "near", pwd="p", roles=["read"],
                   authenticationRestrictions=[{"clientSource": ["127.0.0.1"], "serverAddress": ["127.0.0.0/8"]}])
        db.command("createUser", "far", pwd="p", roles=["read"],
                   authenticationRestrictions=[{"clientSource": ["10.0.0.0/8"]}])
        with _client(cluster, "near", "p") as near:
            assert near.admin.command("ping")["ok"] == 1.0
        _cannot_log_in(cluster, "far", "p")

        # a role's restrictions bind every user holding it, directly or by inheritance
        db.command("createRole", "remote", privileges=[], roles=[],
                   authenticationRestrictions=[{"clientSource": ["192.168.0.0/16"]}])
        db.command("createRole", "wrapper", privileges=[], roles=["remote"])
        db.command("createUser", "wrapped", pwd="p", roles=["readAnyDatabase", "wrapper"])
        _cannot_log_in(cluster, "wrapped", "p")
        db.command("updateRole", "remote", authenticationRestrictions=[])
        with _client(cluster, "wrapped", "p") as wrapped:
            assert wrapped.test.c.find_one() is None

            # restrictions the connection stops meeting log its user out at once
            db.command("updateRole", "remote", authenticationRestrictions=[{"clientSource": ["192.168.0.0/16"]}])
            with pytest.raises(OperationFailure) as info:
                wrapped.test.c.find_one()
            assert info.value.code == 13
