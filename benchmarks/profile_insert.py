"""The server's CPU per inserted document, in process: the write benchmark's requests through the wire.

    python -m benchmarks.profile_insert [--docs N] [--batch B] [--shards S] [--members M] [--ordered] [--profile] [--top K]
    valgrind --tool=callgrind python -m benchmarks.profile_insert --callgrind [...]

A 4-shard cluster (``--shards``, ``--members``: bench_replset's is 2 shards of 3 members) (``open_cluster``, listening on a free port, hashed ``_id``) in this process;
a raw trio socket sends the OP_MSG bytes pymongo sends for ``insert_many(ordered=False)`` (``--ordered``:
pymongo's default, which mongos sends a run of consecutive documents at a time to one shard, as the
server's BatchWriteOp does; with a hashed ``_id`` that is a shard command per one or two documents) (a
retryable write: ``lsid``, ``txnNumber``; the documents as a kind-1 sequence), built before the
clock starts, and reads each reply.  The client side costs next to nothing, so the CPU time
measured (``time.process_time``) is the server's: wire decode, router, shards, reply, with the
allocator and collector settings of ``mongosim serve``; the collector's share is timed apart
(``gc.callbacks``).  With ``--profile`` the timed part runs under cProfile and the top functions by own time are printed
(cProfile slows Python code ~2x: compare the shares, not the absolute time).
With ``--callgrind`` (the process run under valgrind's callgrind) the counters are zeroed before
the timed part and dumped after it (``callgrind_control``): the instructions per document, which
load does not move, are printed from the dump (``callgrind_annotate`` reads it per function).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import os
import pstats
import re
import struct
import subprocess
import time
import uuid
from functools import partial

import trio
from bson import Binary, Int64

from benchmarks import harness as H
from mongosim.core import open_cluster
from mongosim.gc_tuning import collect_less_often
from mongosim.malloc_tuning import keep_freed_memory
from mongosim.oplog import bsonutil
from mongosim.router.wire.messages import encode_op_msg

DB, COLL = "bench", "orders"


def op_msg_insert(docs: list[dict], request_id: int, lsid: Binary, txn: int, ordered: bool = False) -> bytes:
    """The OP_MSG pymongo sends for one insert_many batch."""
    body = bsonutil.encode({"insert": COLL, "ordered": ordered, "lsid": {"id": lsid}, "txnNumber": Int64(txn),
                            "$db": DB})
    seq = b"".join(bsonutil.encode(d) for d in docs)
    name = b"documents\x00"
    section1 = b"\x01" + struct.pack("<i", 4 + len(name) + len(seq)) + name + seq
    payload = struct.pack("<I", 0) + b"\x00" + body + section1
    return struct.pack("<iiii", 16 + len(payload), request_id, 0, 2013) + payload


async def _recv_reply(stream: trio.SocketStream, buf: bytearray) -> bytes:
    while True:
        if len(buf) >= 4:
            (n,) = struct.unpack_from("<i", buf)
            if len(buf) >= n:
                msg = bytes(buf[:n])
                del buf[:n]
                return msg
        data = await stream.receive_some(1 << 16)
        if not data:
            raise EOFError
        buf += data


def _callgrind(command: str, *args: str, pid: int | None = None) -> str:
    """Send `command` (-z: zero the counters, -d: dump them) to the callgrind running process `pid` (this one)."""
    out = subprocess.run(["callgrind_control", command, *args, str(pid or os.getpid())], capture_output=True,
                         text=True, check=True).stdout
    if "OK" not in out:
        raise RuntimeError(f"callgrind_control {command}: {out.strip()} (is this process run under callgrind?)")
    return out


def _dumped_instructions(tag: str, *, pid: int | None = None, where: str = ".") -> tuple[str, int]:
    """The newest callgrind dump of process `pid` (this one) in `where` triggered by `tag`, and its
    instruction count."""
    pid = pid or os.getpid()
    names = [os.path.join(where, name) for name in os.listdir(where)]
    for name in sorted(names, key=os.path.getmtime, reverse=True):
        if os.path.basename(name).startswith(f"callgrind.out.{pid}"):
            text = open(name).read(1 << 16)
            if f"Trigger: dump {tag}" in text:
                m = re.search(r"^summary: (\d+)", open(name).read(), re.M)
                return name, int(m.group(1))
    raise RuntimeError("no callgrind dump found")


async def measure(n: int, batch: int, profile: bool, top: int, start: int = 0, *, shards: int = 4,
                  members: int = 1, callgrind: bool = False, ordered: bool = False) -> dict:
    async with open_cluster(shards=shards, members=members, instant_hwm=True, port=0) as core:
        stream = await trio.open_tcp_stream("127.0.0.1", core.port)
        buf = bytearray()
        lsid = Binary(uuid.uuid4().bytes, 4)

        async def call(msg: bytes) -> dict:
            await stream.send_all(msg)
            raw = await _recv_reply(stream, buf)
            return bsonutil.decode(raw[21:])

        async def command(cmd: dict) -> dict:
            return await call(encode_op_msg(cmd, 1, 0))

        await command({"enableSharding": DB, "$db": "admin"})
        await command({"shardCollection": f"{DB}.{COLL}", "key": {"_id": "hashed"}, "$db": "admin"})
        # warm up
        r = await call(op_msg_insert(H.make_docs(10**9, batch), 1, lsid, 1))
        assert r.get("n") == batch, r
        msgs = [op_msg_insert(H.make_docs(start + k, batch), 2 + k, lsid, 2 + k // batch, ordered)
                for k in range(0, n, batch)]
        prof = cProfile.Profile(time.process_time) if profile else None
        gc_cpu = [0.0, 0.0]

        def gc_timer(phase: str, _info: dict) -> None:
            if phase == "start":
                gc_cpu[1] = time.process_time()
            else:
                gc_cpu[0] += time.process_time() - gc_cpu[1]

        gc.callbacks.append(gc_timer)
        if callgrind:
            _callgrind("-z")
        t0, w0 = time.process_time(), time.perf_counter()
        if prof:
            prof.enable()
        for m in msgs:
            r = await call(m)
            if r.get("n") != batch:
                raise AssertionError(r)
        if prof:
            prof.disable()
        cpu, wall = time.process_time() - t0, time.perf_counter() - w0
        if callgrind:
            _callgrind("-d", "measured")
        gc.callbacks.remove(gc_timer)
        await stream.aclose()
        out = {"docs": n, "cpu_us_per_doc": round(cpu / n * 1e6, 2), "gc_us_per_doc": round(gc_cpu[0] / n * 1e6, 2),
               "wall_docs_per_s": round(n / wall)}
        if callgrind:
            dump, instructions = _dumped_instructions("measured")
            out.update(callgrind_out=dump, instructions_per_doc=round(instructions / n))
        if prof:
            pstats.Stats(prof).sort_stats("tottime").print_stats(top)
        return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--docs", type=int, default=20_000)
    p.add_argument("--batch", type=int, default=1000)
    p.add_argument("--profile", action="store_true")
    p.add_argument("--top", type=int, default=30)
    p.add_argument("--shards", type=int, default=4)
    p.add_argument("--members", type=int, default=1)
    p.add_argument("--ordered", action="store_true", help="ordered inserts (pymongo's default): mongos sends a "
                   "run of documents to one shard at a time")
    p.add_argument("--callgrind", action="store_true", help="run under callgrind: count the timed part's instructions")
    a = p.parse_args()
    keep_freed_memory()  # the memory settings of `mongosim serve`
    collect_less_often()
    print(trio.run(partial(measure, a.docs, a.batch, a.profile, a.top, shards=a.shards, members=a.members,
                           callgrind=a.callgrind, ordered=a.ordered)))


if __name__ == "__main__":
    main()
