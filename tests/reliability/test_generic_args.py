"""The generic command arguments as the server's IDL parser checks them: `lsid`, `maxTimeMS`."""

from __future__ import annotations

import uuid

import pytest
from bson import Binary, Decimal128, Int64

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.generic_args import check_generic_arguments, max_time_ms

SID = Binary(uuid.uuid4().bytes, 4)


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


@pytest.mark.parametrize(("value", "expected"), [
    (Int64(5), 5), (5.0, 5), (0, 0), (2**31 - 1, 2**31 - 1),
    (Decimal128("7"), 7),
    (-1, "out of range"), (2**31, "out of range"), (float("inf"), "out of range"),
    (1.5, "non-integral"), (float("nan"), "non-integral"), (Decimal128("NaN"), "non-integral"),
])
def test_max_time_ms_is_parsed_as_the_server_does(value, expected):
    cmd = {"find": "c", "maxTimeMS": value}
    if isinstance(expected, int):
        check_generic_arguments("find", cmd)
        assert max_time_ms(cmd) == expected
    else:
        with pytest.raises(MongoError) as err:
            check_generic_arguments("find", cmd)
        assert err.value.code == 2 and expected in err.value.errmsg
