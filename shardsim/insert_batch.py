"""The insert command's batch path: a batch of documents checked, logged and stored in one step.

An insert of n documents outside a transaction writes n oplog entries, one per document, in
`oplog.entry`'s field order:

    [lsid, txnNumber,] op: "i", ns, ui, o: <the document>, o2: <its documentKey>, [stmtId,]
    ts, t, v, wall [, prevOpTime]

with n consecutive timestamps (a retryable write's prevOpTime chains each statement to the one
before it).  When the whole batch can be inserted — every document an object with an `_id` of a
type stored as it is, no `_id` already in the collection or twice in the batch, no index that
checks or stores keys, no validator, not capped, no transaction holding documents, no statement
that already ran, no failpoint — the entries are assembled from bytes: the constant head and
middle (session fields, namespace, collection UUID, t, v, wall), each document's own bytes as it
arrived (`bsonutil.DocumentSequence`; encoded once here otherwise), its documentKey read from those
bytes when it is the `_id` alone, and each entry's timestamp, statement id and prevOpTime.  They
are appended to the oplog together and the documents stored together (with the before-images
open snapshots need, e.g. a replica set's committed snapshot): as the bytes they came in where the
collection keeps no index keys (`Collection.insert_raw_batch`, decoded on first read), so a bulk
load leaves no per-document objects behind for the cyclic collector to walk again and again.
Anything else takes the per-document loop (`writes.cmd_insert`), which gives the server's exact
write errors.  A property test proves the two paths write the same oplog bytes and documents
(tests/crud/test_insert_batch.py).
"""

from __future__ import annotations

import struct
from itertools import chain, repeat
from operator import add, contains, itemgetter
from typing import TYPE_CHECKING, Any

from bson import Int64, ObjectId, Timestamp

from mongosim.oplog import bsonutil
from mongosim.oplog import entry as E
from mongosim.oplog.oplog import MAX_ENTRY_BYTES
from mongosim.shardsim.create_collection import ensure_collection
from mongosim.shardsim.query.values import R_NUM, R_OID, hashables
from mongosim.shardsim.sessions import lsid_with_uid

if TYPE_CHECKING:
    from mongosim.shardsim.node import Node
    from mongosim.shardsim.operation_context import OpCtx
    from mongosim.shardsim.writes import WriteSession

# `_id` types stored as they come (check_id_value refuses arrays, regexes, undefined, and checks
# embedded documents and DBRefs: those take the per-document loop)
PLAIN_ID_TYPES = frozenset({int, Int64, float, str, ObjectId, bool, type(None), Timestamp})
# the value size of a first element `_id` of these types, to read {_id: value} from a document's bytes
_ID_VALUE_SIZE = {0x10: 4, 0x12: 8, 0x01: 8, 0x07: 12, 0x08: 1, 0x0A: 0, 0x11: 8}
_O2 = b"\x03o2\x00"
_TS = b"\x11ts\x00"
_STMT_ID = b"\x10stmtId\x00"
_PREV = b"\x03prevOpTime\x00\x1c\x00\x00\x00\x11ts\x00"  # {ts: <8 bytes>, t: <int64>}
def _prev_t(term: int) -> bytes:
    """The `t` element of a prevOpTime (`{ts, t: <int64>}`)."""
    return b"\x12t\x00" + int(term).to_bytes(8, "little", signed=True) + b"\x00"


_PREV_T_LEN = len(_prev_t(0))
_NULL_PREV_T = b"\x12t\x00" + int(E.NULL_OP_TIME["t"]).to_bytes(8, "little", signed=True) + b"\x00"
_FIRST_ID = b"_id\x00"
_HEAD = itemgetter(slice(4, 9))  # a document's first element's type byte and (if `_id`) name
_INT32 = struct.Struct("<i")
_INT_FORMATS = {0x10: "i", 0x12: "q"}  # an int32 or int64 `_id`'s struct format


def id_keys_of_raws(raws: list[bytes]) -> list | None:
    """The `_id` key (`values.hashable`) of each document, read from its bytes when every one leads
    with an `_id` of one type among int32, int64 and ObjectId (by C calls mapped over the batch:
    the values sliced out, one unpack); None for any other batch."""
    heads = set(map(_HEAD, raws))
    if len(heads) != 1:
        return None
    (h,) = heads
    if h[1:] != _FIRST_ID:
        return None
    t = h[0]
    if t == 0x07:
        return list(zip(repeat(R_OID), map(itemgetter(slice(9, 21)), raws)))
    fmt = _INT_FORMATS.get(t)
    if fmt is None:
        return None
    values = struct.unpack(f"<{len(raws)}{fmt}", b"".join(map(itemgetter(slice(9, 9 + struct.calcsize(fmt))), raws)))
    return list(zip(repeat(R_NUM), repeat(1), values))


def _keys_bytes(raws: list[bytes], docs: list[dict]) -> list[bytes]:
    """`{_id: <value>}` of each document in BSON: its first element when that is `_id` of a fixed-size
    type or a string, else encoded.  When every document leads with `_id` of the same fixed-size type
    (a driver's batch of ints or ObjectIds) the elements are sliced out in one pass of C calls."""
    heads = set(map(_HEAD, raws))
    if len(heads) == 1:
        (h,) = heads
        size = _ID_VALUE_SIZE.get(h[0])
        if size is not None and h[1:] == _FIRST_ID:
            end = 9 + size
            return list(map(b"".join, zip(repeat((end + 1).to_bytes(4, "little")), map(itemgetter(slice(4, end)), raws),
                                          repeat(b"\x00"))))
    out = []
    sizes = _ID_VALUE_SIZE
    for raw, doc in zip(raws, docs):
        if raw[5:9] == _FIRST_ID:
            size = sizes.get(raw[4])
            if size is None and raw[4] == 0x02:
                size = 4 + int.from_bytes(raw[9:13], "little")
            if size is not None:
                end = 9 + size
                out.append((end + 1).to_bytes(4, "little") + raw[4:end] + b"\x00")
                continue
        out.append(bsonutil.encode({"_id": doc["_id"]}))
    return out


def _entries(raws: list[bytes], keys: list[bytes], head: bytes, middle: bytes, first: int,
             stmt_ids: list[int] | None, prev: int, prev_t: bytes, this_term_t: bytes) -> tuple[list[bytes], int]:
    """The oplog entries of a batch (and the largest one's size), each joined from its pieces:

        size | head (lsid, txnNumber, op, ns, ui, "o") | the document | "o2" | its key | tail

    where the tail (stmtId, ts, t, v, wall, prevOpTime) is one `struct` pack of the statement id,
    the timestamp and the previous one's between constant bytes (a retryable write's first
    statement chains to `prev`, whose term element is `prev_t`; the others to the one before, of
    this term: `this_term_t`).  Every piece is made by a C call
    mapped over the batch (sizes, tails, joins): no Python loop per document."""
    n = len(raws)
    ts = range(first, first + n)
    if stmt_ids is None:
        tail = struct.Struct(f"<{len(_TS)}sQ{len(middle) + 1}s")
        tails = map(tail.pack, repeat(_TS), ts, repeat(middle + b"\x00"))
    else:
        rest = middle + _PREV
        tail = struct.Struct(f"<{len(_STMT_ID)}si{len(_TS)}sQ{len(rest)}sQ{_PREV_T_LEN + 1}s")
        prevs = chain((prev,), range(first, first + n - 1))  # each statement chained to the one before
        terms = chain((prev_t + b"\x00",), repeat(this_term_t + b"\x00"))
        tails = map(tail.pack, repeat(_STMT_ID), stmt_ids, repeat(_TS), ts, repeat(rest), prevs, terms)
    fixed = 4 + len(head) + len(_O2) + tail.size
    sizes = list(map(add, map(len, raws), map(len, keys)))
    largest = fixed + max(sizes)
    entry_sizes = map(_INT32.pack, map(fixed.__add__, sizes))
    return list(map(b"".join, zip(entry_sizes, repeat(head), raws, repeat(_O2), keys, tails))), largest


def try_insert_batch(node: Node, ctx: OpCtx, ws: WriteSession, db: str, name: str, docs: list) -> bool:
    """Insert `docs` (all of the command's) into `db.name` in one step if nothing can go wrong;
    False (nothing done) to take the per-document loop."""
    n = len(docs)
    state = ws.state
    if n < 2 or ws.txn is not None or ws.from_migrate or node.txn_locks or node.failpoints:
        return False
    if not all(map(isinstance, docs, repeat(dict))) or not all(map(contains, docs, repeat("_id"))):
        return False
    ids = list(map(itemgetter("_id"), docs))
    if not PLAIN_ID_TYPES.issuperset(map(type, ids)):
        return False
    idks = hashables(ids)
    if len(set(idks)) != n:
        return False
    stmt_ids = None
    if state is not None:
        stmt_ids = list(map(int, ws.stmt_ids)) if ws.stmt_ids is not None else [ws.stmt_id(i) for i in range(n)]
        if not state.executed.keys().isdisjoint(stmt_ids) or not -(2**31) <= min(stmt_ids) <= max(stmt_ids) < 2**31:
            return False
    raws = bsonutil.raws_of(docs)
    if max(map(len, raws)) > bsonutil.MAX_BSON_OBJECT_SIZE:
        return False  # too large: the loop's error
    coll = node.catalog.collection(db, name)
    if coll is not None and (not coll.batch_insertable() or not coll.has_none_of(idks)):
        return False
    if coll is not None and coll.shard_key and list(coll.shard_key) != ["_id"]:
        return False  # a documentKey of other fields: the per-document loop builds it
    if coll is None:
        coll = ensure_collection(node, ctx, db, name)  # (where the loop creates it: before the first insert)

    # -- the entries ----------------------------------------------------------------------------
    wall = node.wall.wall()
    first = node.clock.reserve(n)
    head_fields: dict[str, Any] = {}
    if state is not None:
        head_fields["lsid"] = lsid_with_uid(ctx.lsid)
        head_fields["txnNumber"] = Int64(ctx.txn_number)
    head_fields.update(E.operation(E.INSERT, coll.ns, {}, ui=coll.uuid))
    head = bsonutil.encode(head_fields)[4:-6]  # up to `o`'s value (the empty document and the end cut)
    middle = bsonutil.encode({"t": node.term, "v": E.VERSION, "wall": wall})[4:-1]  # (the set's term)
    keys = _keys_bytes(raws, docs)
    prev_ts, prev_t, this_term_t = 0, _NULL_PREV_T, _prev_t(node.term)
    if state is not None and state.last_write_key:
        # the first statement's predecessor may be from an earlier term; the batch's own are this term's
        prev_ts = state.last_write_key
        prev_t = _prev_t(node.op_time(prev_ts)["t"])
    entries, largest = _entries(raws, keys, head, middle, first, stmt_ids, prev_ts, prev_t, this_term_t)
    if largest > MAX_ENTRY_BYTES:
        return False  # (nothing appended yet; the reserved ticks stay unused, as a failed write's do)

    # -- append, store, remember ----------------------------------------------------------------
    last = first + n - 1
    node.oplog.extend_raw(entries, first, E.INSERT, coll.ns)
    if coll.raw_insertable():
        coll.insert_raw_batch(idks, raws)  # stored as the bytes that came (decoded when first read)
    else:
        coll.insert_batch(idks, docs)
    if state is not None:
        state.executed.update(zip(stmt_ids, repeat(True)))
        state.last_write_key = last
    ctx.op_time_key = last
    node.logged()
    return True
