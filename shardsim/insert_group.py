"""InsertGroup: a secondary applies a run of insert entries into one collection in one step.

The server's oplog applier groups consecutive inserts into the same namespace and inserts
their documents together (repl/insert_group.cpp).  Here a group is applied from the entries'
bytes, as the primary's batch path (`shardsim.insert_batch`) wrote them:

- the group's first entry has gone the general way (`OplogApplier.apply_raw`): it created the
  collection if needed and gives, decoded, what every entry of the group shares;
- each following entry must hold the first one's bytes up to its `o` (the same lsid, txnNumber,
  op, ns and ui), then `o`, `o2`, an optional int32 `stmtId`, `ts` (the key the oplog's column
  gives) and the first one's `t` (one term: the member's term history does not change); what
  follows (v, wall, prevOpTime) the applier does not read;
- the collection is not capped, and the documents' `_id`s — decoded with the documents, all in
  one call — are of types stored as they are, distinct, and new to the collection (the general
  path replaces a document already there: application is idempotent).

The group then stores its documents as `Collection.insert_batch` does (the RecordIds, maintained
indexes and before-images of open snapshots that `Collection.insert` keeps), records each
statement in the session table as the general path does (an `Inserted`), appends the entries
to the oplog together and moves the clock.  The group ends at the first entry that does not
fit, which the caller applies the general way; when the `_id`s do not fit, the group's entries
all go the general way.  A property test proves both ways leave the same member
(tests/replset/test_insert_group.py).
"""

from __future__ import annotations

from itertools import islice, repeat
from operator import contains
from struct import Struct
from struct import error as StructError
from typing import TYPE_CHECKING

from mongosim.oplog import bsonutil
from mongosim.oplog.layout import crud_layout
from mongosim.shardsim.insert_batch import PLAIN_ID_TYPES
from mongosim.shardsim.query.values import hashables
from mongosim.shardsim.sessions import Inserted

if TYPE_CHECKING:
    from mongosim.shardsim.oplog_applier import OplogApplier

_O2 = b"\x03o2\x00"
_STMT_ID = b"\x10stmtId\x00"
_TS = b"\x11ts\x00"
_T_SIZES = {b"\x12t\x00": 11, b"\x10t\x00": 7}  # `t` as int64 or int32: the element's size
_int32 = Struct("<i").unpack_from
_o2_head = Struct("<4si").unpack_from  # `o2`'s type and name, its size
_stmt_id_then = Struct("<8si4s").unpack_from  # a `stmtId` element's type and name, its value, the next type and name


def apply_group(applier: "OplogApplier", first: dict, keys, nss: list[str], raws: list[bytes], i: int) -> int:
    """Apply the inserts from `raws[i]` on (`first` is entry i-1, an insert applied and decoded) as far
    as they form a group with it; how many were applied (0: none fit)."""
    node = applier.node
    coll = applier._collection(first["ns"])
    if coll is None or coll.capped is not None:
        return 0
    raw0 = raws[i - 1]
    o = crud_layout(raw0)[0]
    if not o:
        return 0
    head = raw0[4:o]  # lsid, txnNumber, op, ns, ui and the `o` element's type and name
    slices, sids = [], []
    t_elem = b""
    k = i - 1  # (entry i-1 is parsed too, for the `t` every entry of the group must have)
    for k, raw in enumerate(islice(raws, i - 1, None), i - 1):
        if not raw.startswith(head, 4):
            break
        end_o = o + _int32(raw, o)[0]
        try:
            o2_tag, o2_size = _o2_head(raw, end_o)
            p = end_o + 4 + o2_size  # after `o2`
            stmt_tag, sid, next_tag = _stmt_id_then(raw, p)
        except StructError:  # (too short to hold what follows: not this layout)
            break
        if o2_tag != _O2:
            break
        if stmt_tag == _STMT_ID and next_tag == _TS:
            p += 24
        elif stmt_tag.startswith(_TS):
            sid = None
            p += 12
        else:
            break
        if not t_elem:
            t_elem = raw[p : p + _T_SIZES.get(raw[p : p + 3], 0)]
            if not t_elem:
                return 0
        elif raw.startswith(t_elem, p):
            slices.append(raw[o:end_o])
            sids.append(sid)
        else:
            break
    else:
        k += 1
    n = k - i
    if n <= 0:
        return 0
    docs = bsonutil.decode_all(b"".join(slices))
    ids = list(map(dict.get, docs, repeat("_id")))
    idks = (hashables(ids) if all(map(contains, docs, repeat("_id"))) and PLAIN_ID_TYPES.issuperset(map(type, ids))
            else None)
    if idks is None or len(set(idks)) != n or not coll.docs.keys().isdisjoint(idks):
        for raw in raws[i:k]:
            applier.apply_raw(raw)  # (same term as `first`: nothing to note)
        return n
    coll.insert_batch(idks, docs)
    lsid, txn_number = first.get("lsid"), first.get("txnNumber")
    if lsid is not None and txn_number is not None and any(s is not None for s in sids):
        state = applier._advance_session(lsid, int(txn_number))
        if state.txn_number == int(txn_number):
            if None in sids:  # (statements without a stmtId are not remembered)
                kept = [(s, _id, key) for s, _id, key in zip(sids, ids, keys[i:k]) if s is not None]
                state.executed.update((s, Inserted((_id,))) for s, _id, _key in kept)
                state.last_write_key = kept[-1][2]
            else:
                state.executed.update(zip(sids, map(Inserted, zip(ids))))
                state.last_write_key = keys[k - 1]
    node.oplog.extend_columns(keys[i:k], ["i"] * n, nss[i:k], raws[i:k])
    node.clock.advance(keys[k - 1])
    return n
