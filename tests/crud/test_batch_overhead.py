"""A cursor batch counts each document's place in the reply's array (its type byte, index digits and
NUL: FindCommon's kPerDocumentOverheadBytesUpperBound), so a batch of many small documents still
fits one reply: getMore without a batch size on 16 MB of ~1 KB documents never answers
BSONObjectTooLarge."""

from __future__ import annotations

import trio

from mongosim.core import open_cluster
from mongosim.oplog import bsonutil
from mongosim.router.server import ConnState, _encode_reply


def test_a_full_batch_of_small_documents_fits_one_reply():
    async def main() -> None:
        async with open_cluster(shards=1, listen=False) as core:
            router = core.router
            conn = ConnState(1, "test")
            n = 15_000
            for k in range(0, n, 1000):
                docs = [{"_id": i, "pad": "p" * 1100} for i in range(k, k + 1000)]
                await router.run_command("db", {"insert": "c", "documents": docs}, conn)
            reply = await router.run_command("db", {"find": "c", "filter": {}}, conn)
            got = len(reply["cursor"]["firstBatch"])
            cid = reply["cursor"]["id"]
            while cid:
                reply = await router.run_command("db", {"getMore": cid, "collection": "c"}, conn)
                got += len(reply["cursor"]["nextBatch"])
                cid = reply["cursor"]["id"]
                encoded = _encode_reply(router.decorate(reply, "db", {}, conn), 1)
                assert b"BSONObjectTooLarge" not in encoded
                assert len(encoded) <= bsonutil.MAX_BSON_OBJECT_SIZE + 16 * 1024 + 21
            assert got == n

    trio.run(main)
