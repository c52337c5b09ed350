"""The row schema shared by `mongodb-changestream` and `mongodb-oplog`, and event -> row conversion.

One row per change event:

| column                     | type                           | from the event                                   |
|----------------------------|--------------------------------|--------------------------------------------------|
| `token`                    | STRING                         | `_id._data`, the resume token (orders as string) |
| `operationType`            | STRING                         | `operationType`                                  |
| `clusterTime`              | STRUCT<t: BIGINT, i: BIGINT>   | `clusterTime` (BSON Timestamp seconds, increment)|
| `wallTime`                 | TIMESTAMP                      | `wallTime` (UTC)                                 |
| `ns`                       | STRUCT<db: STRING, coll: STRING> | `ns` (`coll` null for dropDatabase, no ns: null) |
| `documentKey`              | STRING                         | relaxed Extended JSON                            |
| `fullDocument`             | STRING (or the given schema)   | relaxed Extended JSON; with the option `fullDocumentSchema` a STRUCT parsed into that schema |
| `fullDocumentBeforeChange` | STRING                         | relaxed Extended JSON                            |
| `updateDescription`        | STRING                         | relaxed Extended JSON                            |
| `txnNumber`                | BIGINT                         | events of a transaction                          |
| `lsid`                     | STRING                         | relaxed Extended JSON, events of a transaction   |
| `extra`                    | STRING                         | every other field (`to`, `collectionUUID`, `operationDescription`, `splitEvent`, fields added by the pipeline, ...) as one relaxed Extended JSON object, null if none |
| `rawEvent`                 | BINARY                         | only with `includeRawEvent=true`: the event's BSON exactly as the server sent it |

A missing field is null.  `fullDocumentSchema` takes a Spark DDL list of
fields (`"_id INT, region STRING, total DOUBLE"`) or a `STRUCT<...>`; values
are converted PERMISSIVE-style: a value that does not fit its field's type
becomes null (an ObjectId or a nested document read as STRING gives its hex /
relaxed JSON).
"""

from __future__ import annotations

import datetime as _dt
import decimal
import gc
import json
from contextlib import contextmanager
from json import encoder as _json_encoder
from itertools import repeat
from typing import Any, Iterable, Iterator, Mapping

import bson
from bson import json_util
from bson.code import Code
from bson.codec_options import CodecOptions, DatetimeConversion, TypeDecoder, TypeRegistry
from bson.decimal128 import Decimal128
from bson.objectid import ObjectId
from bson.timestamp import Timestamp

JSON_OPTIONS = json_util.RELAXED_JSON_OPTIONS
DECODE_OPTIONS = CodecOptions(document_class=dict, tz_aware=False, datetime_conversion=DatetimeConversion.DATETIME_AUTO)

BASE_COLUMNS = [
    ("token", "STRING"),
    ("operationType", "STRING"),
    ("clusterTime", "STRUCT<t: BIGINT, i: BIGINT>"),
    ("wallTime", "TIMESTAMP"),
    ("ns", "STRUCT<db: STRING, coll: STRING>"),
    ("documentKey", "STRING"),
    ("fullDocument", "STRING"),
    ("fullDocumentBeforeChange", "STRING"),
    ("updateDescription", "STRING"),
    ("txnNumber", "BIGINT"),
    ("lsid", "STRING"),
    ("extra", "STRING"),
]
_CONSUMED = frozenset({"_id", "operationType", "clusterTime", "wallTime", "ns", "documentKey", "fullDocument",
                       "fullDocumentBeforeChange", "updateDescription", "txnNumber", "lsid"})


def full_document_ddl(user_schema: str | None) -> str | None:
    """`fullDocumentSchema` as a STRUCT type (a bare field list is wrapped)."""
    if not user_schema:
        return None
    s = user_schema.strip()
    if s.upper().startswith("STRUCT<") and s.endswith(">"):
        return s
    return f"STRUCT<{s}>"


def schema_ddl(*, full_document_schema: str | None = None, include_raw: bool = False,
               shard_column: bool = False) -> str:
    """The DDL of the rows (a Python data source's `schema()` may return it as is)."""
    cols = list(BASE_COLUMNS)
    fd = full_document_ddl(full_document_schema)
    if fd is not None:
        cols = [(n, fd if n == "fullDocument" else t) for n, t in cols]
    if include_raw:
        cols.append(("rawEvent", "BINARY"))
    if shard_column:
        cols.append(("shard", "STRING"))
    return ", ".join(f"`{n}` {t}" for n, t in cols)


def to_json(value: Any) -> str | None:
    """Relaxed Extended JSON (`bson.json_util`)."""
    if value is None:
        return None
    return json_util.dumps(value, json_options=JSON_OPTIONS)


def _ejson_default(value: Any) -> Any:
    return json_util.default(value, json_options=JSON_OPTIONS)


_dumps = json.JSONEncoder(default=_ejson_default, allow_nan=False, check_circular=False).encode


def _has_code(value: Any) -> bool:
    """Does a decoded value hold JavaScript code?  `Code` is a `str` subclass, which the C JSON encoder
    would write as a plain string (without calling `default`), so such values take `json_util`'s path."""
    stack = [value]
    pop, extend = stack.pop, stack.extend
    while stack:
        x = pop()
        t = type(x)
        if t is dict:
            extend(x.values())
        elif t is list:
            extend(x)
        elif t is Code:
            return True
    return False


def _code_free_json(value: Any) -> str | None:
    """`to_json` of a value known to hold no `Code` (see `fast_json`)."""
    if value is None:
        return None
    try:
        return _dumps(value)
    except ValueError:  # NaN or an infinity: JSON has no such number
        return to_json(value)


def fast_json(value: Any) -> str | None:
    """`to_json(value)`, the same text, most of it written by the stdlib's C JSON encoder: `json_util`
    walks every value in Python, which is most of the cost of a row; here only the values JSON has no
    type for go through `json_util.default` (ObjectId, dates, binary, ...).  Code and non-finite floats
    take `json_util`'s own path."""
    return to_json(value) if _has_code(value) else _code_free_json(value)


def _utc(value: Any) -> _dt.datetime | None:
    if isinstance(value, _dt.datetime):
        return value.replace(tzinfo=_dt.timezone.utc) if value.tzinfo is None else value.astimezone(_dt.timezone.utc)
    return None


def _ns(value: Any) -> tuple | None:
    if type(value) is not dict:
        return None
    return (value.get("db"), value.get("coll"))


def _cluster_time(value: Any) -> tuple | None:
    if isinstance(value, Timestamp):
        return (int(value.time), int(value.inc))
    return None


def decode_event(raw: bytes) -> dict:
    return bson.decode(raw, codec_options=DECODE_OPTIONS)


# -- a batch of events at once, column by column ----------------------------------------------
class _CodeValue:
    """JavaScript code as the column path decodes it: not a `str` (as `Code` is), so the C JSON encoder
    hands it to `default` instead of writing it as a plain string, and no event needs `_has_code`'s
    walk."""

    __slots__ = ("code",)

    def __init__(self, code: Code) -> None:
        self.code = code


class _WrapCode(TypeDecoder):
    bson_type = Code

    def transform_bson(self, value: Any) -> _CodeValue:
        return _CodeValue(value)


COLUMN_DECODE_OPTIONS = DECODE_OPTIONS.with_options(type_registry=TypeRegistry([_WrapCode()]))


def _column_default(value: Any) -> Any:
    if type(value) is _CodeValue:
        value = value.code
    return json_util.default(value, json_options=JSON_OPTIONS)


def _column_encoder():
    """(value, 0) -> the chunks of the relaxed Extended JSON of a value decoded with
    COLUMN_DECODE_OPTIONS (`fast_json`'s text, once joined): the C encoder built once, called without
    `JSONEncoder.encode`'s Python frames.  Raises ValueError on NaN or an infinity (JSON has no such
    number)."""
    make = _json_encoder.c_make_encoder
    if make is None:  # no C accelerator: the stdlib's own path
        encode = json.JSONEncoder(default=_column_default, allow_nan=False, check_circular=False).encode
        return lambda value, _level: (encode(value),)
    return make(None, _column_default, _json_encoder.encode_basestring_ascii, None, ": ", ", ", False, False, False)


_column_encode = _column_encoder()
# events decoded at a time: their objects are still in the CPU's cache when the columns read them
# (measured: 128 at a time, ~25% less CPU per event than 2048)
DECODE_RUN = 128


@contextmanager
def _collector_paused() -> Iterator[None]:
    """No cyclic garbage collection while a record batch's columns are built.  The decoded events hold
    no reference cycles and are freed run by run, but a collection that starts while a run is alive
    moves its objects to an older generation, and enough of them start a full collection, which walks
    every object of the process (in a Spark worker, pyspark's and pyarrow's too): measured, 7-13% of
    the reader's CPU time.  The collector is left as it was found (a host that disabled it keeps it
    disabled)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _extend_columns(columns: list[list], evs: list[dict]) -> None:
    """Append the base columns' values (`BASE_COLUMNS`, as `RowBuilder.row` gives them) of the decoded
    events `evs` (COLUMN_DECODE_OPTIONS) to `columns`, one pass per column."""
    enc, join, consumed = _column_encode, "".join, _CONSUMED
    (token, op, cluster_time, wall, ns, document_key, full_document, before, update, txn, lsid, extra) = columns

    def field(name: str) -> list:
        return list(map(dict.get, evs, repeat(name)))

    token += [v.get("_data") if type(v) is dict else None for v in field("_id")]
    op += field("operationType")
    cluster_time += [(v.time, v.inc) if isinstance(v, Timestamp) else None for v in field("clusterTime")]
    wall += [v if isinstance(v, _dt.datetime) else None for v in field("wallTime")]  # naive UTC, as Arrow reads it
    ns += [(v.get("db"), v.get("coll")) if type(v) is dict else None for v in field("ns")]
    for col, name in ((document_key, "documentKey"), (full_document, "fullDocument"),
                      (before, "fullDocumentBeforeChange"), (update, "updateDescription"), (lsid, "lsid")):
        col += [None if v is None else join(enc(v, 0)) for v in field(name)]
    txn += [int(v) if isinstance(v, int) else None for v in field("txnNumber")]
    extra += [None if e.keys() <= consumed else join(enc({k: v for k, v in e.items() if k not in consumed}, 0))
              for e in evs]


class RowBuilder:
    """Event (raw BSON) -> row tuple, for one schema.  Picklable (no Spark types kept)."""

    def __init__(self, full_document_type: Any = None, include_raw: bool = False, shard_column: bool = False,
                 arrow_schema: Any = None) -> None:
        self.full_document_type = full_document_type  # a pyspark StructType, or None for JSON
        self._convert = None
        self.include_raw = include_raw
        self.shard_column = shard_column
        self.arrow_schema = arrow_schema  # the reader's rows as Arrow (see `record_batch`), when known

    @classmethod
    def for_schema(cls, schema: Any) -> "RowBuilder":
        """Derive the options from the (Spark-parsed) schema handed to the reader."""
        from pyspark.sql.pandas.types import to_arrow_schema
        from pyspark.sql.types import StringType

        names = schema.fieldNames()
        fd = schema["fullDocument"].dataType
        plain = isinstance(fd, StringType)
        # the Arrow schema Spark checks a reader's record batches against (plan_data_source_read.py)
        arrow = to_arrow_schema(schema, timezone="UTC") if plain else None
        return cls(None if plain else fd, "rawEvent" in names, "shard" in names, arrow)

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_convert": None}

    def record_batch(self, rows: list[tuple]) -> Any:
        """Rows (tuples in the schema's order) as one `pyarrow.RecordBatch`, for a reader to yield.

        Spark converts the tuples a Python data source yields value by value through a Python
        converter per column; a reader that yields record batches skips that (pyarrow builds each
        column in C).  Only for the plain schema (`arrow_schema` set); `fullDocumentSchema` rows are
        yielded as tuples."""
        return self._arrow(list(zip(*rows)) if rows else [()] * len(self.arrow_schema))

    def _arrow(self, columns: list) -> Any:
        import pyarrow as pa

        schema = self.arrow_schema
        return pa.RecordBatch.from_arrays([pa.array(col, type=f.type) for col, f in zip(columns, schema)],
                                          schema=schema)

    def event_batches(self, raw_batches: Iterable[list[bytes]], shard: str | None = None,
                      size: int = 2048) -> Iterator[Any]:
        """Lists of raw events (as a stream hands them out) as record batches of up to `size` rows, built
        column by column (`record_batch_of`); rows one by one without an Arrow schema."""
        if self.arrow_schema is None:
            for raws in raw_batches:
                for raw in raws:
                    yield self.row(raw, shard)
            return
        pending: list[bytes] = []
        for raws in raw_batches:
            pending += raws
            while len(pending) >= size:
                yield self.record_batch_of(pending[:size], shard)
                del pending[:size]
        if pending:
            yield self.record_batch_of(pending, shard)

    def record_batch_of(self, raws: list[bytes], shard: str | list | None = None, extra: tuple = ()) -> Any:
        """The rows of `raws` (`row` of each) as one `pyarrow.RecordBatch`, built column by column: the
        events decoded in one call, each column one pass over them, each document column's JSON by the
        C encoder (`_column_encode`), no row tuples.  `shard` is every row's shard, or a list of each
        row's; `extra` columns (lists as long as `raws`) follow the schema's own.  An event the columns
        cannot take as they are (a non-finite float, a value of the wrong type for its column) sends
        the batch through `row`, which gives its exact value or its error."""
        try:
            return self._record_batch_of(raws, shard, extra)
        except (ValueError, TypeError):  # (pyarrow's ArrowInvalid / ArrowTypeError are these)
            shards = shard if isinstance(shard, list) else [shard] * len(raws)
            return self.record_batch([self.row(raw, sh) + tuple(col[i] for col in extra)
                                      for i, (raw, sh) in enumerate(zip(raws, shards))])

    def _record_batch_of(self, raws: list[bytes], shard: str | list | None, extra: tuple) -> Any:
        columns: list[list] = [[] for _ in BASE_COLUMNS]
        with _collector_paused():
            for k in range(0, len(raws), DECODE_RUN):
                _extend_columns(columns, bson.decode_all(b"".join(raws[k:k + DECODE_RUN]), COLUMN_DECODE_OPTIONS))
        if self.include_raw:
            columns.append([bytes(raw) for raw in raws])
        if self.shard_column:
            columns.append(shard if isinstance(shard, list) else [shard] * len(raws))
        columns.extend(extra)
        return self._arrow(columns)

    def batches(self, rows: Iterator[tuple], size: int = 2048) -> Iterator[Any]:
        """`rows` as record batches of `size` rows (or as they are, without an Arrow schema)."""
        if self.arrow_schema is None:
            yield from rows
            return
        chunk: list[tuple] = []
        for row in rows:
            chunk.append(row)
            if len(chunk) >= size:
                yield self.record_batch(chunk)
                chunk = []
        if chunk:
            yield self.record_batch(chunk)

    def row(self, raw: bytes, shard: str | None = None) -> tuple:
        ev = decode_event(raw)
        tok = ev.get("_id")
        token = tok.get("_data") if type(tok) is dict else None
        fd = ev.get("fullDocument")
        js = to_json if _has_code(ev) else _code_free_json  # (one look for Code over the whole event)
        if self.full_document_type is not None:
            if self._convert is None:
                self._convert = make_converter(self.full_document_type)
            fd_col = self._convert(fd)
        else:
            fd_col = js(fd)
        rest = {k: v for k, v in ev.items() if k not in _CONSUMED}
        txn = ev.get("txnNumber")
        out = (
            token,
            ev.get("operationType"),
            _cluster_time(ev.get("clusterTime")),
            _utc(ev.get("wallTime")),
            _ns(ev.get("ns")),
            js(ev.get("documentKey")),
            fd_col,
            js(ev.get("fullDocumentBeforeChange")),
            js(ev.get("updateDescription")),
            int(txn) if isinstance(txn, int) else None,
            js(ev.get("lsid")),
            js(rest) if rest else None,
        )
        if self.include_raw:
            out += (bytes(raw),)
        if self.shard_column:
            out += (shard,)
        return out


# -- fullDocumentSchema: BSON values -> Spark values ----------------------------------------
def convert(value: Any, dtype: Any) -> Any:
    """Convert a decoded BSON value to what Spark expects for `dtype`; null if it does not fit."""
    return make_converter(dtype)(value)


def _to_string(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, ObjectId):
        return str(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, Decimal128)):
        return str(value)
    if isinstance(value, _dt.datetime):
        return _utc(value).isoformat()
    return to_json(value)


def _integer(bits: int):
    lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1)

    def conv(value: Any) -> int | None:
        if isinstance(value, bool):
            return None
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        elif isinstance(value, Decimal128):
            d = value.to_decimal()
            value = int(d) if d.is_finite() and d == d.to_integral_value() else None
        if isinstance(value, int) and lo <= value < hi:
            return int(value)
        return None

    return conv


def _floating(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, Decimal128):
        return float(value.to_decimal())
    return None


def _decimal(precision: int, scale: int):
    quantum = decimal.Decimal(1).scaleb(-scale)

    def conv(value: Any) -> decimal.Decimal | None:
        if isinstance(value, bool):
            return None
        if isinstance(value, Decimal128):
            d = value.to_decimal()
        elif isinstance(value, float):
            d = decimal.Decimal(str(value))
        elif isinstance(value, int):
            d = decimal.Decimal(int(value))
        else:
            return None
        if not d.is_finite():
            return None
        try:
            q = d.quantize(quantum)
        except decimal.InvalidOperation:
            return None
        return q if len(q.as_tuple().digits) <= precision else None

    return conv


def make_converter(dtype: Any):
    """A function BSON value -> Spark value for `dtype` (built once per schema)."""
    from pyspark.sql import types as T

    def nullable(fn):
        return lambda v: None if v is None else fn(v)

    if isinstance(dtype, T.StructType):
        fields = [(f.name, make_converter(f.dataType)) for f in dtype.fields]

        def struct(v: Any) -> tuple | None:
            if not isinstance(v, Mapping):
                return None
            return tuple(conv(v.get(name)) for name, conv in fields)

        return nullable(struct)
    if isinstance(dtype, T.ArrayType):
        elem = make_converter(dtype.elementType)
        return nullable(lambda v: [elem(x) for x in v] if isinstance(v, list) else None)
    if isinstance(dtype, T.MapType):
        val = make_converter(dtype.valueType)
        if not isinstance(dtype.keyType, T.StringType):
            return lambda v: None
        return nullable(lambda v: {str(k): val(x) for k, x in v.items()} if isinstance(v, Mapping) else None)
    if isinstance(dtype, T.StringType):
        return nullable(_to_string)
    if isinstance(dtype, T.BooleanType):
        return lambda v: v if isinstance(v, bool) else None
    for cls, bits in ((T.ByteType, 8), (T.ShortType, 16), (T.IntegerType, 32), (T.LongType, 64)):
        if isinstance(dtype, cls):
            return nullable(_integer(bits))
    if isinstance(dtype, (T.FloatType, T.DoubleType)):
        return nullable(_floating)
    if isinstance(dtype, T.DecimalType):
        return nullable(_decimal(dtype.precision, dtype.scale))
    if isinstance(dtype, T.TimestampType):
        return _utc
    if type(dtype).__name__ == "TimestampNTZType":
        return lambda v: v if isinstance(v, _dt.datetime) else None
    if isinstance(dtype, T.DateType):
        return lambda v: v.date() if isinstance(v, _dt.datetime) else None
    if isinstance(dtype, T.BinaryType):
        return lambda v: bytes(v) if isinstance(v, (bytes, bson.Binary)) else None
    return lambda v: None
