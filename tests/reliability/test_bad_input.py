"""Command-level bad input through pymongo and the wire: each mistake gets the server's error code.

Every case runs against a sharded cluster (through the router) and a replica
set; none may produce an InternalError, and the server keeps working after
each.  Covered: wrong types for every change-stream option, bad enum values,
unknown fields and stages, stages in the wrong place, conflicting options,
malformed resume tokens (not hex, empty, wrong version, bad _typeBits, wrong
_data type), a token from another stream, resumeAfter an invalidate, and
getMore on another namespace / an unknown cursor / with bad arguments.
"""

from __future__ import annotations

import pymongo
import pytest
from bson import Binary, Decimal128, Int64, Timestamp
from pymongo.errors import OperationFailure

from mongosim import Cluster
from mongosim.oplog import keystring

WRONG_TYPES = {
    # option: (a value of the wrong type, the BSON type the server expects)
    "resumeAfter": ("token", "object"),
    "startAfter": (1, "object"),
    "startAtOperationTime": (5, "timestamp"),
    "fullDocument": (True, "string"),
    "fullDocumentBeforeChange": (1.5, "string"),
    "allChangesForCluster": ("yes", "bool"),
    "showExpandedEvents": (1, "bool"),
    "showMigrationEvents": ([], "bool"),
}


@pytest.fixture(scope="module", params=["sharded", "replset"])
def deployment(request):
    with Cluster(shards=2, port=0, instant_hwm=True, topology=request.param) as cluster:
        client = pymongo.MongoClient(cluster.uri, serverSelectionTimeoutMS=10000)
        client.bad.c.insert_one({"_id": "seed"})
        client.bad.other.insert_one({"_id": "seed"})
        yield request.param, client
        client.close()


def _agg(client, pipeline, coll="c", db="bad", **kw):
    return client[db].command("aggregate", coll, pipeline=pipeline, cursor=kw.pop("cursor", {}), **kw)


def _code(fn) -> tuple[int, OperationFailure]:
    with pytest.raises(OperationFailure) as info:
        fn()
    err = info.value
    assert err.code != 1, f"InternalError: {err}"
    return err.code, err


@pytest.fixture(autouse=True)
def still_alive(deployment):
    yield
    _topology, client = deployment
    assert client.admin.command("ping")["ok"] == 1


@pytest.mark.parametrize("option", sorted(WRONG_TYPES))
def test_wrong_type_for_each_change_stream_option(deployment, option):
    _topology, client = deployment
    value, expected = WRONG_TYPES[option]
    code, err = _code(lambda: _agg(client, [{"$changeStream": {option: value}}]))
    assert code == 14, err  # TypeMismatch
    assert f"BSON field '$changeStream.{option}' is the wrong type" in str(err)
    assert f"expected type '{expected}'" in str(err)


@pytest.mark.parametrize("spec,code", [
    ({"fullDocument": "bogus"}, 2),  # BadValue: not an enum value
    ({"fullDocumentBeforeChange": "sometimes"}, 2),
    ({"noSuchOption": 1}, 40415),  # IDLUnknownField
    ({"resumeAfter": {"_data": "00"}, "startAfter": {"_data": "00"}}, None),  # either token error or 50865
])
def test_bad_values_and_unknown_fields(deployment, spec, code):
    _topology, client = deployment
    got, err = _code(lambda: _agg(client, [{"$changeStream": spec}]))
    if code is not None:
        assert got == code, err


def test_stage_argument_and_conflicts(deployment):
    topology, client = deployment
    assert _code(lambda: _agg(client, [{"$changeStream": 1}]))[0] == 50808
    tok = _current_token(client)
    both = {"resumeAfter": tok, "startAfter": tok}
    assert _code(lambda: _agg(client, [{"$changeStream": both}]))[0] == 50865
    mixed = {"resumeAfter": tok, "startAtOperationTime": Timestamp(1, 1)}
    assert _code(lambda: _agg(client, [{"$changeStream": mixed}]))[0] == 40674
    # allChangesForCluster only on admin with no collection
    assert _code(lambda: _agg(client, [{"$changeStream": {"allChangesForCluster": True}}]))[0] == 72
    # change streams on internal databases
    # (mongos refuses the whole 'local' database first: IllegalOperation)
    assert _code(lambda: _agg(client, [{"$changeStream": {}}], db="local", coll="x"))[0] == (
        20 if topology == "sharded" else 73)
    # the cursor option is required
    code, _ = _code(lambda: client.bad.command("aggregate", "c", pipeline=[{"$changeStream": {}}]))
    assert code == 9
    if topology == "sharded":
        code, _ = _code(lambda: _agg(client, [{"$changeStream": {"showMigrationEvents": True}}]))
        assert code == 31123


@pytest.mark.parametrize("pipeline,code", [
    ([{"$changeStream": {}}, {"$bogus": {}}], 40324),  # unrecognized stage
    ([{"$match": {}}, {"$changeStream": {}}], 40602),  # not the first stage
    ([{"$changeStream": {}}, {"$changeStream": {}}], 40602),
    ([{"$changeStream": {}}, {"$group": {"_id": 1}}], 20),  # IllegalOperation: not allowed after it
    ([{"$changeStream": {}}, {"$match": {}, "$project": {"a": 1}}], 40323),  # two fields in one stage
    ([{"$changeStream": {}}, {"$changeStreamSplitLargeEvent": {}}, {"$match": {}}], 7182802),
])
def test_unknown_and_misplaced_stages(deployment, pipeline, code):
    _topology, client = deployment
    got, err = _code(lambda: _agg(client, pipeline))
    assert got == code, err


def _current_token(client) -> dict:
    with client.bad.c.watch() as s:
        client.bad.c.insert_one({})
        ev = s.next()
    return ev["_id"]


def _v3_token() -> dict:
    key, _tb = keystring.encode_key([Timestamp(1_700_000_000, 1), 3, 0, 0, False, None])
    return {"_data": key.hex().upper()}


@pytest.mark.parametrize("token,code", [
    ({"_data": "not hex!"}, 9),  # FailedToParse: not a valid hex string
    ({"_data": "ABC"}, 9),  # odd length
    ({"_data": 5}, 40647),  # _data of the wrong type
    ({}, 40647),  # _data missing
    ({"_data": ""}, 40649),  # empty token
    ("v3", 50795),  # a version the server does not know
    ({"_data": "826553F1000000000129", "_typeBits": "x"}, 40648),  # _typeBits of the wrong type
])
def test_malformed_resume_tokens(deployment, token, code):
    _topology, client = deployment
    token = _v3_token() if token == "v3" else token
    for option in ("resumeAfter", "startAfter"):
        got, err = _code(lambda: _agg(client, [{"$changeStream": {option: token}}]))
        assert got == code, (option, err)


def test_token_from_another_stream(deployment):
    """A token of an event in `bad.other` used to resume a stream on `bad.c`: the stream
    never produced it, so once the stream passes its point it fails with
    ChangeStreamFatalError (280), as the server's EnsureResumeTokenPresent stage does."""
    _topology, client = deployment
    with client.bad.other.watch() as s:
        client.bad.other.insert_one({"x": 1})
        foreign = s.next()["_id"]
    client.bad.c.insert_one({"after": True})
    with pytest.raises(OperationFailure) as info:
        with client.bad.c.watch(resume_after=foreign, max_await_time_ms=200) as s:
            for _ in range(20):
                s.try_next()
    assert info.value.code == 280, info.value
    assert info.value.has_error_label("NonResumableChangeStreamError")


def test_resume_after_an_invalidate_is_refused_start_after_is_not(deployment):
    _topology, client = deployment
    client.bad.inv.insert_one({"_id": 1})
    with client.bad.inv.watch() as s:
        client.bad.inv.drop()
        events = [s.next(), s.next()]
    assert [e["operationType"] for e in events] == ["drop", "invalidate"]
    inv = events[1]["_id"]
    code, _ = _code(lambda: _agg(client, [{"$changeStream": {"resumeAfter": inv}}], coll="inv"))
    assert code == 260  # InvalidResumeToken
    reply = _agg(client, [{"$changeStream": {"startAfter": inv}}], coll="inv")
    assert reply["ok"] == 1


def test_get_more_on_another_namespace_and_bad_get_mores(deployment):
    _topology, client = deployment
    reply = _agg(client, [{"$changeStream": {}}])
    cid = reply["cursor"]["id"]
    assert cid
    code, err = _code(lambda: client.bad.command("getMore", cid, collection="other"))
    assert code == 13, err  # Unauthorized: the cursor belongs to bad.c
    code, _ = _code(lambda: client.elsewhere.command("getMore", cid, collection="c"))
    assert code == 13
    assert _code(lambda: client.bad.command("getMore", Int64(12345), collection="c"))[0] == 43  # CursorNotFound
    assert _code(lambda: client.bad.command("getMore", "abc", collection="c"))[0] == 14
    assert _code(lambda: client.bad.command("getMore", cid, collection=5))[0] == 14
    assert _code(lambda: client.bad.command("getMore", cid, collection="c", batchSize=-1))[0] == 2
    assert _code(lambda: client.bad.command("getMore", cid, collection="c", maxTimeMS="x"))[0] == 14
    assert _code(lambda: client.bad.command("getMore", cid, collection="c", txnNumber=[1]))[0] == 14
    # the cursor survived all of that on its own namespace
    more = client.bad.command("getMore", cid, collection="c", maxTimeMS=10)
    assert more["ok"] == 1
    client.bad.command("killCursors", "c", cursors=[cid])


def test_wrong_generic_argument_types_on_commands(deployment):
    _topology, client = deployment
    for cmd in ({"find": "c", "cursor": b"x"}, {"listCollections": 1, "cursor": 5}, {"endSessions": [5]},
                {"killSessions": "x"}, {"insert": "c", "documents": [{}], "txnNumber": Timestamp(1, 1)},
                {"insert": "c", "documents": [{}], "writeConcern": 1},
                {"find": "c", "readConcern": "majority"}):  # (pymongo sets lsid itself)
        code, err = _code(lambda: client.bad.command(cmd))
        assert code == 14, (cmd, err)


@pytest.mark.parametrize("field,value,code", [("limit", float("nan"), 2), ("limit", 1.5, 2), ("limit", "3", 14),
                                              ("skip", -1, 2), ("skip", float("inf"), 2)])
def test_count_arguments(deployment, field, value, code):
    _topology, client = deployment
    assert _code(lambda: client.bad.command({"count": "c", field: value}))[0] == code
    assert client.bad.command({"count": "c", "limit": -1.0})["n"] == 1  # a negative limit counts as its absolute value


@pytest.mark.parametrize("value", [Decimal128("NaN"), -5, 1.5, 2**40])
@pytest.mark.parametrize("command", ["find", "findAndModify", "getMore"])
def test_a_bad_max_time_ms_is_bad_value(deployment, command, value):
    _topology, client = deployment
    if command == "getMore":
        cid = client.bad.command("find", "c", batchSize=0)["cursor"]["id"]
        code, _err = _code(lambda: client.bad.command("getMore", cid, collection="c", maxTimeMS=value))
    elif command == "find":
        code, _err = _code(lambda: client.bad.command("find", "c", maxTimeMS=value))
    else:
        code, _err = _code(lambda: client.bad.command("findAndModify", "c", query={}, update={"$set": {"a": 1}},
                                                       maxTimeMS=value))
    assert code == 2


@pytest.mark.parametrize("command, expected", [
    ({"find": "c", "collation": {"locale": "xx"}}, (2, "Field 'locale' is invalid")),
    ({"aggregate": "c", "pipeline": [], "cursor": {}, "collation": {"locale": "en", "strength": 9}},
     (51024, "'strength' value must be <= 5")),
    ({"count": "c", "collation": {"locale": "en", "bogus": 1}}, (40415, "'collation.bogus' is an unknown field")),
    ({"distinct": "c", "key": "a", "collation": "fr"}, (14, "'distinct.collation' is the wrong type")),
    ({"findAndModify": "c", "query": {}, "update": {"$set": {"x": 1}}, "collation": {"strength": 2}},
     (40414, "'collation.locale' is missing")),
    ({"createIndexes": "c", "indexes": [{"key": {"s": 1}, "name": "s_1", "collation": {"locale": "en", "version": "1"}}]},
     (161, "Requested collation version 1")),
    ({"create": "c2", "collation": {"locale": "fr_CA", "strength": 1}}, (2, "'backwards' is invalid")),
])
def test_a_bad_collation_is_refused_before_anything_runs(deployment, command, expected):
    _topology, client = deployment
    before = list(client.bad.c.find())
    indexes = sorted(ix["name"] for ix in client.bad.c.list_indexes())
    code, err = _code(lambda: client.bad.command(dict(command)))
    assert code == expected[0] and expected[1] in err.details["errmsg"]
    assert list(client.bad.c.find()) == before
    assert sorted(ix["name"] for ix in client.bad.c.list_indexes()) == indexes
    assert "c2" not in client.bad.list_collection_names()


def test_a_bad_collation_on_one_write_statement_is_that_statements_error(deployment):
    _topology, client = deployment
    reply = client.bad.command("update", "c", updates=[
        {"q": {"_id": "seed"}, "u": {"$set": {"first": 1}}},
        {"q": {}, "u": {"$set": {"second": 1}}, "collation": {"locale": "de_XX"}}])
    assert reply["nModified"] == 1
    assert [(e["index"], e["code"]) for e in reply["writeErrors"]] == [(1, 2)]
    assert "Did you mean 'de'?" in reply["writeErrors"][0]["errmsg"]
    assert client.bad.c.find_one({"_id": "seed"})["first"] == 1
    assert client.bad.c.count_documents({"second": 1}) == 0


@pytest.mark.parametrize("rp, code, message", [
    ({"mode": "secondaryPreferred", "maxStalenessSeconds": 10}, 160,
     "maxStalenessSeconds value can not be less than 90"),
    ({"mode": "nearest", "maxStalenessSeconds": -1}, 2, "maxStalenessSeconds must be a non-negative integer"),
    ({"mode": "primary", "maxStalenessSeconds": 120}, 2, "maxStalenessSeconds can not be set for the primary mode"),
    ({"mode": "nearest", "maxStalenessSeconds": "90"}, 14,
     'Expected field "maxStalenessSeconds" to have numeric type, but found string'),
    ({"mode": "nearest", "maxStalenessSeconds": 90.5}, 2, 'Expected field "maxStalenessSeconds" to have a value '
                                                          "exactly representable as a 64-bit integer"),
    ({}, 4, 'Missing expected field "mode"'),
    ({"mode": 1}, 14, '"mode" had the wrong type. Expected string, found int'),
    ({"mode": "fastest"}, 2, "Could not parse $readPreference mode 'fastest'. Only the modes 'primary', "
                             "'primaryPreferred', 'secondary', 'secondaryPreferred', and 'nearest' are supported."),
    ({"mode": "primary", "tags": [{"dc": "east"}]}, 2, "Only empty tags are allowed with primary read preference"),
    ({"mode": "nearest", "tags": {"dc": "east"}}, 14, '"tags" had the wrong type. Expected array, found object'),
    ({"mode": "primary", "hedge": {}}, 72, 'cannot enable hedging for $readPreference mode "primaryOnly"'),
    ({"mode": "nearest", "hedge": True}, 14, "hedge field must be of type object if provided"),
])
def test_a_bad_read_preference_is_refused(deployment, rp, code, message):
    """mongod and mongos parse `$readPreference` before the command (ReadPreferenceSetting::fromInnerBSON)."""
    _topology, client = deployment
    got, err = _code(lambda: client.bad.command("find", "c", **{"$readPreference": rp}))
    assert got == code and err.details["errmsg"].startswith(message)


def test_good_read_preferences_are_accepted(deployment):
    _topology, client = deployment
    for rp in ({"mode": "secondaryPreferred", "maxStalenessSeconds": 90}, {"mode": "primary", "tags": [{}]},
               {"mode": "nearest", "tags": [{"dc": "east"}, {}], "hedge": {"enabled": False}},
               {"mode": "primary", "hedge": {"enabled": False}}, {"mode": "primaryPreferred", "maxStalenessSeconds": 0}):
        reply = client.bad.command("find", "c", filter={"_id": "seed"}, projection={"_id": 1},
                                   **{"$readPreference": rp})
        assert reply["cursor"]["firstBatch"] == [{"_id": "seed"}]


@pytest.mark.parametrize("params, code, message", [
    ({"apiVersion": "2"}, 322, "Cannot accept API version 2"),
    ({"apiVersion": "3"}, 322, 'API version must be "1"'),
    ({"apiStrict": True}, 4886600, "Provided apiStrict and/or apiDeprecationErrors without passing apiVersion"),
    ({"apiDeprecationErrors": False}, 4886600,
     "Provided apiStrict and/or apiDeprecationErrors without passing apiVersion"),
    ({"apiVersion": 1}, 14, "BSON field 'APIParametersFromClient.apiVersion' is the wrong type 'int', expected type "
                            "'string'"),
    ({"apiVersion": "1", "apiStrict": 1}, 14, "BSON field 'APIParametersFromClient.apiStrict' is the wrong type"),
])
def test_bad_api_parameters_are_refused(deployment, params, code, message):
    """initializeAPIParameters: every command but the handshake's and authentication's checks them."""
    _topology, client = deployment
    got, err = _code(lambda: client.bad.command("find", "c", **params))
    assert got == code and err.details["errmsg"].startswith(message)
    assert client.bad.command("find", "c", filter={"_id": "seed"}, apiVersion="1", apiStrict=True,
                              apiDeprecationErrors=True)["cursor"]["firstBatch"][0]["_id"] == "seed"
    assert client.admin.command("hello", apiVersion="2")["ok"] == 1.0  # (skipApiVersionCheck)
