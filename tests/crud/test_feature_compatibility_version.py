"""setFeatureCompatibilityVersion on mongos and on a replica set: 8.0 with confirm is a no-op success; the
other forms answer the server's errors, and getParameter keeps saying 8.0."""

from __future__ import annotations

import pytest
from bson import Timestamp
from pymongo.errors import OperationFailure

DOWNGRADE = ("Once you have downgraded the FCV, if you choose to downgrade the binary version, it will require "
             "support assistance. Please re-run this command with 'confirm: true' to acknowledge this and continue "
             "with the FCV downgrade.")


def _fcv(client) -> dict:
    return client.admin.command({"getParameter": 1, "featureCompatibilityVersion": 1})["featureCompatibilityVersion"]


def test_set_fcv_to_the_current_version_is_a_no_op(client):
    reply = client.admin.command({"setFeatureCompatibilityVersion": "8.0", "confirm": True})
    assert reply["ok"] == 1.0
    assert _fcv(client) == {"version": "8.0"}


@pytest.mark.parametrize("cmd,code,msg", [
    ({"setFeatureCompatibilityVersion": "8.0"}, 7369100, DOWNGRADE),
    ({"setFeatureCompatibilityVersion": "7.0"}, 7369100, DOWNGRADE),
    ({"setFeatureCompatibilityVersion": "7.3", "confirm": True}, 5147403,
     "cannot set featureCompatibilityVersion to '7.3' while featureCompatibilityVersion is '8.0'"),
    ({"setFeatureCompatibilityVersion": "9.9", "confirm": True}, 4926900,
     "Invalid feature compatibility version value '9.9'; expected '7.0' or '7.3' or '8.0'. See "
     "https://docs.mongodb.com/master/release-notes/8.0-compatibility/#feature-compatibility."),
    ({"setFeatureCompatibilityVersion": 8, "confirm": True}, 14,
     "BSON field 'setFeatureCompatibilityVersion.setFeatureCompatibilityVersion' is the wrong type 'int', expected "
     "type 'string'"),
    ({"setFeatureCompatibilityVersion": "8.0", "confirm": 1}, 14,
     "BSON field 'setFeatureCompatibilityVersion.confirm' is the wrong type 'int', expected type 'bool'"),
    ({"setFeatureCompatibilityVersion": "8.0", "confirm": True, "bogus": 1}, 40415,
     "BSON field 'setFeatureCompatibilityVersion.bogus' is an unknown field."),
])
def test_set_fcv_errors(client, cmd, code, msg):
    with pytest.raises(OperationFailure) as e:
        client.admin.command(cmd)
    assert (e.value.code, e.value.details["errmsg"]) == (code, msg)
    assert _fcv(client) == {"version": "8.0"}


def test_set_fcv_downgrade_is_refused_clearly(client):
    with pytest.raises(OperationFailure) as e:
        client.admin.command({"setFeatureCompatibilityVersion": "7.0", "confirm": True})
    assert e.value.details["codeName"] == "CommandNotSupported" and "8.0" in e.value.details["errmsg"]
    assert _fcv(client) == {"version": "8.0"}


def test_set_fcv_is_admin_only(client):
    with pytest.raises(OperationFailure) as e:
        client.test.command({"setFeatureCompatibilityVersion": "8.0", "confirm": True})
    assert e.value.code == 13


def test_set_fcv_field_kinds_accepted(client):
    reply = client.admin.command({"setFeatureCompatibilityVersion": "8.0", "fromConfigServer": True,
                                  "changeTimestamp": Timestamp(1, 1)})
    assert reply["ok"] == 1.0
