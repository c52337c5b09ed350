"""The lsid a command runs under (makeLogicalSessionId)."""

from __future__ import annotations

import hashlib
import uuid

import pytest
from bson import Binary, Int64

from mongosim.oplog.errors import MongoError
from mongosim.router.auth.names import UserName
from mongosim.router.logical_session_id import make_logical_session_id, user_digest

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
