"""The server's cost of one command, in process: the ops benchmark's requests through the wire.

    python -m benchmarks.profile_ops [--ops N] [--only insert_one,find_one,update_one] [--profile] [--top K]
    valgrind --tool=callgrind python -m benchmarks.profile_ops --callgrind [...]
    valgrind --tool=callgrind python -m benchmarks.profile_ops --callgrind --pymongo   # the client's own cost

A 2-shard cluster with the options of ``mongosim serve`` (``open_cluster``, listening on a free port) in this
process, an unsharded collection of ``--preload`` documents; a raw socket sends the OP_MSG bytes pymongo sends
for ``insert_one`` (a 200-byte document, a retryable write: ``lsid``, ``txnNumber``; the document as a kind-1
sequence), ``find_one({"_id": ...})`` (``limit: 1, singleBatch: true``) and ``update_one({"_id": ...},
{"$inc": {"total": 1}})`` (a retryable write; the update as a kind-1 sequence), each with the ``lsid`` and
``$clusterTime`` pymongo gossips, built before the clock starts, and reads each reply (checked after the
timed part).  The client's side is a write and a read on the socket: the CPU time (``time.process_time``)
is the server's: wire decode, router, shard, reply.  ``--profile``: each kind's timed part under cProfile,
the top functions by own time (cProfile slows Python code ~2x: compare the shares; ``PROFILE_SORT=cumulative``
sorts otherwise, ``PROFILE_CALLERS=<regex>`` also prints who calls the functions it matches).  ``--callgrind`` (the
process run under valgrind's callgrind): the counters are zeroed before each kind's timed part and dumped
after it, and the instructions per command printed; ``callgrind_annotate`` reads each dump per function.

``--pymongo``: the reference side instead: pymongo's own instructions per operation (the same three,
through a ``MongoClient``), against ``wire_stub --mode ack`` run as another process, as in ``bench_ops``.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import itertools
import os
import pstats
import struct
import sys
import tempfile
import time
import uuid
from functools import partial
from typing import Callable

import trio
from bson import Binary, Int64, Timestamp

from benchmarks import harness as H
from benchmarks.profile_insert import _callgrind, _dumped_instructions
from mongosim.core import open_cluster
from mongosim.gc_tuning import collect_less_often
from mongosim.malloc_tuning import keep_freed_memory
from mongosim.oplog import bsonutil

DB, COLL = "bench", "ops"
OPS = ("insert_one", "find_one", "update_one")


def op_msg(body: dict, request_id: int, sequence: tuple[str, list[dict]] | None = None) -> bytes:
    """An OP_MSG as pymongo sends it: the body (kind 0), then the batch as a document sequence (kind 1)."""
    payload = struct.pack("<I", 0) + b"\x00" + bsonutil.encode(body)
    if sequence is not None:
        name, docs = sequence
        ident = name.encode() + b"\x00"
        seq = b"".join(bsonutil.encode(d) for d in docs)
        payload += b"\x01" + struct.pack("<i", 4 + len(ident) + len(seq)) + ident + seq
    return struct.pack("<iiii", 16 + len(payload), request_id, 0, 2013) + payload


def requests(kind: str, n: int, *, lsid: Binary, cluster_time: Timestamp, txn: itertools.count,
             new_ids: itertools.count, preload: int, request_ids: itertools.count) -> list[bytes]:
    """`n` commands of `kind` in pymongo's field order (see pymongo's CommandListener events)."""
    gossip = {"clusterTime": cluster_time, "signature": {"hash": b"\x00" * 20, "keyId": 0}}
    session = {"id": lsid}
    out = []
    for i in range(n):
        rid = next(request_ids)
        if kind == "insert_one":
            out.append(op_msg({"insert": COLL, "ordered": True, "lsid": session, "txnNumber": Int64(next(txn)),
                               "$clusterTime": gossip, "$db": DB}, rid, ("documents", [H.make_doc(next(new_ids))])))
        elif kind == "find_one":
            out.append(op_msg({"find": COLL, "filter": {"_id": i % preload}, "limit": 1, "singleBatch": True,
                               "lsid": session, "$clusterTime": gossip, "$db": DB}, rid))
        else:
            out.append(op_msg({"update": COLL, "ordered": True, "lsid": session, "txnNumber": Int64(next(txn)),
                               "$clusterTime": gossip, "$db": DB}, rid,
                              ("updates", [{"q": {"_id": i % preload}, "u": {"$inc": {"total": 1}}, "multi": False,
                                            "upsert": False}])))
    return out


def check(kind: str, reply: dict) -> None:
    ok = reply.get("ok") == 1 and "writeErrors" not in reply
    if kind == "find_one":
        ok = ok and len(reply["cursor"]["firstBatch"]) == 1
    else:
        ok = ok and reply.get("n") == 1
    if not ok:
        raise AssertionError(f"{kind}: {reply}")


class Client:
    """One connection, blocking in trio's sense only: a write, then reads until a whole reply is in."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.fd = stream.socket.fileno()
        self.buf = bytearray()

    async def call(self, msg: bytes) -> bytes:
        sent = os.write(self.fd, msg)
        if sent < len(msg):  # (a large message: the socket took part of it)
            await self.stream.send_all(memoryview(msg)[sent:])
        buf = self.buf
        while True:
            await trio.lowlevel.wait_readable(self.fd)  # (the reply is never there yet: no read to fail first)
            buf += os.read(self.fd, 1 << 16)
            if len(buf) >= 4:
                n = int.from_bytes(buf[:4], "little")
                if len(buf) >= n:
                    reply = bytes(buf[:n])
                    del buf[:n]
                    return reply


class OpcodeCounter:
    """Bytecodes executed per function (own and inclusive), counted by a trace function: a
    deterministic picture of where the Python work goes (C calls count nothing here)."""

    def __init__(self) -> None:
        self.total = 0
        self.own: dict = {}
        self.inclusive: dict = {}
        self.calls: dict = {}
        self.names: dict = {}
        self._starts: list = []

    def _local(self, frame, event, _arg):
        if event == "opcode":
            self.total += 1
            code = frame.f_code
            self.own[code] = self.own.get(code, 0) + 1
        elif event == "return":
            code, start = self._starts.pop()
            self.inclusive[code] = self.inclusive.get(code, 0) + self.total - start
        return self._local

    def _global(self, frame, event, _arg):
        if event != "call":
            return None
        frame.f_trace_opcodes = True
        code = frame.f_code
        if code not in self.calls:
            self.calls[code] = 0
            if code.co_filename == "<string>":  # a generated method (dataclass, attrs): name its class
                owner = frame.f_locals.get("self")
                self.names[code] = f"<{type(owner).__module__}.{type(owner).__qualname__}.{code.co_name}>"
        self.calls[code] += 1
        self._starts.append((code, self.total))
        return self._local

    def __enter__(self) -> "OpcodeCounter":
        sys.settrace(self._global)
        return self

    def __exit__(self, *exc) -> None:
        sys.settrace(None)

    def report(self, n: int, top: int) -> None:
        def name(code) -> str:
            if code in self.names:
                return self.names[code]
            return f"{os.path.relpath(code.co_filename)}:{code.co_firstlineno}({code.co_qualname})"

        print(f"{self.total / n:.0f} bytecodes per command; by own count (per command: own, inclusive, calls)")
        for code, c in sorted(self.own.items(), key=lambda kv: -kv[1])[:top]:
            print(f"{c / n:8.1f} {self.inclusive.get(code, 0) / n:9.1f} {self.calls[code] / n:6.2f}  {name(code)}")
        print("by inclusive count")
        for code, c in sorted(self.inclusive.items(), key=lambda kv: -kv[1])[:top]:
            print(f"{self.own.get(code, 0) / n:8.1f} {c / n:9.1f} {self.calls[code] / n:6.2f}  {name(code)}")


def _decoded(raw: bytes) -> dict:
    return bsonutil.decode(raw[21:])


async def measure(n: int, kinds: list[str], preload: int, profile: bool, top: int, callgrind: bool,
                  count: bool = False) -> dict:
    async with open_cluster(shards=2, port=0) as core:
        client = Client(await trio.open_tcp_stream("127.0.0.1", core.port))
        rids = itertools.count(1)
        lsid = Binary(uuid.uuid4().bytes, 4)

        async def command(cmd: dict, seq: tuple[str, list[dict]] | None = None) -> dict:
            return _decoded(await client.call(op_msg(cmd, next(rids), seq)))

        r = await command({"insert": COLL, "ordered": False, "$db": DB}, ("documents", H.make_docs(0, preload)))
        assert r.get("n") == preload, r
        cluster_time = r["$clusterTime"]["clusterTime"]
        txn, new_ids = itertools.count(1), itertools.count(10**9)
        build = partial(requests, lsid=lsid, cluster_time=cluster_time, txn=txn, new_ids=new_ids, preload=preload,
                        request_ids=rids)
        out: dict = {"ops": n}
        for kind in kinds:
            for msg in build(kind, 20):  # warm up: the session, the collection's paths, the caches
                check(kind, _decoded(await client.call(msg)))
            msgs = build(kind, n)
            replies: list[bytes] = []
            keep = replies.append
            call = client.call
            prof = cProfile.Profile(time.process_time) if profile else None
            counter = OpcodeCounter() if count else None
            gc.collect()
            if callgrind:
                _callgrind("-z")
            t0 = time.process_time()
            if prof:
                prof.enable()
            if counter:
                counter.__enter__()
            for m in msgs:
                keep(await call(m))
            if counter:
                counter.__exit__()
            if prof:
                prof.disable()
            cpu = time.process_time() - t0
            if callgrind:
                _callgrind("-d", kind)
            for raw in replies:
                check(kind, _decoded(raw))
            out[f"{kind}_cpu_us"] = round(cpu / n * 1e6, 1)
            if callgrind:
                dump, instructions = _dumped_instructions(kind)
                out[f"{kind}_instructions"] = round(instructions / n)
                out[f"{kind}_callgrind_out"] = dump
            if counter:
                print(f"--- {kind}: {n} commands")
                counter.report(n, top)
            if prof:
                print(f"--- {kind}: {n} commands")
                pstats.Stats(prof).sort_stats(os.environ.get("PROFILE_SORT", "tottime")).print_stats(top)
                if os.environ.get("PROFILE_CALLERS"):
                    pstats.Stats(prof).print_callers(os.environ["PROFILE_CALLERS"])
        await client.stream.aclose()
        return out


def measure_pymongo(n: int, kinds: list[str], preload: int, callgrind: bool) -> dict:
    """pymongo's own cost per operation, against the acknowledge-only stub (another process)."""
    out: dict = {"ops": n}
    with H.server(H.stub_cmd("ack"), "ack") as ack:
        c = H.client(ack.uri)
        from benchmarks.bench_ops import _op

        ids = itertools.count(10**9)
        for kind in kinds:
            fn: Callable[[], object] = _op(c, kind, ids, preload)
            for _ in range(20):
                fn()
            gc.collect()
            if callgrind:
                _callgrind("-z")
            t0 = time.process_time()
            for _ in range(n):
                fn()
            cpu = time.process_time() - t0
            if callgrind:
                _callgrind("-d", kind)
                out[f"{kind}_instructions"] = round(_dumped_instructions(kind)[1] / n)
            out[f"{kind}_cpu_us"] = round(cpu / n * 1e6, 1)
        c.close()
    return out


def measure_serve(n: int, kinds: list[str], preload: int) -> dict:
    """The instructions per operation of a `mongosim serve` process (2 shards, run under callgrind, its
    counters zeroed and dumped around each kind) driven by pymongo from this process, as in bench_ops."""
    out: dict = {"ops": n}
    tmp = tempfile.mkdtemp(prefix="profile_ops.")
    wrap = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={tmp}/callgrind.out.%p"]
    with H.server(H.mongosim_cmd(2, instant_hwm=False), "mongosim", wrap=wrap) as ms:
        c = H.client(ms.uri)
        c[DB][COLL].insert_many(H.make_docs(0, preload))
        from benchmarks.bench_ops import _op

        ids = itertools.count(10**9)
        for kind in kinds:
            fn: Callable[[], object] = _op(c, kind, ids, preload)
            for _ in range(20):
                fn()
            _callgrind("-z", pid=ms.pid)
            for _ in range(n):
                fn()
            _callgrind("-d", kind, pid=ms.pid)
            out[f"{kind}_instructions"] = round(_dumped_instructions(kind, pid=ms.pid, where=tmp)[1] / n)
        c.close()
    out["callgrind_out"] = tmp
    return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--ops", type=int, default=2000, help="commands of each kind in the timed part")
    p.add_argument("--only", default=",".join(OPS))
    p.add_argument("--preload", type=int, default=1000)
    p.add_argument("--profile", action="store_true")
    p.add_argument("--top", type=int, default=40)
    p.add_argument("--callgrind", action="store_true", help="run under callgrind: count each kind's instructions")
    p.add_argument("--count", action="store_true", help="count the bytecodes each function runs (own, inclusive)")
    p.add_argument("--pymongo", action="store_true", help="pymongo's own cost against the ack stub instead")
    p.add_argument("--serve", action="store_true",
                   help="a `mongosim serve` process under callgrind (this one's pymongo drives it) instead")
    a = p.parse_args()
    kinds = [k for k in a.only.split(",") if k]
    if unknown := set(kinds) - set(OPS):
        p.error(f"unknown operations: {sorted(unknown)}")
    if a.serve:
        print(measure_serve(a.ops, kinds, a.preload))
        return
    if a.pymongo:
        print(measure_pymongo(a.ops, kinds, a.preload, a.callgrind))
        return
    keep_freed_memory()  # the memory settings of `mongosim serve`
    collect_less_often()
    print(trio.run(measure, a.ops, kinds, a.preload, a.profile, a.top, a.callgrind, a.count))


if __name__ == "__main__":
    main()
