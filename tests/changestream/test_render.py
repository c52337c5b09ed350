"""The renderer (events from the oplog's bytes) equals the reference transform, byte for byte."""

from __future__ import annotations

import trio
import trio.testing
from bson import Binary, Decimal128, Int64, ObjectId
from hypothesis import given, settings
from hypothesis import strategies as st

from mongosim.core import open_cluster
from mongosim.testing import AsyncClient
from mongosim.oplog import bsonutil
from mongosim.shardsim.changestream.context import ChangeStreamContext
from mongosim.shardsim.changestream.render import render_crud
from mongosim.shardsim.changestream.spec import ChangeStreamSpec
from mongosim.shardsim.changestream.transform import Transform

ids = st.one_of(st.integers(-(2**31), 2**31 - 1), st.text(max_size=5), st.builds(ObjectId),
                st.integers(2**40, 2**50).map(Int64), st.floats(allow_nan=False, allow_infinity=False))
values = st.one_of(st.integers(-1000, 1000), st.text(max_size=8), st.none(), st.booleans(),
                   st.lists(st.integers(0, 9), max_size=4), st.dictionaries(st.sampled_from("abc"), st.integers(0, 9), max_size=2))
ops = st.lists(st.tuples(st.sampled_from(["insert", "set", "unset", "replace", "delete", "push"]), st.integers(0, 4), values),
               min_size=1, max_size=15)


async def _check(id_values, script, sharded, retryable):
    async with open_cluster(topology="replset", listen=False, epoch=1_700_000_000) as core:
        c = AsyncClient(core.frontend)
        node = core.nodes["shard00"]
        if sharded:
            await c.command("db", {"create": "c"})
            node.catalog.collection("db", "c").shard_key = {"k": 1, "_id": 1}
        extra = {"lsid": {"id": Binary(b"\x01" * 16, 4)}} if retryable else {}
        txn = iter(range(1, 10_000))
        live: set[int] = set()
        for op, n, v in script:
            n %= len(id_values)
            _id = id_values[n]
            session = dict(extra, txnNumber=Int64(next(txn))) if retryable else {}
            if op == "insert" and n not in live:
                await c.command("db", {"insert": "c", "documents": [{"_id": _id, "k": n, "v": v}], **session})
                live.add(n)
            elif op in ("set", "unset", "push") and n in live:
                u = {"set": {"$set": {"v": v}}, "unset": {"$unset": {"v": 1}}, "push": {"$push": {"arr": v}}}[op]
                await c.command("db", {"update": "c", "updates": [{"q": {"_id": _id}, "u": u}], **session})
            elif op == "replace" and n in live:
                await c.command("db", {"update": "c", "updates": [{"q": {"_id": _id}, "u": {"k": n, "w": v}}], **session})
            elif op == "delete" and n in live:
                await c.command("db", {"delete": "c", "deletes": [{"q": {"_id": _id}, "limit": 1}], **session})
                live.discard(n)
        oplog = node.oplog
        checked = 0
        for expanded in (False, True):
            spec = ChangeStreamSpec(show_expanded_events=expanded)
            ctx = ChangeStreamContext(node, spec, "collection", "db", "c", False, 0)
            transform = Transform(None, ctx)
            for pos in range(oplog.start, oplog.end):
                _key, op, ns = oplog.meta_at(pos)
                if op not in ("i", "u", "d") or ns != "db.c":
                    continue
                view = oplog.view_at(pos)
                assert view is not None
                fast = render_crud(view, expanded, False)
                slow = transform.transform(oplog.entry_at(pos))
                assert fast is not None
                op_type, token, raw, _dk, _diff = fast
                assert op_type == slow.op_type and token == slow.token
                assert raw == bsonutil.encode_in_order(slow.doc), (bsonutil.decode(raw), slow.doc)
                checked += 1
        return checked


@given(id_values=st.lists(ids, min_size=1, max_size=5, unique_by=lambda x: (type(x).__name__, x)), script=ops,
       sharded=st.booleans(), retryable=st.booleans())
@settings(max_examples=150)
def test_rendered_events_equal_the_transform(id_values, script, sharded, retryable):
    checked = trio.run(_check, id_values, script, sharded, retryable, clock=trio.testing.MockClock(autojump_threshold=0))
    assert checked >= 2 * any(op == "insert" for op, _n, _v in script)
