"""Offsets, options and row conversion of the Spark sources (no Spark session needed)."""

from __future__ import annotations

import datetime as dt

import pytest
from bson import Decimal128, Int64, ObjectId, Timestamp
from hypothesis import strategies as hst

from mongosim.spark import offsets as off
from mongosim.spark.options import StreamOptions
from mongosim.spark.schema import convert, schema_ddl
from mongosim.oplog.resume_token import ResumeTokenData, encode_resume_token, make_high_water_mark_token


def event_token(ts: Timestamp, invalidate: bool = False) -> str:
    return encode_resume_token(ResumeTokenData(cluster_time=ts, txn_op_index=0, from_invalidate=invalidate,
                                               uuid=None, event_identifier={"operationType": "insert",
                                                                            "documentKey": {"_id": 1}}))["_data"]


def test_operation_time_forms():
    assert off.parse_operation_time("1700000000,5") == Timestamp(1700000000, 5)
    assert off.parse_operation_time(" 1700000000 ") == Timestamp(1700000000, 0)
    for bad in ("", "x", "1,2,3", "1.5"):
        with pytest.raises(ValueError, match="startAtOperationTime"):
            off.parse_operation_time(bad)


def test_offsets_order_like_tokens():
    t = Timestamp(1700000000, 7)
    hwm = make_high_water_mark_token(t)["_data"]
    ev = event_token(t)
    assert off.token_cluster_time(ev) == t and off.token_cluster_time(hwm) == t
    assert off.offset_sort_key(off.optime_offset(t)) < ev  # an operation time sorts before its events
    assert off.offset_sort_key(off.optime_offset(t)) <= hwm < ev < event_token(Timestamp(1700000000, 8))
    assert off.token_kind(hwm) == "hwm" and off.token_kind(ev) == "event"
    assert off.token_kind(event_token(t, invalidate=True)) == "invalidate"


def test_streams_open_at_the_offsets_cluster_time():
    t = Timestamp(1700000000, 7)
    assert off.watch_start_kwargs(off.token_offset(event_token(t))) == {"start_at_operation_time": t}
    assert off.watch_start_kwargs(off.optime_offset(t)) == {"start_at_operation_time": t}
    inv = event_token(t, invalidate=True)
    assert off.watch_start_kwargs(off.token_offset(inv)) == {"start_after": {"_data": inv}}


def test_options_are_checked():
    o = StreamOptions.parse({"database": "d", "pipeline": '[{"$match": {"x": {"$numberLong": "1"}}}]',
                             "showexpandedevents": "true", "startAtOperationTime": "5,1"})
    assert o.level == "database" and o.pipeline == [{"$match": {"x": Int64(1)}}]
    assert o.show_expanded_events and o.start_at_operation_time == Timestamp(5, 1)
    assert StreamOptions.parse({}).level == "cluster"
    assert StreamOptions.parse({}).change_stream_spec() == {"allChangesForCluster": True}
    for bad, msg in (({"collection": "c"}, "needs the option database"), ({"pipeline": "{"}, "not valid JSON"),
                     ({"startAfter": "zz"}, "hex"), ({"startAfter": "82", "startAtOperationTime": "1"}, "at most one"),
                     ({"fullDocument": "sometimes"}, "fullDocument")):
        with pytest.raises(ValueError, match=msg):
            StreamOptions.parse(bad)


def test_schema_and_full_document_conversion():
    from pyspark.sql.types import _parse_datatype_string  # noqa: F401  (pyspark importable)
    from pyspark.sql import types as T

    assert schema_ddl().startswith("`token` STRING, `operationType` STRING, `clusterTime` STRUCT<t: BIGINT, i: BIGINT>")
    assert "`fullDocument` STRUCT<a INT>" in schema_ddl(full_document_schema="a INT", include_raw=True)
    assert schema_ddl(include_raw=True, shard_column=True).endswith("`rawEvent` BINARY, `shard` STRING")
    st = T.StructType([T.StructField("i", T.IntegerType()), T.StructField("s", T.StringType()),
                       T.StructField("d", T.DecimalType(10, 2)), T.StructField("t", T.TimestampType()),
                       T.StructField("a", T.ArrayType(T.LongType())), T.StructField("f", T.DoubleType())])
    oid = ObjectId()
    doc = {"i": Int64(5), "s": oid, "d": Decimal128("1.5"), "t": dt.datetime(2024, 1, 1), "a": [1, "x"], "f": 2}
    i, s, d, t, a, f = convert(doc, st)
    assert (i, s, str(d), a, f) == (5, str(oid), "1.50", [1, None], 2.0)
    assert t == dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    assert convert({"i": 2**40, "s": {"x": 1}}, st)[:2] == (None, '{"x": 1}')  # out of range -> null
    assert convert("not a document", st) is None


# -- the fast relaxed Extended JSON of the rows: the same text as bson.json_util ----------------------
CHARS = hst.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")  # what BSON strings hold
KEYS = hst.text(alphabet=CHARS, max_size=4)


def bson_values():
    import datetime as dt

    from bson import Binary, Code, DBRef, MaxKey, MinKey, Regex
    st = hst
    scalars = st.one_of(
        st.none(), st.booleans(), st.integers(-2**31, 2**31 - 1), st.integers(-2**63, 2**63 - 1).map(Int64),
        st.floats(allow_nan=True, allow_infinity=True), st.text(alphabet=CHARS, max_size=8),
        st.binary(max_size=8), st.binary(min_size=16, max_size=16).map(lambda b: Binary(b, 4)),
        st.builds(ObjectId), st.integers(0, 2**32 - 1).map(lambda i: Timestamp(i, 1)),
        st.datetimes(min_value=dt.datetime(1, 1, 1), max_value=dt.datetime(9999, 12, 31))
        .map(lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000)),
        st.decimals(allow_nan=False, places=3, min_value=-10**25, max_value=10**25)  # (34 digits at most)
        .map(lambda d: Decimal128(str(d))),
        st.text(alphabet=CHARS, max_size=5).map(Code), st.just(Code("f()", {"x": 1})), st.just(Regex("^a", "i")),
        st.just(MinKey()), st.just(MaxKey()), st.just(DBRef("c", 1)),
    )
    return st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                         st.dictionaries(KEYS, inner, max_size=4)),
                        max_leaves=12)


def test_fast_json_is_json_util_text():
    import bson
    from hypothesis import given, settings

    from mongosim.spark.schema import decode_event, fast_json, to_json

    @settings(max_examples=300, deadline=None)
    @given(hst.dictionaries(KEYS, bson_values(), max_size=5))
    def check(doc):
        decoded = decode_event(bson.encode(doc))  # as the rows see it: decoded from BSON
        assert fast_json(decoded) == to_json(decoded)

    check()
