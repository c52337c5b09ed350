"""InsertGroup: a secondary applies a run of insert entries into one collection in one step.

The server's oplog applier groups consecutive inserts into the same namespace and inserts
their documents together (repl/insert_group.cpp).  Here a group is applied from the entries'
bytes, as the primary's batch path (`shardsim.insert_batch`) wrote them, with no Python loop per
entry: each check is a C call mapped over the run (`bytes.startswith` at offsets computed by
`map`, sizes read by one `struct` unpack of the bytes sliced out).

- the group's first entry is decoded (what every entry of the group shares: lsid, txnNumber,
  ns, ui, t) and its collection created if needed, as the general path would;
- every entry must hold the first one's bytes up to its `o` (the same lsid, txnNumber, op, ns
  and ui), then `o`, `o2` of the first one's size, an int32 `stmtId` where the first has one,
  `ts` (the key the oplog's column gives) and the first one's `t` (one term: the member's term
  history does not change); what follows (v, wall, prevOpTime) the applier does not read;
- the collection is not capped, and the documents' `_id`s are of types stored as they are,
  distinct, and new to the collection (the general path replaces a document already there:
  application is idempotent).

When every document leads with an int32, int64 or ObjectId `_id` (a driver's batch) and the
collection keeps no index of its own, the documents are stored as their bytes
(`Collection.insert_raw_batch`: the primary validated them; they are decoded when the member
first reads them); otherwise they are decoded, all in one call, and stored as
`Collection.insert_batch` does (the RecordIds, maintained indexes and before-images of open
snapshots that `Collection.insert` keeps).  Each statement goes into the session table as the
general path records it (the entry's bytes: `sessions.statement_result` reads a retry's answer
from them), the entries are appended to the oplog together and the clock moves.  The group
ends at the first entry that does not fit, which the caller applies the general way; when the
`_id`s do not fit, the group's entries all go the general way.  A property test proves both
ways leave the same member (tests/replset/test_insert_group.py).
"""

from __future__ import annotations

import re
from functools import lru_cache
from itertools import islice, repeat, takewhile
from operator import getitem, itemgetter, sub, truth
from struct import Struct
from typing import TYPE_CHECKING, Callable

from mongosim.oplog import bsonutil
from mongosim.oplog.layout import crud_layout
from mongosim.shardsim.insert_batch import PLAIN_ID_TYPES, id_keys_of_raws
from mongosim.shardsim.query.values import hashables

if TYPE_CHECKING:
    from mongosim.shardsim.oplog_applier import OplogApplier

_O2 = b"\x03o2\x00"
_STMT_ID = b"\x10stmtId\x00"
_TS = b"\x11ts\x00"
_T_SIZES = {b"\x12t\x00": 11, b"\x10t\x00": 7}  # `t` as int64 or int32: the element's size
_int32 = Struct("<i").unpack_from
_startswith = bytes.startswith


def _layout(raw: bytes) -> tuple[bytes, int, bytes, int | None] | None:
    """An entry's layout as the batch path writes it: (its bytes up to `o`, where `o` starts, a
    pattern its bytes after `o` match: `o2` of its size, `stmtId` with a value where it has one,
    `ts` with a value, its `t` element, then as many bytes as it has left; where the stmtId's value
    is in those bytes, None without one); None for any other layout."""
    o = crud_layout(raw)[0]
    if not o or len(raw) < o + 4:
        return None
    end = o + _int32(raw, o)[0]
    if raw[end : end + 4] != _O2 or len(raw) < end + 8:
        return None
    p = end + 8 + _int32(raw, end + 4)[0] - 4  # after `o2`
    if raw.startswith(_STMT_ID, p) and raw.startswith(_TS, p + 12):
        t_at, sid, sid_at = p + 24, re.escape(_STMT_ID) + b".{4}", p + 8 - end
    elif raw.startswith(_TS, p):
        t_at, sid, sid_at = p + 12, b"", None
    else:
        return None
    t_elem = raw[t_at : t_at + _T_SIZES.get(raw[t_at : t_at + 3], 0)]
    if not t_elem:
        return None
    rest = len(raw) - t_at - len(t_elem)
    return raw[4:o], o, b"".join((re.escape(raw[end : end + 8]), b".{%d}" % (p - end - 8), sid, re.escape(_TS), b".{8}",
                                  re.escape(t_elem), b".{%d}" % rest)), sid_at


@lru_cache(maxsize=64)
def _run_of(pattern: bytes) -> re.Pattern:
    """A regex matching a run of entries' bytes after `o`, laid end to end, each matching `pattern`."""
    return re.compile(b"(?:%s)*" % pattern, re.DOTALL)


def apply_group(applier: "OplogApplier", keys, nss: list[str], raws: list[bytes], i: int,
                note_term: Callable[[int, int], None]) -> int:
    """Apply the inserts from `raws[i]` on (it and the next entry are inserts) as far as they form
    a group; how many were applied (0: none: the caller applies entry i the general way)."""
    layout = _layout(raws[i])
    if layout is None:
        return 0
    head, o, pattern, sid_at = layout
    # the entries that start with the first one's head (it holds op and ns: inserts into ns), then
    # those whose bytes after `o` all match its layout (one regex over them laid end to end)
    group = raws[i : i + len(list(takewhile(truth, map(_startswith, islice(raws, i, None), repeat(head), repeat(4)))))]
    n = len(group)
    ends = list(map(o.__add__, Struct(f"<{n}i").unpack(b"".join(map(itemgetter(slice(o, o + 4)), group)))))
    suffix_size = len(raws[i]) - ends[0]
    n = len(list(takewhile(suffix_size.__eq__, map(sub, map(len, group), ends))))
    suffixes = b"".join(map(getitem, group[:n], map(slice, ends, repeat(None))))
    n = _run_of(pattern).match(suffixes).end() // suffix_size
    if n < 2:
        return 0
    del group[n:], ends[n:]
    first = bsonutil.decode(group[0])
    t = int(first.get("t", 1))
    coll = applier.collection_for_insert(first)
    if coll.capped is not None:
        return 0
    node = applier.node
    docs_raw = list(map(getitem, group, map(slice, repeat(o), ends)))
    idks = id_keys_of_raws(docs_raw) if coll.raw_insertable() else None
    docs = None
    if idks is None:
        docs = bsonutil.decode_all(b"".join(docs_raw))
        ids = list(map(dict.get, docs, repeat("_id")))
        if None not in ids and PLAIN_ID_TYPES.issuperset(map(type, ids)):
            idks = hashables(ids)
    if idks is None or len(set(idks)) != n or not coll.has_none_of(idks):
        note_term(keys[i], t)
        for raw in group:
            applier.apply_raw(raw)
        return n
    note_term(keys[i], t)
    if docs is None:
        coll.insert_raw_batch(idks, docs_raw)
    else:
        coll.insert_batch(idks, docs)
    lsid, txn_number = first.get("lsid"), first.get("txnNumber")
    if sid_at is not None and lsid is not None and txn_number is not None:
        state = applier._advance_session(lsid, int(txn_number))
        if state.txn_number == int(txn_number):
            # each statement remembered as its entry (sessions.statement_result reads a retry's answer),
            # the stmtIds read from the suffixes (each of the same size, the id at the same place)
            sids = Struct("<" + f"{sid_at}xi{suffix_size - sid_at - 4}x" * n).unpack(suffixes[: n * suffix_size])
            state.executed.update(zip(sids, group))
            state.last_write_key = keys[i + n - 1]
    node.oplog.extend_columns(keys[i : i + n], ["i"] * n, nss[i : i + n], group)
    node.clock.advance(keys[i + n - 1])
    return n
