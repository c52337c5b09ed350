"""A batch of change events as a shard's cursor hands it on: column by column, never per-event objects.

Columns, one entry per event, in stream order:

- `raws`: the event's BSON (spliced into the reply as it is);
- `keys`: its sort key, the resume token's `_data`;
- `ops`: its operationType (the router's merge treats some kinds apart);

and two sparse ones, since nearly every event has neither:

- `bits`: `{index: _typeBits}` for tokens that carry type bits;
- `altered`: indexes of events whose `_id` a user stage changed (the token
  still sorts them; the client must not be able to resume from them).

The shard part of a sharded stream sends these columns beside the batch
(`reply_fields`), and the router's merger buffers them as they are.
"""

from __future__ import annotations

from typing import Any

from bson import Binary

from mongosim.oplog import bsonutil
from mongosim.shardsim.cursors import PER_DOCUMENT_OVERHEAD

# Internal cursor fields for the router (shard part of a sharded stream).
SORT_KEYS_FIELD = "$_sortKeys"
TYPE_BITS_FIELD = "$_typeBits"
ID_ALTERED_FIELD = "$_idAltered"
OP_TYPES_FIELD = "$_opTypes"
BATCH_BYTES = bsonutil.MAX_BSON_OBJECT_SIZE - 64 * 1024  # a batch stops short of 16 MB (its reply must fit)
OVERHEAD = PER_DOCUMENT_OVERHEAD  # what an event costs in the reply's array beside its bytes


def make_token(key: str, bits: bytes | None) -> dict:
    """The resume token `{_data, _typeBits?}` of a sort key and its type bits."""
    return {"_data": key} if bits is None else {"_data": key, "_typeBits": Binary(bits, 0)}


class EventBatch:
    __slots__ = ("raws", "keys", "ops", "bits", "altered", "size")

    def __init__(self) -> None:
        self.raws: list[bytes] = []
        self.keys: list[str] = []
        self.ops: list[str] = []
        self.bits: dict[int, bytes] = {}
        self.altered: list[int] = []
        self.size = 0  # bytes of the events in a reply's array (each its BSON and OVERHEAD)

    def __len__(self) -> int:
        return len(self.raws)

    def append(self, token: dict, raw: bytes, intact: bool, op_type: str) -> None:
        """One event from the stage pipeline (its token a dict)."""
        i = len(self.raws)
        self.raws.append(raw)
        self.keys.append(token["_data"])
        self.ops.append(op_type)
        tb = token.get("_typeBits")
        if tb is not None:
            self.bits[i] = bytes(tb)
        if not intact:
            self.altered.append(i)
        self.size += len(raw) + OVERHEAD

    def token(self, i: int) -> dict:
        return make_token(self.keys[i], self.bits.get(i))

    def events(self) -> list[tuple[dict, Any, bool, str]]:
        """`[(token, raw, _id intact, operationType)]`, one tuple per event (for callers outside the hot path)."""
        altered = set(self.altered)
        return [(self.token(i), raw, i not in altered, op) for i, (raw, op) in enumerate(zip(self.raws, self.ops))]

    def merge_fields(self) -> dict:
        """The columns the router's merger needs, as internal cursor fields."""
        fields: dict[str, Any] = {SORT_KEYS_FIELD: self.keys, OP_TYPES_FIELD: self.ops}
        if self.bits:
            fields[TYPE_BITS_FIELD] = self.bits
        if self.altered:
            fields[ID_ALTERED_FIELD] = self.altered
        return fields
