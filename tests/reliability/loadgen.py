"""A load generator: many change-stream watchers and writers over real TCP connections.

`WireClient` is the testing `AsyncClient` speaking OP_MSG over a trio socket
(one connection each, one request at a time), so `AsyncChangeStream` -- the
driver specification's resume logic -- runs unchanged against a server in
another process.

`run_load()` shards a few collections across the cluster, opens the watchers
(collection, database and cluster level, some of them slow consumers, one that
stalls for the whole write phase), runs the writers (inserts, updates,
deletes) for a while, then lets every watcher drain and checks, for each
watcher, that it received exactly the events of its namespaces: none lost,
none duplicated, in strictly increasing token order, each writer's operations
in the order they were made.  It samples the server's RSS all along.
"""

from __future__ import annotations

import itertools
import random
import struct
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import trio

from mongosim.oplog import bsonutil
from mongosim.testing.client import AsyncClient, absorb_reply
from mongosim.router import wire

_HDR = struct.Struct("<iiii")
_rids = itertools.count(1)


class WireClient(AsyncClient):
    """AsyncClient over TCP: the same commands, encoded and sent to a server."""

    def __init__(self, stream: trio.SocketStream) -> None:
        super().__init__(None)
        self.stream = stream
        self.buf = bytearray()

    @classmethod
    async def connect(cls, host: str, port: int) -> "WireClient":
        return cls(await trio.open_tcp_stream(host, port))

    async def _frame(self) -> bytes:
        while True:
            if len(self.buf) >= 4:
                (n,) = struct.unpack_from("<i", self.buf)
                if len(self.buf) >= n:
                    data = bytes(self.buf[:n])
                    del self.buf[:n]
                    return data
            chunk = await self.stream.receive_some(1 << 20)
            if not chunk:
                raise ConnectionError("server closed the connection")
            self.buf += chunk

    async def command(self, db: str, cmd: dict, *, check: bool = True) -> dict:
        cmd = dict(cmd)
        cmd["$db"] = db
        if self.cluster_time is not None:
            cmd["$clusterTime"] = self.cluster_time
        rid = next(_rids)
        await self.stream.send_all(wire.encode_op_msg(cmd, rid, 0))
        data = await self._frame()
        _n, _rid, response_to, op = _HDR.unpack_from(data)
        assert op == wire.OP_MSG and response_to == rid
        return absorb_reply(self, bsonutil.decode(data[21:]), check)

    async def aclose(self) -> None:
        await self.stream.aclose()


@dataclass
class LoadConfig:
    watchers: int = 20
    writers: int = 4
    seconds: float = 5.0
    write_rate: float = 200.0  # operations per second, all writers together
    slow_fraction: float = 0.15  # watchers that pause between getMores
    dbs: int = 2
    colls: int = 2
    shards: int = 4
    drain_timeout: float = 120.0
    seed: int = 1


@dataclass
class Watcher:
    wid: int
    db: str
    target: Any  # collection name, 1 (database), or None (cluster)
    slow: float = 0.0  # seconds to pause between reads
    stall: bool = False  # read nothing until the writers are done
    events: list = field(default_factory=list)
    errors: list = field(default_factory=list)
    expected: int = -1  # known once the writers are done

    def wants(self, ns: str) -> bool:
        if self.target is None:
            return True
        db, coll = ns.split(".", 1)
        return db == self.db and (self.target == 1 or coll == self.target)

    @property
    def label(self) -> str:
        return f"watcher {self.wid} ({'cluster' if self.target is None else self.db if self.target == 1 else self.db + '.' + self.target})"


@dataclass
class LoadResult:
    ops: list  # (writer, seq, ns, op, _id) in the order each writer made them
    watchers: list
    rss: list  # (seconds since start, bytes)
    write_seconds: float
    drain_seconds: float
    problems: list


def namespaces(cfg: LoadConfig) -> list[str]:
    return [f"load{d}.c{c}" for d in range(cfg.dbs) for c in range(cfg.colls)]


async def setup(client: WireClient, cfg: LoadConfig) -> None:
    for d in range(cfg.dbs):
        await client.admin({"enableSharding": f"load{d}", "primaryShard": "shard00"})
    for ns in namespaces(cfg):
        await client.admin({"shardCollection": ns, "key": {"k": 1}})
        for s in range(1, cfg.shards):
            await client.admin({"split": ns, "middle": {"k": 1000 * s}})
            await client.admin({"moveChunk": ns, "find": {"k": 1000 * s}, "to": f"shard{s:02d}"})


def make_watchers(cfg: LoadConfig, rng: random.Random) -> list[Watcher]:
    out = []
    for i in range(cfg.watchers):
        level = i % 3
        d = rng.randrange(cfg.dbs)
        if level == 0:
            w = Watcher(i, f"load{d}", f"c{rng.randrange(cfg.colls)}")
        elif level == 1:
            w = Watcher(i, f"load{d}", 1)
        else:
            w = Watcher(i, "admin", None)
        if rng.random() < cfg.slow_fraction:
            w.slow = rng.uniform(0.2, 1.0)
        out.append(w)
    out[-1].stall = True
    return out


async def run_load(host: str, port: int, cfg: LoadConfig, rss: Callable[[], int] | None = None) -> LoadResult:
    rng = random.Random(cfg.seed)
    admin = await WireClient.connect(host, port)
    await setup(admin, cfg)
    nss = namespaces(cfg)
    watchers = make_watchers(cfg, rng)
    ops: list = []
    samples: list = []
    t_start = trio.current_time()
    writing_done = trio.Event()
    problems: list = []

    streams = []
    for w in watchers:
        client = await WireClient.connect(host, port)
        kw: dict = {"batch_size": rng.choice([None, 10, 100]), "max_await_time_ms": 500}
        if w.target is None:
            cs = client.watch("admin", **kw)
        else:
            cs = client.watch(w.db, w.target, **kw)
        await cs.open()
        streams.append((w, client, cs))

    async def sample_rss() -> None:
        while rss is not None:
            samples.append((trio.current_time() - t_start, rss()))
            await trio.sleep(0.5)

    async def writer(n: int) -> None:
        client = await WireClient.connect(host, port)
        wrng = random.Random(cfg.seed * 1000 + n)
        interval = cfg.writers / cfg.write_rate
        live: list = []
        seq = 0
        deadline = trio.current_time() + cfg.seconds
        while trio.current_time() < deadline:
            ns = wrng.choice(nss)
            db, coll = ns.split(".", 1)
            roll = wrng.random()
            if live and roll < 0.2:
                k, _id, lns = live[wrng.randrange(len(live))]
                ldb, lcoll = lns.split(".", 1)
                await client.update(ldb, lcoll, {"k": k, "_id": _id}, {"$inc": {"n": 1}, "$set": {"by": n, "seq": seq}})
                ops.append((n, seq, lns, "update", _id, seq))
            elif live and roll < 0.3:
                k, _id, lns = live.pop(wrng.randrange(len(live)))
                ldb, lcoll = lns.split(".", 1)
                await client.delete(ldb, lcoll, {"k": k, "_id": _id}, limit=1)
                ops.append((n, seq, lns, "delete", _id, None))
            else:
                k = wrng.randrange(1000 * cfg.shards)
                _id = f"w{n}-{seq}"
                await client.insert(db, coll, [{"_id": _id, "k": k, "by": n, "seq": seq, "n": 0}])
                ops.append((n, seq, ns, "insert", _id, seq))
                live.append((k, _id, ns))
            seq += 1
            await trio.sleep(interval * wrng.uniform(0.5, 1.5))
        await client.aclose()

    async def watch(w: Watcher, client: WireClient, cs) -> None:
        if w.stall:
            await writing_done.wait()
        try:
            while True:
                if writing_done.is_set() and len(w.events) >= w.expected:
                    # one more round: anything extra would be a duplicate
                    ev = await cs.try_next()
                    if ev is None:
                        break
                    w.events.append(ev)
                    continue
                ev = await cs.try_next()
                if ev is not None:
                    w.events.append(ev)
                elif w.slow and not writing_done.is_set():
                    await trio.sleep(w.slow)
        except Exception as exc:  # recorded, reported by the checks
            w.errors.append(repr(exc))
        finally:
            await cs.close()
            await client.aclose()

    with trio.move_on_after(cfg.seconds + cfg.drain_timeout + 30) as overall:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(sample_rss)
            for w, client, cs in streams:
                nursery.start_soon(watch, w, client, cs)
            async with trio.open_nursery() as writers:
                for n in range(cfg.writers):
                    writers.start_soon(writer, n)
            write_seconds = trio.current_time() - t_start
            for w in watchers:
                w.expected = sum(1 for op in ops if w.wants(op[2]))
            writing_done.set()
            t_drain = trio.current_time()
            with trio.move_on_after(cfg.drain_timeout):
                while any(len(w.events) < w.expected and not w.errors for w in watchers):
                    await trio.sleep(0.1)
            drain_seconds = trio.current_time() - t_drain
            await trio.sleep(1.5)
            nursery.cancel_scope.cancel()
    if overall.cancelled_caught:
        problems.append("the load run did not finish in time")
    await admin.aclose()
    problems += check(ops, watchers)
    return LoadResult(ops, watchers, samples, write_seconds, drain_seconds, problems)


def _event_key(e: dict) -> tuple:
    op = e["operationType"]
    seq = None
    if op == "insert":
        seq = e["fullDocument"]["seq"]
    elif op == "update":
        seq = e["updateDescription"]["updatedFields"]["seq"]
    return (f"{e['ns']['db']}.{e['ns']['coll']}", op, e["documentKey"]["_id"], seq)


def check(ops: list, watchers: list[Watcher]) -> list[str]:
    """Exactly the events of each watcher's namespaces, no loss, no duplicate, in order."""
    problems = []
    writer_of = {(op[2], op[3], op[4], op[5]): (op[0], op[1]) for op in ops}
    for w in watchers:
        if w.errors:
            problems.append(f"{w.label}: {w.errors[0]}")
            continue
        want = [(op[2], op[3], op[4], op[5]) for op in ops if w.wants(op[2])]
        got = [_event_key(e) for e in w.events]
        if sorted(got, key=repr) != sorted(want, key=repr):
            wanted = set(want)
            missing = wanted - set(got)
            extra = [g for g in got if got.count(g) > 1 or g not in wanted]
            problems.append(f"{w.label}: {len(got)} events for {len(want)} operations; "
                            f"missing {sorted(missing, key=repr)[:3]}, duplicated/unexpected {extra[:3]}")
            continue
        tokens = [e["_id"]["_data"] for e in w.events]
        if any(a >= b for a, b in zip(tokens, tokens[1:])):
            problems.append(f"{w.label}: tokens not strictly increasing")
            continue
        by_writer: dict[int, list[int]] = {}
        for g in got:
            wr, seq = writer_of[g]
            by_writer.setdefault(wr, []).append(seq)
        for wr, seqs in by_writer.items():
            if seqs != sorted(seqs):
                problems.append(f"{w.label}: writer {wr}'s operations out of order")
    return problems
