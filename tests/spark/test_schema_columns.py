"""The column path of the rows (`RowBuilder.record_batch_of`, what both modes of `mongodb-changestream`
yield) against the row-by-row path (`RowBuilder.row`, its reference), over random events: the same
record batches, or the same error; and the cut of a reply's cursor into its events' bytes
(`streams.split_cursor`) against pymongo's decoding."""

from __future__ import annotations

import datetime as dt

import bson
import pytest
from bson import Code, Int64, Timestamp
from bson.datetime_ms import DatetimeMS
from bson.raw_bson import RawBSONDocument
from hypothesis import given, settings
from hypothesis import strategies as hst

from mongosim.spark import schema as S
from mongosim.spark.schema import RowBuilder, schema_ddl
from mongosim.spark.streams import split_cursor
from tests.spark.test_offsets import CHARS, KEYS, bson_values

TEXT = hst.text(alphabet=CHARS, max_size=12)
WALL = hst.datetimes(min_value=dt.datetime(1, 1, 1), max_value=dt.datetime(9999, 12, 31)).map(
    lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000))
DOCUMENT = hst.dictionaries(KEYS, bson_values(), max_size=4)


def _field(name: str, usual, odd=None):
    """(name, value): a usual value, or an odd one (by default any BSON value; `odd=False`: none)."""
    if odd is not False:
        usual = hst.one_of(usual, bson_values() if odd is None else odd)
    return hst.tuples(hst.just(name), usual)


FIELDS = [
    _field("_id", hst.builds(lambda t: {"_data": t}, hst.text(alphabet="0123456789ABCDEF", min_size=2, max_size=40)),
           hst.one_of(bson_values(), hst.just({"_data": Code("x")}))),
    _field("operationType", hst.sampled_from(["insert", "update", "replace", "delete", "invalidate", "drop"]),
           hst.one_of(hst.just(Code("insert")), hst.integers(0, 3))),
    _field("clusterTime", hst.builds(Timestamp, hst.integers(0, 2**32 - 1), hst.integers(0, 2**32 - 1))),
    _field("wallTime", WALL, hst.one_of(hst.integers(-2**62, 2**62).map(DatetimeMS), bson_values())),
    _field("ns", hst.one_of(hst.builds(lambda d, c: {"db": d, "coll": c}, TEXT, TEXT),
                            hst.builds(lambda d: {"db": d}, TEXT)),
           hst.one_of(bson_values(), hst.just({"db": Code("d"), "coll": "c"}))),
    _field("documentKey", DOCUMENT),
    _field("fullDocument", DOCUMENT),
    _field("fullDocumentBeforeChange", DOCUMENT),
    _field("updateDescription", DOCUMENT),
    _field("txnNumber", hst.integers(0, 2**63 - 1).map(Int64), hst.one_of(hst.booleans(), bson_values())),
    _field("lsid", DOCUMENT),
    _field("to", DOCUMENT, False),
    _field("operationDescription", DOCUMENT, False),
    _field("splitEvent", hst.builds(lambda f, o: {"fragment": f, "of": o}, hst.integers(1, 3), hst.integers(1, 3)),
           False),
]


@hst.composite
def events(draw) -> bytes:
    """A change event's BSON: a random subset of the fields, in a random order, usual or odd values."""
    fields = draw(hst.permutations(FIELDS))
    keep = draw(hst.lists(hst.booleans(), min_size=len(fields), max_size=len(fields)))
    doc = dict(draw(f) for f, k in zip(fields, keep) if k)
    return bson.encode(doc)


@pytest.fixture(scope="module")
def builders(spark):
    from pyspark.sql.types import _parse_datatype_string

    return {(raw, shard): RowBuilder.for_schema(_parse_datatype_string(schema_ddl(include_raw=raw, shard_column=shard)))
            for raw in (False, True) for shard in (False, True)}


def _outcome(fn):
    try:
        return fn()
    except (ValueError, TypeError) as exc:  # the rows cannot take a value: the same error either way
        return type(exc)


def test_columns_are_the_rows(builders):
    @settings(max_examples=400, deadline=None)
    @given(hst.lists(events(), max_size=6), hst.sampled_from(sorted(builders)), hst.sampled_from([None, "shard01"]))
    def check(raws, which, shard):
        rb = builders[which]
        by_rows = _outcome(lambda: rb.record_batch([rb.row(raw, shard) for raw in raws]))
        by_columns = _outcome(lambda: rb.record_batch_of(raws, shard))
        if isinstance(by_rows, type):
            assert by_columns == by_rows
        else:
            assert by_columns.equals(by_rows), (by_columns.to_pylist(), by_rows.to_pylist())

    check()


def test_ordinary_events_take_the_column_path(builders, monkeypatch):
    """CRUD events (Code, dates, ObjectIds and all) never fall back to `row`: a NaN does."""
    rb = builders[(True, False)]
    raws = [bson.encode({"_id": {"_data": "82AB"}, "operationType": "insert", "clusterTime": Timestamp(5, 1),
                         "wallTime": dt.datetime(2024, 1, 1), "fullDocument": {"_id": i, "f": Code("g()"), "x": 1.5},
                         "ns": {"db": "d", "coll": "c"}, "documentKey": {"_id": i}}) for i in range(300)]
    expected = rb.record_batch([rb.row(raw) for raw in raws])
    rows, row = [], RowBuilder.row
    monkeypatch.setattr(RowBuilder, "row", lambda self, raw, shard=None: (rows.append(raw), row(self, raw, shard))[1])
    assert rb.record_batch_of(raws).equals(expected) and rows == []
    nan = bson.encode({"operationType": "update", "updateDescription": {"x": float("nan")}})
    assert rb.record_batch_of(raws + [nan]).to_pylist()[-1]["updateDescription"] == '{"x": {"$numberDouble": "NaN"}}'
    assert rows == raws + [nan]


def test_event_batches_cut_the_stream_into_record_batches(builders):
    rb = builders[(False, False)]
    raws = [bson.encode({"_id": {"_data": f"{i:04X}"}, "operationType": "insert", "documentKey": {"_id": i}})
            for i in range(50)]
    got = list(rb.event_batches([raws[:7], [], raws[7:31], raws[31:]], size=16))
    assert [b.num_rows for b in got] == [16, 16, 16, 2]
    assert [r["token"] for b in got for r in b.to_pylist()] == [f"{i:04X}" for i in range(50)]
    plain = RowBuilder()  # no Arrow schema (fullDocumentSchema): rows one by one
    assert list(plain.event_batches([raws[:3], raws[3:5]])) == [plain.row(raw) for raw in raws[:5]]


def test_decode_run_does_not_change_the_rows(builders, monkeypatch):
    rb = builders[(False, True)]
    raws = [bson.encode({"_id": {"_data": f"{i:04X}"}, "operationType": "delete", "documentKey": {"_id": i},
                         "extraField": [i, {"k": Code("c")}]}) for i in range(40)]
    expected = rb.record_batch([rb.row(raw, "s") for raw in raws])
    for run in (1, 3, 40, 1000):
        monkeypatch.setattr(S, "DECODE_RUN", run)
        assert rb.record_batch_of(raws, "s").equals(expected)


# -- a reply's cursor cut into its events --------------------------------------------------------
CURSOR_FIELDS = hst.lists(hst.tuples(hst.sampled_from(["id", "ns", "postBatchResumeToken", "atClusterTime", "x"]),
                                     bson_values()), max_size=4, unique_by=lambda kv: kv[0])


@settings(max_examples=200, deadline=None)
@given(CURSOR_FIELDS, hst.lists(DOCUMENT, max_size=5), hst.integers(0, 4), hst.sampled_from(["nextBatch", "firstBatch"]))
def test_split_cursor_is_pymongos_decoding(fields, batch, at, field):
    items = list(fields)
    items.insert(min(at, len(items)), (field, batch))
    raw = bson.encode(dict(items))
    got = split_cursor(memoryview(raw), field)
    if got is None:  # a type the walk leaves to RawBSONDocument (regular expressions, DBPointers)
        assert b"\x0b" in raw or b"\x0c" in raw
        return
    rest, docs = got
    assert docs == [bytes(d.raw) for d in RawBSONDocument(raw)[field]] and all(type(d) is bytes for d in docs)
    assert rest == bson.encode(dict(kv for kv in items if kv[0] != field))  # the other elements, as they were
    assert split_cursor(raw, "otherBatch") is None
