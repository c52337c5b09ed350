"""A run of oplog entries rendered into a batch of change events in one pass over their bytes.

The stage pipeline (oplog match -> unwind transaction -> transform -> check
invalidate -> check resumability -> classic-events filter -> ...) moves one
event at a time through every stage.  For a CRUD entry of a stream with no
user stages and no images, past its resume point, every stage after the
transform passes the event on unchanged; so the cursor runs this loop
instead, over the oplog's columns from the stream's position:

- an entry of another namespace, or a noop or command the stream never reads,
  is skipped from the op/ns columns without touching its bytes;
- a CRUD entry of the stream is located with its collection's *template*: the
  bytes `op, ns, ui, o` every entry of that collection holds (after the
  session fields of a retryable write, if any).  One search finds them; `o`,
  `o2`, the timestamp and the wall time are then at known places.  The event
  is assembled from those slices and the template's constant pieces (the
  operationType, ns, collectionUUID and field-name bytes), and its resume
  token from the stream's prefix for the operation type (the KeyString bytes
  that only depend on the collection), the timestamp, and the documentKey's
  KeyString read from the `o2` bytes;
- anything else — a command or noop of the stream, a transaction, an entry of
  `system.views`, an entry laid out otherwise, an event too large — ends the
  run before that entry: the cursor hands it to the stage pipeline, and comes
  back here once the pipeline holds nothing pending.

A stream whose only user stage is `{$project: {_id: 1}}` (what a reader that
wants the tokens alone asks for, e.g. the Spark source's planning probes) gets
its runs rendered too, as the events that projection leaves: `{_id: <token>}`,
the token built as above, nothing else of the event assembled.

What comes out is byte for byte what the pipeline gives (a property test runs
both over random workloads: tests/changestream/test_batch_render.py).
"""

from __future__ import annotations

from functools import lru_cache
from struct import Struct

from mongosim.oplog import bsonutil
from mongosim.oplog import entry as E
from mongosim.oplog.layout import crud_layout
from mongosim.oplog.resume_token import bson_document_key_fields, crud_token_prefix, encode_event_token
from mongosim.shardsim.changestream import render as R
from mongosim.shardsim.changestream.event_batch import BATCH_BYTES, OVERHEAD, EventBatch, make_token
from mongosim.shardsim.changestream.split_large_event import sort_key_size
from mongosim.shardsim.query.diff import update_description

SORT_KEY_FIXED = 64  # a $sortKey element's bytes beside the token's _data and _typeBits (50)

# How a run ended.
FULL = 0  # the batch holds `limit` events, or the next event would overflow its bytes
END = 1  # every entry of the oplog was read
PIPELINE = 2  # the next entry is for the stage pipeline

# What to do with an entry (besides rendering it with an OpTemplate).
SKIP = "skip"  # not the stream's
TO_PIPELINE = "pipeline"  # the stage pipeline's

# After `o2` (or a delete's `o`): [stmtId: int32] [fromMigrate: true] ts t v wall ..., v constant (t the set's term)
# (oplog.entry).  The bytes after the documentKey, by layout: ts t v wall; or stmtId ts t v wall
# prevOpTime (a retryable write).
_STMT_ID = b"\x10stmtId\x00"
_TS = b"\x11ts\x00"
_T = b"\x12t\x00"  # then the term: any (a replica set's term moves with its elections)
_V_WALL = b"\x12v\x00" + int(E.VERSION).to_bytes(8, "little") + b"\x09wall\x00"
_PLAIN_TAIL = 12 + 28 + 8 + 1  # ts, t v wall's name, wall, end of the entry
_RETRYABLE_TAIL = 12 + _PLAIN_TAIL + 12 + 28  # stmtId, ..., prevOpTime {ts, t}
_FROM_MIGRATE = b"\x08fromMigrate\x00\x01"
_O2 = b"\x03o2\x00"
_DELTA = b"\x10$v\x00\x02\x00\x00\x00"
_ID_INT32 = b"\x0e\x00\x00\x00\x10_id\x00"  # a documentKey {_id: <int32>}
_I32 = Struct("<i").unpack_from
_TOKEN_HEADS: dict[int, bytes] = {}  # `_id` element + token document up to its hex, by hex length


def _token_head(n: int) -> bytes:
    """`_id: {_data: "` up to the hex of length `n` (then hex, NUL, end of document)."""
    head = _TOKEN_HEADS.get(n)
    if head is None:
        head = _TOKEN_HEADS[n] = R.ID + (n + 17).to_bytes(4, "little") + R.DATA + (n + 1).to_bytes(4, "little")
    return head


def _id_only(elem: bytes) -> bytes:
    """The document holding the one element `elem` (an event's `_id`)."""
    return (len(elem) + 5).to_bytes(4, "little") + elem + b"\x00"


class TokenTemplate:
    """A CRUD event token's `_data` for one collection and operation type, as hex pieces:
    `82 <clusterTime> <prefix> <documentKey's fields> 00 00 04`.  For the common documentKey
    `{_id: <positive int32>}` the fields' KeyString is `1E "_id" 00 <CType of an n-byte positive
    integer> <value << 1 in n bytes>`: `int_prefix` maps the value's hex length to the hex up to it."""

    __slots__ = ("prefix", "int_prefix")

    def __init__(self, prefix: bytes) -> None:
        self.prefix = prefix.hex().upper()
        self.int_prefix = {}
        for digits in range(1, 9):
            nbytes = (digits + 1) // 2
            self.int_prefix[digits] = self.prefix + "1E5F696400%02X" % (42 + nbytes) + "0" * (digits % 2)


class OpTemplate:
    """The constant pieces of one collection's entries of one kind (`op`) and of their events."""

    __slots__ = ("op", "header", "hlen", "at", "ui", "mid", "ns_key", "token", "after", "replace_token",
                 "replace_after")

    def __init__(self, op: str, ns: str, ui: bytes, expanded: bool) -> None:
        ns_b = ns.encode()
        self.op = op
        self.header = (b"\x02op\x00\x02\x00\x00\x00" + op.encode() + b"\x00"
                       + b"\x02ns\x00" + (len(ns_b) + 1).to_bytes(4, "little") + ns_b + b"\x00"
                       + b"\x05ui\x00\x10\x00\x00\x00\x04" + ui + b"\x03o\x00")  # `op, ns, ui, o` of the entry
        self.hlen = len(self.header)
        self.at = 4  # where the header was last found (after the session fields of a retryable write)
        self.ui = ui
        self.mid = (R.COLLECTION_UUID + ui if expanded else b"") + R.WALL_TIME  # the event between clusterTime and wall
        self.ns_key = R.ns_elem(ns) + R.DOCUMENT_KEY
        op_type = {"i": "insert", "u": "update", "d": "delete"}[op]
        # the token (None when its prefix has type bits); after it: its end, operationType, clusterTime's name
        self.token = _token_template(ui, op_type)
        self.after = b"\x00\x00" + R.OP_TYPE[op_type] + R.CLUSTER_TIME
        self.replace_token = _token_template(ui, "replace")
        self.replace_after = b"\x00\x00" + R.OP_TYPE["replace"] + R.CLUSTER_TIME


@lru_cache(maxsize=1024)
def _token_template(ui: bytes, op_type: str) -> TokenTemplate | None:
    """The TokenTemplate of a collection's events of `op_type` (None when the prefix has type bits);
    shared by every stream's renderer (it is never changed), so opening a stream builds none anew."""
    prefix = crud_token_prefix(ui, op_type)
    return TokenTemplate(prefix) if prefix is not None else None


class Namespace:
    """What to do with one namespace's entries, by op: an OpTemplate (render), SKIP or TO_PIPELINE."""

    __slots__ = ("ops", "ui")

    def __init__(self, ui: bytes | None = None) -> None:
        self.ops: dict[str, object] = {}
        self.ui = ui


_UNKNOWN = Namespace()


class RunRenderer:
    """Renders runs of CRUD entries for one change-stream cursor (see the module doc)."""

    def __init__(self, cursor, max_event: int, with_sort_key: bool = False) -> None:
        ctx = cursor.ctx
        self.cursor = cursor
        self.source = cursor.source
        self.oplog = self.source.oplog
        self.nsf = ctx.nsf
        self.expanded = ctx.spec.show_expanded_events
        self.show_migration = ctx.spec.show_migration_events
        self.max_event = max_event
        # An event that may be too large is weighed exactly (`too_large`): for a router, the split
        # stage counts the event's $sortKey too, {"": token}: the token's bytes and SORT_KEY_FIXED more.
        self.with_sort_key = with_sort_key
        self.near = max_event - SORT_KEY_FIXED if with_sort_key else max_event
        self.cache = getattr(ctx.node, "event_cache", None)
        self.stages = cursor.stages
        # the user's stages are `{$project: {_id: 1}}` alone: each event is its `_id` (user_stages.ids_only)
        self.ids_only = any(getattr(stage, "ids_only", False) for stage in cursor.stages)
        self._ns: dict[str, Namespace] = {}

    def too_large(self, size: int, data: str, bits: bytes | None) -> bool:
        """Is an event of `size` bytes (token `data`, `bits`) the stage pipeline's: over the limit,
        with its $sortKey when the split stage counts it?"""
        if size > self.max_event:
            return True
        return self.with_sort_key and size + sort_key_size(make_token(data, bits)) > self.max_event

    def ready(self) -> bool:
        """Does every stage pass a CRUD event on unchanged right now?"""
        for stage in self.stages:
            if not stage.skippable():
                return False
        return True

    def _decide(self, op: str, ns: str, raw: bytes) -> object:
        """What to do with the entries of (`op`, `ns`) (the rules of oplog_match), remembered."""
        nsf = self.nsf
        if op == "n":
            what = TO_PIPELINE if ns and nsf.ns(ns) else SKIP
        elif op == "c":
            what = TO_PIPELINE if (nsf.cmd(ns) or ns == "admin.$cmd") else SKIP
        elif not nsf.ns(ns):
            what = TO_PIPELINE if (self.expanded and nsf.views(ns)) else SKIP
        elif ns.endswith(".system.views"):
            what = TO_PIPELINE
        else:
            return self._template(op, ns, raw)
        self._ns.setdefault(ns, Namespace()).ops[op] = what
        return what

    def _template(self, op: str, ns: str, raw: bytes) -> object:
        """The template for a CRUD entry of `ns` that the current ones do not fit: the collection
        has a new UUID, or its first entry of this kind; with the same UUID, an entry laid out
        otherwise than the template of its kind is the pipeline's."""
        ui = crud_layout(raw)[3]
        if ui is None:
            return TO_PIPELINE
        space = self._ns.get(ns)
        if space is None or space.ui != ui:
            space = self._ns[ns] = Namespace(ui)
        elif op in space.ops:
            return TO_PIPELINE
        t = space.ops[op] = OpTemplate(op, ns, ui, self.expanded)
        return t

    def fill(self, batch: EventBatch, limit: int) -> int:
        """Render events into `batch` until it holds `limit`; return FULL, END or PIPELINE."""
        source = self.source
        oplog = self.oplog
        if source.pos < oplog.start:
            return PIPELINE  # (its scan raises CappedPositionLost)
        keys, ops, nss, raws = oplog.column_refs()
        base = oplog.start
        n = oplog.visible_end - base  # (a replica set's stream reads only majority-committed entries)
        start = i = source.pos - base
        namespaces = self._ns
        cache = self.cache
        expanded = self.expanded
        ids_only = self.ids_only
        near, with_sort_key = self.near, self.with_sort_key
        budget = BATCH_BYTES - batch.size
        out_raws, out_keys, out_ops, out_bits = batch.raws, batch.keys, batch.ops, batch.bits
        room = limit - len(out_raws)
        first = len(out_raws)
        heads = _TOKEN_HEADS
        add_raw, add_key, add_op = out_raws.append, out_keys.append, out_ops.append
        # (module constants as locals: this loop runs once per event)
        i32, id_int32, o2_name, v_wall, plain_tail, full_document = _I32, _ID_INT32, _O2, _V_WALL, _PLAIN_TAIL, R.FULL_DOCUMENT
        status = END
        last = 0
        last_ns = last_op = t = None
        while i < n:
            if room <= 0:
                status = FULL
                break
            ns = nss[i]
            op = ops[i]
            if ns is not last_ns or op is not last_op:  # (namespaces are interned by the oplog)
                t = namespaces.get(ns, _UNKNOWN).ops.get(op) or self._decide(op, ns, raws[i])
                last_ns, last_op = ns, op
            if t is SKIP:
                i += 1
                continue
            if t is TO_PIPELINE:
                status = PIPELINE
                break
            raw = raws[i]
            key = keys[i]
            if cache is not None:
                hit = cache.get((base + i, expanded))
                if hit is not None:
                    op_type, token, ev, _dk, _diff = hit
                    if ids_only:
                        ev = _id_only(R.ID + R.token_bytes(token["_data"], token.get("_typeBits")))
                    size = len(ev)
                    weight = size + len(token["_data"]) + len(token.get("_typeBits") or b"") if with_sort_key else size
                    if weight > near and self.too_large(size, token["_data"], token.get("_typeBits")):
                        status = PIPELINE
                        break
                    if out_raws and size + OVERHEAD > budget:
                        status = FULL
                        break
                    tb = token.get("_typeBits")
                    if tb is not None:
                        out_bits[len(out_raws)] = bytes(tb)
                    add_raw(ev)
                    add_key(token["_data"])
                    add_op(op_type)
                    last = key
                    budget -= size + OVERHEAD
                    room -= 1
                    i += 1
                    continue
            # -- where o, o2 and wall are --------------------------------------------------------
            p = t.at
            if raw[p : p + t.hlen] != t.header:
                p = raw.find(t.header, 4)
                if p < 0:
                    t = self._template(op, ns, raw)
                    p = raw.find(t.header, 4) if t is not TO_PIPELINE else -1
                    if p < 0:
                        last_ns = None
                        status = PIPELINE
                        break
                t.at = p
            o = p + t.hlen
            o_end = o + i32(raw, o)[0]
            if op == "d":
                o2, k_end = o, o_end  # a delete's `o` is its documentKey
            elif raw[o_end : o_end + 4] == o2_name:
                o2 = o_end + 4
                k_end = o2 + i32(raw, o2)[0]
            else:
                status = PIPELINE
                break
            tail = len(raw) - k_end
            if tail == plain_tail:
                w = k_end  # ts t v wall
            elif tail == _RETRYABLE_TAIL and raw.startswith(_STMT_ID, k_end):
                w = k_end + 12  # stmtId ts t v wall prevOpTime
            else:
                w = raw.find(_TS, k_end, k_end + 40)
                d = w - k_end
                if d == 14 and raw.startswith(_FROM_MIGRATE, k_end) or d == 26 and raw.startswith(_FROM_MIGRATE, k_end + 12):
                    if not self.show_migration:
                        i += 1  # a migration's write: no event (showMigrationEvents is off)
                        continue
                    status = PIPELINE
                    break
                if not (d == 0 or (d == 12 and raw.startswith(_STMT_ID, k_end))):
                    status = PIPELINE
                    break
            if raw[w + 23 : w + 40] != v_wall or not raw.startswith(_T, w + 12):
                status = PIPELINE
                break
            key_raw = raw[o2:k_end]
            # -- the event ---------------------------------------------------------------------
            full = desc = diff = None
            token, after = t.token, t.after
            if op == "i":
                op_type = "insert"
                full = raw[o:o_end]
            elif op == "d":
                op_type = "delete"
            elif raw.startswith(_DELTA, o + 4):
                op_type = "update"
                if not ids_only:
                    diff = bsonutil.decode(raw[o:o_end])["diff"]
                    desc = R.UPDATE_DESCRIPTION + bsonutil.encode_in_order(update_description(diff, show_expanded=expanded))
            else:
                op_type = "replace"
                full = raw[o:o_end]
                token, after = t.replace_token, t.replace_after
            data = None
            if token is not None:
                if key_raw[:9] == id_int32 and (v := i32(key_raw, 9)[0]) > 0:  # {_id: a positive int32}
                    h = "%X" % (v << 1)
                    data = "".join(("82%016X" % key, token.int_prefix[len(h)], h, "000004"))
                else:
                    fields = bson_document_key_fields(key_raw)
                    if fields is not None:
                        data = "".join(("82%016X" % key, token.prefix, fields.hex().upper(), "000004"))
            if data is not None:
                tok = data.encode()
                head = heads.get(len(tok)) or _token_head(len(tok))
                bits = None
                close = b"\x00\x00"  # (the hex's NUL, the token document's end: the start of `after`)
            else:  # a documentKey whose KeyString has type bits (a long, a double...): the general encoder
                data, bits = encode_event_token(key, 0, t.ui, op_type, bsonutil.decode(key_raw), False)
                head, tok, after = R.ID, R.token_bytes(data, bits), after[2:]
                close = b""
            if ids_only:  # `{_id: <token>}`: nothing else of the event is assembled
                ev = _id_only(b"".join((head, tok, close)))
                size = len(ev)
                if out_raws and size + OVERHEAD > budget:
                    status = FULL
                    break
            else:
                ts_le = key.to_bytes(8, "little")
                wall = raw[w + 40 : w + 48]
                if full is not None:
                    body = b"".join((head, tok, after, ts_le, t.mid, wall, full_document, full, t.ns_key, key_raw,
                                     b"\x00"))
                elif desc is not None:
                    body = b"".join((head, tok, after, ts_le, t.mid, wall, t.ns_key, key_raw, desc, b"\x00"))
                else:
                    body = b"".join((head, tok, after, ts_le, t.mid, wall, t.ns_key, key_raw, b"\x00"))
                size = len(body) + 4
                weight = size + len(data) + (len(bits) if bits else 0) if with_sort_key else size
                if weight > near and self.too_large(size, data, bits):
                    status = PIPELINE
                    break
                if out_raws and size + OVERHEAD > budget:
                    status = FULL
                    break
                ev = size.to_bytes(4, "little") + body
                if cache is not None:
                    cache.put((base + i, expanded), (op_type, make_token(data, bits), ev, None, diff))
            if bits is not None:
                out_bits[len(out_raws)] = bits
            add_raw(ev)
            add_key(data)
            add_op(op_type)
            last = key
            budget -= size + OVERHEAD
            room -= 1
            i += 1
        if i > start:
            source.scanned += i - start
            source.latest_key = keys[i - 1]
            source.pos = base + i
        batch.size = BATCH_BYTES - budget
        if len(out_raws) > first:
            cur = self.cursor
            cur.pbrt = batch.token(len(out_raws) - 1)
            cur.pbrt_key = last
        return status
