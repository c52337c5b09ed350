"""The lsid a command runs under (makeLogicalSessionId) and the IDL checks of `lsid`."""

from __future__ import annotations

import hashlib
import uuid

import pytest
from bson import Binary, Int64

from oplog.errors import MongoError
from router.auth.names import UserName
from router.logical_session_id import make_logical_session_id, user_digest
from shardsim.generic_args import check_generic_arguments

SID = Binary(uuid.uuid4().bytes, 4)
READER = UserName("reader", "shop")


def test_uid_is_the_sha256_of_the_user_at_db_or_of_nothing():
    assert bytes(user_digest(READER)) == hashlib.sha256(b"reader@shop").digest()
    assert bytes(user_digest(None)) == hashlib.sha256(b"").digest()
    assert make_logical_session_id({"id": SID}, READER, True) == {"id": SID, "uid": user_digest(READER)}
    # without auth every session is the anonymous digest's, whoever logged in
    assert make_logical_session_id({"id": SID}, READER, False)["uid"] == user_digest(None)


def test_a_client_may_send_only_its_own_digest_when_auth_is_on():
    own = make_logical_session_id({"id": SID, "uid": user_digest(READER)}, READER, True)
    assert own["uid"] == user_digest(READER)
    with pytest.raises(MongoError) as err:
        make_logical_session_id({"id": SID, "uid": user_digest(UserName("admin", "admin"))}, READER, True)
    assert err.value.code == 13 and "user digest" in err.value.errmsg
    spoof = Binary(b"x" * 32, 0)
    assert make_logical_session_id({"id": SID, "uid": spoof}, None, False)["uid"] == spoof


def test_child_session_fields_keep_their_order_and_need_a_txn_uuid():
    child = make_logical_session_id({"txnUUID": SID, "id": SID, "txnNumber": Int64(3)}, None, False)
    assert list(child) == ["id", "uid", "txnNumber", "txnUUID"]
    with pytest.raises(MongoError) as err:
        make_logical_session_id({"id": SID, "txnNumber": Int64(3)}, None, False)
    assert err.value.code == 72


@pytest.mark.parametrize(("lsid", "code", "text"), [
    ({}, 40414, "'OperationSessionInfo.lsid.id' is missing but a required field"),
    ({"id": "x"}, 14, "'OperationSessionInfo.lsid.id' is the wrong type 'string', expected type 'binData'"),
    ({"id": Binary(b"0" * 16, 0)}, 14, "is the wrong binData type 'general', expected type 'UUID'"),
    ({"id": Binary(b"0" * 5, 4)}, 207, "uuid must be a 16-byte binary field with UUID (4) subtype"),
    ({"id": SID, "zz": 1}, 40415, "'OperationSessionInfo.lsid.zz' is an unknown field."),
    ({"id": SID, "uid": "me"}, 14, "'OperationSessionInfo.lsid.uid' is the wrong type 'string'"),
    ({"id": SID, "txnUUID": SID, "txnNumber": 1.5}, 14, "lsid.txnNumber' is the wrong type 'double'"),
])
def test_a_malformed_lsid_is_refused_with_the_servers_error(lsid, code, text):
    with pytest.raises(MongoError) as err:
        check_generic_arguments("find", {"find": "c", "lsid": lsid})
    assert err.value.code == code and text in err.value.errmsg
