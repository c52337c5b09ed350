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
from typing import Any, Mapping

import bson
from bson import json_util
from bson.codec_options import CodecOptions, DatetimeConversion
from bson.decimal128 import Decimal128
from bson.int64 import Int64
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
    if value is None:
        return None
    return json_util.dumps(value, json_options=JSON_OPTIONS)


def _utc(value: Any) -> _dt.datetime | None:
    if isinstance(value, _dt.datetime):
        return value.replace(tzinfo=_dt.timezone.utc) if value.tzinfo is None else value.astimezone(_dt.timezone.utc)
    return None


def _ns(value: Any) -> tuple | None:
    if not isinstance(value, Mapping):
        return None
    return (value.get("db"), value.get("coll"))


def _cluster_time(value: Any) -> tuple | None:
    if isinstance(value, Timestamp):
        return (int(value.time), int(value.inc))
    return None


def decode_event(raw: bytes) -> dict:
    return bson.decode(raw, codec_options=DECODE_OPTIONS)


class RowBuilder:
    """Event (raw BSON) -> row tuple, for one schema.  Picklable (no Spark types kept)."""

    def __init__(self, full_document_type: Any = None, include_raw: bool = False, shard_column: bool = False) -> None:
        self.full_document_type = full_document_type  # a pyspark StructType, or None for JSON
        self.include_raw = include_raw
        self.shard_column = shard_column

    @classmethod
    def for_schema(cls, schema: Any) -> "RowBuilder":
        """Derive the options from the (Spark-parsed) schema handed to the reader."""
        from pyspark.sql.types import StringType

        names = schema.fieldNames()
        fd = schema["fullDocument"].dataType
        return cls(None if isinstance(fd, StringType) else fd, "rawEvent" in names, "shard" in names)

    def row(self, raw: bytes, shard: str | None = None) -> tuple:
        ev = decode_event(raw)
        tok = ev.get("_id")
        token = tok.get("_data") if isinstance(tok, Mapping) else None
        fd = ev.get("fullDocument")
        if self.full_document_type is not None:
            fd_col = convert(fd, self.full_document_type)
        else:
            fd_col = to_json(fd)
        rest = {k: v for k, v in ev.items() if k not in _CONSUMED}
        txn = ev.get("txnNumber")
        out = (
            token,
            ev.get("operationType"),
            _cluster_time(ev.get("clusterTime")),
            _utc(ev.get("wallTime")),
            _ns(ev.get("ns")),
            to_json(ev.get("documentKey")),
            fd_col,
            to_json(ev.get("fullDocumentBeforeChange")),
            to_json(ev.get("updateDescription")),
            int(txn) if isinstance(txn, int) else None,
            to_json(ev.get("lsid")),
            to_json(rest) if rest else None,
        )
        if self.include_raw:
            out += (bytes(raw),)
        if self.shard_column:
            out += (shard,)
        return out


# -- fullDocumentSchema: BSON values -> Spark values ----------------------------------------
def convert(value: Any, dtype: Any) -> Any:
    """Convert a decoded BSON value to what Spark expects for `dtype`; null if it does not fit."""
    from pyspark.sql import types as T

    if value is None:
        return None
    if isinstance(dtype, T.StructType):
        if not isinstance(value, Mapping):
            return None
        return tuple(convert(value.get(f.name), f.dataType) for f in dtype.fields)
    if isinstance(dtype, T.ArrayType):
        if not isinstance(value, list):
            return None
        return [convert(v, dtype.elementType) for v in value]
    if isinstance(dtype, T.MapType):
        if not isinstance(value, Mapping) or not isinstance(dtype.keyType, T.StringType):
            return None
        return {str(k): convert(v, dtype.valueType) for k, v in value.items()}
    if isinstance(dtype, T.StringType):
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
    if isinstance(dtype, T.BooleanType):
        return value if isinstance(value, bool) else None
    if isinstance(dtype, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
        bits = {T.ByteType: 8, T.ShortType: 16, T.IntegerType: 32, T.LongType: 64}[type(dtype)]
        if isinstance(value, bool):
            return None
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, Decimal128):
            d = value.to_decimal()
            value = int(d) if d.is_finite() and d == d.to_integral_value() else None
        if isinstance(value, int) and -(2 ** (bits - 1)) <= int(value) < 2 ** (bits - 1):
            return int(value)
        return None
    if isinstance(dtype, (T.FloatType, T.DoubleType)):
        if isinstance(value, bool):
            return None
        if isinstance(value, (int, float, Int64)):
            return float(value)
        if isinstance(value, Decimal128):
            return float(value.to_decimal())
        return None
    if isinstance(dtype, T.DecimalType):
        if isinstance(value, bool):
            return None
        if isinstance(value, Decimal128):
            d = value.to_decimal()
        elif isinstance(value, (int, float)):
            d = decimal.Decimal(str(value)) if isinstance(value, float) else decimal.Decimal(int(value))
        else:
            return None
        if not d.is_finite():
            return None
        try:
            q = d.quantize(decimal.Decimal(1).scaleb(-dtype.scale))
        except decimal.InvalidOperation:
            return None
        return q if len(q.as_tuple().digits) <= dtype.precision else None
    if isinstance(dtype, T.TimestampType) or type(dtype).__name__ == "TimestampNTZType":
        if isinstance(value, _dt.datetime):
            return _utc(value) if isinstance(dtype, T.TimestampType) else value
        return None
    if isinstance(dtype, T.DateType):
        return value.date() if isinstance(value, _dt.datetime) else None
    if isinstance(dtype, T.BinaryType):
        return bytes(value) if isinstance(value, (bytes, bson.Binary)) else None
    return None
