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

What comes out is byte for byte what the pipeline gives (a property test runs
both over random workloads: tests/changestream/test_batch_render.py).
"""

from __future__ import annotations

from struct import unpack_from

from mongosim.oplog import bsonutil
from mongosim.oplog import entry as E
from mongosim.oplog.layout import crud_layout
from mongosim.oplog.resume_token import bson_document_key_fields, crud_token_prefix, encode_event_token
from mongosim.shardsim.changestream import render as R
from mongosim.shardsim.changestream.event_batch import BATCH_BYTES, EventBatch, make_token
from mongosim.shardsim.query.diff import update_description

# How a run ended.
FULL = 0  # the batch holds `limit` events, or the next event would overflow its bytes
END = 1  # every entry of the oplog was read
PIPELINE = 2  # the next entry is for the stage pipeline

# After `o2` (or a delete's `o`): [stmtId: int32] ts t v wall ..., t and v constant (oplog.entry)
_STMT_ID = b"\x10stmtId\x00"
_TS = b"\x11ts\x00"
_T_V_WALL = (b"\x12t\x00" + int(E.TERM).to_bytes(8, "little") + b"\x12v\x00" + int(E.VERSION).to_bytes(8, "little")
             + b"\x09wall\x00")
_FROM_MIGRATE = b"\x08fromMigrate\x00\x01"
_O2 = b"\x03o2\x00"
_DELTA = b"\x10$v\x00\x02\x00\x00\x00"
_TOKEN_END = b"\x00\x00\x04"  # ends the documentKey, the eventIdentifier, the KeyString
_POSITIVE_INT_CTYPE = [b""] + [bytes((43 + i,)) for i in range(8)]  # KeyString: positive integer of n bytes
_ID_INT32 = b"\x0e\x00\x00\x00\x10_id\x00"  # a documentKey {_id: <int32>}
_ID_FIELD = b"\x1e_id\x00"  # KeyString: a number field named _id
_TOKEN_HEADS: dict[int, bytes] = {}  # `_id` element + token document up to its hex, by hex length
_OPS = {"i": "insert", "d": "delete"}
_ZERO = b"\x00\x00\x00\x00"
_MISSING = object()
_SKIP = object()  # the namespace is not the stream's
_PIPELINE = object()  # the namespace's entries go to the pipeline


def _token_head(n: int) -> bytes:
    """`_id: {_data: "` up to the hex of length `n` (then hex, NUL, end of document)."""
    head = _TOKEN_HEADS.get(n)
    if head is None:
        head = _TOKEN_HEADS[n] = R.ID + (n + 17).to_bytes(4, "little") + R.DATA + (n + 1).to_bytes(4, "little")
    return head


class Template:
    """The constant pieces of one collection's entries and events (for one stream's options)."""

    __slots__ = ("ui", "headers", "mid", "ns_key", "prefix", "after_token")

    def __init__(self, ns: str, ui: bytes, expanded: bool) -> None:
        ns_b = ns.encode()
        ns_ui = (b"\x02ns\x00" + (len(ns_b) + 1).to_bytes(4, "little") + ns_b + b"\x00"
                 + b"\x05ui\x00\x10\x00\x00\x00\x04" + ui + b"\x03o\x00")
        self.ui = ui
        self.headers = {op: b"\x02op\x00\x02\x00\x00\x00" + op.encode() + b"\x00" + ns_ui for op in "iud"}
        self.mid = (R.COLLECTION_UUID + ui if expanded else b"") + R.WALL_TIME  # between clusterTime and wall
        self.ns_key = R.ns_elem(ns) + R.DOCUMENT_KEY
        self.prefix = {t: crud_token_prefix(ui, t) for t in ("insert", "update", "replace", "delete")}
        # end of the token document, operationType, clusterTime's name (its value follows)
        self.after_token = {t: b"\x00\x00" + R.OP_TYPE[t] + R.CLUSTER_TIME for t in self.prefix}


class RunRenderer:
    """Renders runs of CRUD entries for one change-stream cursor (see the module doc)."""

    def __init__(self, cursor, max_event: int) -> None:
        ctx = cursor.ctx
        self.cursor = cursor
        self.source = cursor.source
        self.oplog = self.source.oplog
        self.nsf = ctx.nsf
        self.expanded = ctx.spec.show_expanded_events
        self.show_migration = ctx.spec.show_migration_events
        self.views_ns = f"{ctx.db}.system.views"
        self.max_event = max_event
        self.cache = getattr(ctx.node, "event_cache", None)
        self.stages = cursor.stages
        self._ns: dict[str, object] = {}  # namespace -> Template, _SKIP or _PIPELINE
        self._cmd: dict[str, bool] = {}  # command namespace -> does the stream read it

    def ready(self) -> bool:
        """Does every stage pass a CRUD event on unchanged right now?"""
        for stage in self.stages:
            if not stage.skippable():
                return False
        return True

    def _namespace(self, ns: str) -> object:
        nsf = self.nsf
        if nsf.ns(ns):
            kind = _PIPELINE if ns.endswith(".system.views") else None
        else:
            kind = _PIPELINE if (self.expanded and ns == self.views_ns) else _SKIP
        self._ns[ns] = kind
        return kind

    def _template(self, ns: str, raw: bytes) -> Template | None:
        """The template for an entry of `ns` the current one does not fit (a new collection UUID)."""
        ui = crud_layout(raw)[3]
        if ui is None:
            return None
        old = self._ns.get(ns)
        if isinstance(old, Template) and old.ui == ui:
            return None  # same collection, other layout: the pipeline's
        t = self._ns[ns] = Template(ns, ui, self.expanded)
        return t

    def fill(self, batch: EventBatch, limit: int) -> int:
        """Render events into `batch` until it holds `limit`; return FULL, END or PIPELINE."""
        source = self.source
        oplog = self.oplog
        if source.pos < oplog.start:
            return PIPELINE  # (its scan raises CappedPositionLost)
        keys, ops, nss, raws = oplog.column_refs()
        base = oplog.start
        n = len(raws)
        start = i = source.pos - base
        namespaces = self._ns
        cache = self.cache
        expanded = self.expanded
        max_event = self.max_event
        budget = BATCH_BYTES - batch.size
        out_raws, out_keys, out_ops, out_bits = batch.raws, batch.keys, batch.ops, batch.bits
        room = limit - len(out_raws)
        first = len(out_raws)
        status = END
        last = 0
        while i < n:
            if room <= 0:
                status = FULL
                break
            op = ops[i]
            ns = nss[i]
            if op == "n":
                if ns and self.nsf.ns(ns):
                    status = PIPELINE
                    break
                i += 1
                continue
            if op == "c":
                reads = self._cmd.get(ns)
                if reads is None:
                    reads = self._cmd[ns] = self.nsf.cmd(ns) or ns == "admin.$cmd"
                if reads:
                    status = PIPELINE
                    break
                i += 1
                continue
            t = namespaces.get(ns, _MISSING)
            if t is _MISSING:
                t = self._namespace(ns)
            if t is _SKIP:
                i += 1
                continue
            if t is _PIPELINE:
                status = PIPELINE
                break
            raw = raws[i]
            if cache is not None:
                hit = cache.get((base + i, expanded))
                if hit is not None:
                    op_type, token, ev, _dk, _diff = hit
                    size = len(ev)
                    if size > max_event or (out_raws and size > budget):
                        status = PIPELINE if size > max_event else FULL
                        break
                    tb = token.get("_typeBits")
                    if tb is not None:
                        out_bits[len(out_raws)] = bytes(tb)
                    out_raws.append(ev)
                    out_keys.append(token["_data"])
                    out_ops.append(op_type)
                    last = keys[i]
                    budget -= size
                    room -= 1
                    i += 1
                    continue
            p = raw.find(t.headers[op], 4) if t is not None else -1
            if p < 0:
                t = self._template(ns, raw)
                p = raw.find(t.headers[op], 4) if t is not None else -1
                if p < 0:
                    status = PIPELINE
                    break
            # -- where o, o2, ts and wall are --------------------------------------------------
            o = p + len(t.headers[op])
            o_end = o + unpack_from("<i", raw, o)[0]
            if op == "d":
                o2, k_end = o, o_end  # a delete's `o` is its documentKey
            elif raw.startswith(_O2, o_end):
                o2 = o_end + 4
                k_end = o2 + unpack_from("<i", raw, o2)[0]
            else:
                status = PIPELINE
                break
            # then [stmtId: int32] [fromMigrate: true] ts t v wall ...
            w = raw.find(_TS, k_end, k_end + 40)
            d = w - k_end
            if not ((d == 0 or (d == 12 and raw.startswith(_STMT_ID, k_end))) and raw.startswith(_T_V_WALL, w + 12)):
                if d >= 14 and raw.startswith(_FROM_MIGRATE, w - 14) and not self.show_migration:
                    i += 1  # a migration's write: no event (showMigrationEvents is off)
                    continue
                status = PIPELINE
                break
            key_raw = raw[o2:k_end]
            # -- the event ---------------------------------------------------------------------
            full = desc = diff = None
            if op == "i":
                op_type = "insert"
                full = raw[o:o_end]
            elif op == "d":
                op_type = "delete"
            elif raw.startswith(_DELTA, o + 4):
                op_type = "update"
                diff = bsonutil.decode(raw[o:o_end])["diff"]
                desc = R.UPDATE_DESCRIPTION + bsonutil.encode_in_order(update_description(diff, show_expanded=expanded))
            else:
                op_type = "replace"
                full = raw[o:o_end]
            ts_le = raw[w + 4 : w + 12]
            prefix = t.prefix[op_type]
            fields = None
            if prefix is not None:
                if len(key_raw) == 14 and key_raw.startswith(_ID_INT32) and key_raw[12] < 0x80 and key_raw[9:13] != _ZERO:
                    v = int.from_bytes(key_raw[9:13], "little") << 1  # {_id: a positive int32}
                    nb = (v.bit_length() + 7) >> 3
                    fields = _ID_FIELD + _POSITIVE_INT_CTYPE[nb] + v.to_bytes(nb, "big")
                else:
                    fields = bson_document_key_fields(key_raw)
            if fields is not None:
                data = (b"\x82" + ts_le[::-1] + prefix + fields + _TOKEN_END).hex().upper()
                data_b = data.encode()
                head, tok, tail, bits = _token_head(len(data_b)), data_b, t.after_token[op_type], None
            else:  # a documentKey whose KeyString has type bits (a long, a double...): the general encoder
                data, bits = encode_event_token(keys[i], 0, t.ui, op_type, bsonutil.decode(key_raw), False)
                head, tok, tail = R.ID, R.token_bytes(data, bits), R.OP_TYPE[op_type] + R.CLUSTER_TIME
            wall = raw[w + 40 : w + 48]
            if full is not None:
                body = b"".join((head, tok, tail, ts_le, t.mid, wall, R.FULL_DOCUMENT, full, t.ns_key, key_raw, b"\x00"))
            elif desc is not None:
                body = b"".join((head, tok, tail, ts_le, t.mid, wall, t.ns_key, key_raw, desc, b"\x00"))
            else:
                body = b"".join((head, tok, tail, ts_le, t.mid, wall, t.ns_key, key_raw, b"\x00"))
            size = len(body) + 4
            if size > max_event or (out_raws and size > budget):
                status = PIPELINE if size > max_event else FULL
                break
            ev = size.to_bytes(4, "little") + body
            if cache is not None:
                cache.put((base + i, expanded), (op_type, make_token(data, bits), ev, None, diff))
            if bits is not None:
                out_bits[len(out_raws)] = bits
            out_raws.append(ev)
            out_keys.append(data)
            out_ops.append(op_type)
            last = keys[i]
            budget -= size
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
