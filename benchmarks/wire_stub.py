"""The reference servers of the benchmarks: as little as pymongo needs, nothing more.

Two modes, each run as its own process (``python -m benchmarks.wire_stub
--mode ceiling|ack ...``; it prints ``stub ready: mongodb://...`` when it
listens), so that the server and the pymongo client each have a core, as
with mongosim:

- ``ceiling``: answers the handshake, opens a change-stream cursor on any
  ``aggregate`` (empty first batch) and answers every ``getMore`` with the
  next ``batchSize`` events replayed from a file of pre-encoded events
  (captured from mongosim, so byte for byte the same events).  Every reply is
  encoded before the server says it is ready: serving one is a header and a
  ``sendall``.  Its events/s through pymongo ``watch()`` is the ceiling: no
  server can feed pymongo faster on this machine for that event shape.
- ``ack``: answers ``insert`` with ``{n: <documents received>, ok: 1}``
  without looking at the documents (it only walks their lengths); ``update``
  and ``delete`` with ``{n: 1, nModified: 1, ok: 1}``; ``find`` with a
  cursor holding one document of the benchmarks' shape, whose ``_id`` is the
  filter's (what a ``find_one`` by ``_id`` returns), so that the client
  decodes the same reply as from mongosim.

Both answer ``hello``/``isMaster`` as a mongos 8.0 does (``msg: "isdbgrid"``,
``maxWireVersion: 25``, ``logicalSessionTimeoutMinutes``; no
``topologyVersion``, so pymongo polls instead of streaming), and any other
command with ``{ok: 1}``.  Every reply carries ``operationTime`` and
``$clusterTime``, as mongosim's do, so the client decodes the same envelope.

Plain blocking sockets, one thread per connection: pymongo holds a monitor
connection and one pooled connection here, and the idle one costs nothing.
"""

from __future__ import annotations

import argparse
import socket
import struct
import sys
import threading
from datetime import datetime, timezone

import bson
from bson import Int64, Timestamp
from bson.raw_bson import RawBSONDocument

OP_REPLY, OP_QUERY, OP_MSG = 1, 2004, 2013
HEADER = struct.Struct("<iiii")
INT32 = struct.Struct("<i")
MORE_TO_COME = 1 << 1
CURSOR_ID = 0x1234_5678_9ABC
CLUSTER_TIME = Timestamp(1_800_000_000, 1)
ENVELOPE = {
    "operationTime": CLUSTER_TIME,
    "$clusterTime": {"clusterTime": CLUSTER_TIME,
                     "signature": {"hash": bson.Binary(b"\x00" * 20, 0), "keyId": Int64(0)}},
}


# what `find` answers (with the filter's _id): a document shaped like the benchmarks' (harness.make_doc)
FOUND = {"_id": 0, "customer": "customer-00000", "region": "eu-west", "total": 10.0,
         "items": [{"sku": "sku-0000", "qty": 1}, {"sku": "sku-0000", "qty": 2}], "status": "placed", "note": "n" * 10}


def hello_reply(cmd: dict, conn_id: int) -> dict:
    legacy = next(iter(cmd)).lower() == "ismaster"
    r: dict = {}
    if cmd.get("helloOk"):
        r["helloOk"] = True
    r["ismaster" if legacy else "isWritablePrimary"] = True
    r["msg"] = "isdbgrid"
    r["maxBsonObjectSize"] = 16 * 1024 * 1024
    r["maxMessageSizeBytes"] = 48_000_000
    r["maxWriteBatchSize"] = 100_000
    r["localTime"] = datetime.now(timezone.utc).replace(tzinfo=None)
    r["logicalSessionTimeoutMinutes"] = 30
    r["connectionId"] = conn_id
    r["minWireVersion"] = 0
    r["maxWireVersion"] = 25
    r["ok"] = 1.0
    return r


def read_events(path: str) -> list[RawBSONDocument]:
    """A file of concatenated BSON documents -> raw documents (bytes untouched)."""
    data = open(path, "rb").read()
    out, pos = [], 0
    while pos < len(data):
        (size,) = INT32.unpack_from(data, pos)
        out.append(RawBSONDocument(data[pos:pos + size]))
        pos += size
    return out


def msg_payload(body: bytes) -> bytes:
    """OP_MSG after the header: flagBits 0, one kind-0 section."""
    return b"\x00\x00\x00\x00\x00" + body


class Replay:
    """The ceiling's pre-encoded getMore replies: for each batch size, one reply per batch."""

    def __init__(self, events: list[RawBSONDocument], ns: str, batch_sizes: list[int]) -> None:
        self.events = events
        self.ns = ns
        self.replies: dict[int, list[bytes]] = {}
        for b in batch_sizes:
            self.replies[b] = self._encode(b)
        self.first = msg_payload(bson.encode({
            "cursor": {"firstBatch": [], "postBatchResumeToken": dict(events[0]["_id"]),
                       "id": Int64(CURSOR_ID), "ns": ns}, "ok": 1.0, **ENVELOPE}))

    def _encode(self, b: int) -> list[bytes]:
        out = []
        n = len(self.events)
        for start in range(0, n, b):
            batch = [self.events[(start + k) % n] for k in range(b)]
            body = bson.encode({"cursor": {"nextBatch": batch, "postBatchResumeToken": dict(batch[-1]["_id"]),
                                           "id": Int64(CURSOR_ID), "ns": self.ns}, "ok": 1.0, **ENVELOPE})
            out.append(msg_payload(body))
        return out

    def batches(self, b: int) -> list[bytes]:
        got = self.replies.get(b)
        if got is None:  # not announced at start-up: encode now (and say so: it is not free)
            print(f"stub: encoding batch size {b} on demand", file=sys.stderr, flush=True)
            got = self.replies[b] = self._encode(b)
        return got


class Connection:
    def __init__(self, sock: socket.socket, conn_id: int, replay: Replay | None) -> None:
        self.sock = sock
        self.conn_id = conn_id
        self.replay = replay
        self.cursor_batches: list[bytes] = []
        self.cursor_pos = 0
        self.cursor_size = 0
        self.next_rid = 1

    def recv_exact(self, n: int) -> bytes | None:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                return None
            buf += chunk
        return bytes(buf)

    def send(self, op: int, response_to: int, payload: bytes) -> None:
        self.next_rid += 1
        self.sock.sendall(HEADER.pack(16 + len(payload), self.next_rid, response_to, op) + payload)

    def serve(self) -> None:
        with self.sock:
            while True:
                head = self.recv_exact(16)
                if head is None:
                    return
                length, rid, _resp, op = HEADER.unpack(head)
                rest = self.recv_exact(length - 16)
                if rest is None:
                    return
                if op == OP_QUERY:
                    # flags, cstring collection, skip, nreturn, query
                    end = rest.index(b"\x00", 4)
                    (qlen,) = INT32.unpack_from(rest, end + 9)
                    cmd = bson.decode(rest[end + 9:end + 9 + qlen])
                    reply = bson.encode(self.answer(cmd, 0))
                    self.send(OP_REPLY, rid, struct.pack("<iqii", 0, 0, 0, 1) + reply)
                elif op == OP_MSG:
                    self.on_msg(rid, rest)
                else:
                    return

    def on_msg(self, rid: int, rest: bytes) -> None:
        (flags,) = struct.unpack_from("<I", rest, 0)
        pos = 4
        body: dict = {}
        n_docs = 0
        end = len(rest) - (4 if flags & 1 else 0)
        while pos < end:
            kind = rest[pos]
            pos += 1
            (size,) = INT32.unpack_from(rest, pos)
            if kind == 0:
                body = bson.decode(rest[pos:pos + size])
            else:  # a document sequence: count its documents, never decode them
                stop = pos + size
                p = rest.index(b"\x00", pos + 4) + 1
                while p < stop:
                    (dsize,) = INT32.unpack_from(rest, p)
                    p += dsize
                    n_docs += 1
            pos += size
        name = next(iter(body), "")
        if name == "getMore" and self.cursor_batches:
            payload = self.cursor_batches[self.cursor_pos]
            self.cursor_pos = (self.cursor_pos + 1) % len(self.cursor_batches)
        elif name == "aggregate" and self.replay is not None:
            size = (body.get("cursor") or {}).get("batchSize") or 1000
            self.cursor_batches = self.replay.batches(size)
            self.cursor_pos = 0
            payload = self.replay.first
        else:
            payload = msg_payload(bson.encode(self.answer(body, n_docs)))
        if not flags & MORE_TO_COME:
            self.send(OP_MSG, rid, payload)

    def answer(self, cmd: dict, n_docs: int) -> dict:
        name = next(iter(cmd), "")
        if name.lower() in ("hello", "ismaster"):
            return hello_reply(cmd, self.conn_id)
        if name == "insert":
            return {"n": n_docs + len(cmd.get("documents", ())), "ok": 1.0, **ENVELOPE}
        if name in ("update", "delete"):
            return {"n": 1, "nModified": 1, "ok": 1.0, **ENVELOPE} if name == "update" else {"n": 1, "ok": 1.0, **ENVELOPE}
        if name == "find":
            doc = {**FOUND, "_id": (cmd.get("filter") or {}).get("_id")}
            ns = f"{cmd.get('$db', 'stub')}.{cmd['find']}"
            return {"cursor": {"firstBatch": [doc], "id": Int64(0), "ns": ns}, "ok": 1.0, **ENVELOPE}
        if name == "getMore":  # a getMore without a replay cursor: an empty, live batch
            return {"cursor": {"nextBatch": [], "id": Int64(CURSOR_ID), "ns": "stub.stub"}, "ok": 1.0, **ENVELOPE}
        return {"ok": 1.0, **ENVELOPE}


def serve(host: str, port: int, replay: Replay | None) -> None:
    lsock = socket.create_server((host, port))
    print(f"stub ready: mongodb://{host}:{lsock.getsockname()[1]}/", flush=True)
    conn_id = 0
    while True:
        sock, _ = lsock.accept()
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn_id += 1
        threading.Thread(target=Connection(sock, conn_id, replay).serve, daemon=True).start()


def main(argv: list[str] | None = None) -> int:
    from mongosim.gc_tuning import collect_less_often
    from mongosim.malloc_tuning import keep_freed_memory

    keep_freed_memory()  # the same allocator and collector settings as `mongosim serve`: a like-for-like reference
    collect_less_often()
    p = argparse.ArgumentParser(prog="python -m benchmarks.wire_stub", description=__doc__.split("\n")[0])
    p.add_argument("--mode", choices=["ceiling", "ack"], required=True)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--events", help="ceiling: file of concatenated BSON change events to replay")
    p.add_argument("--ns", default="bench.events", help="ceiling: the cursor's namespace")
    p.add_argument("--batch-sizes", default="1000", help="ceiling: batch sizes to pre-encode (comma-separated)")
    args = p.parse_args(argv)
    replay = None
    if args.mode == "ceiling":
        if not args.events:
            p.error("--mode ceiling needs --events")
        replay = Replay(read_events(args.events), args.ns, [int(b) for b in args.batch_sizes.split(",")])
    try:
        serve(args.host, args.port, replay)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
