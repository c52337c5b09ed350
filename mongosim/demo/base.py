"""Running a demo scenario: a traced cluster on virtual time, the same story every run.

A `Scenario` is a coroutine `run(demo)` plus what it teaches.  `run_scenario`
starts a cluster with a fixed epoch on `trio.testing.MockClock` (virtual
time: a 20-second wait takes no real time), shards `db.c` on `{k: 1}`
(`k < 100` on shard00, `100 <= k < 200` on shard01, ... one chunk per shard),
attaches a `Trace`, and hands the scenario a `Demo`: a client, a
background reader for the change stream, and helpers that log what the
scenario does.  Trio's scheduler is made deterministic for the run
(`deterministic_scheduling`), so the story is the same on every machine.
"""

from __future__ import annotations

import contextlib
import random
import threading
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Iterator

import trio
import trio.testing

from mongosim import trace as T
from mongosim.core import ClusterCore, open_cluster
from mongosim.demo.fmt import key_label, value
from mongosim.demo.story import Story, build_story
from mongosim.testing.client import AsyncChangeStream, AsyncClient, CommandError

EPOCH = 1_700_000_000
SEED = 20240607


@dataclass(frozen=True)
class Scenario:
    name: str
    title: str
    lesson: str  # the one line to remember
    setup: str  # the cluster and the options, in words
    run: Callable[["Demo"], Awaitable[None]]
    shards: int = 2
    options: dict = field(default_factory=dict)  # ClusterOptions besides shards/epoch/listen
    focus: str | None = None  # the timeline opens on the first step of this kind ("gate"; "-reply": the last
    # such step); default: the last step
    modules: tuple[str, ...] = ()  # where the ideas live in the code


@dataclass
class DemoResult:
    scenario: Scenario
    trace: T.Trace
    story: Story | None
    received: list[tuple[float, dict]]  # (virtual time, event) as the client got them
    facts: dict  # what the scenario measured for its claims


@contextlib.contextmanager
def deterministic_scheduling(seed: int = SEED) -> Iterator[None]:
    """Make trio's choice among runnable tasks a function of `seed` (as it is under Hypothesis).

    trio draws from one module-level Random in every thread; another trio loop running in
    another thread of the process (a test suite's session-scoped cluster, say) would take
    numbers from the seeded sequence at moments of its own, and the scenario's story would
    depend on them.  So the seeded sequence is this thread's alone (`_ThreadSeededRandom`)."""
    run = trio._core._run
    old_flag, old_r = run._ALLOW_DETERMINISTIC_SCHEDULING, run._r
    run._ALLOW_DETERMINISTIC_SCHEDULING = True  # sort the run batch by task age, then shuffle with _r
    run._r = _ThreadSeededRandom(seed, old_r)
    try:
        yield
    finally:
        run._r = old_r
        run._ALLOW_DETERMINISTIC_SCHEDULING = old_flag


class _ThreadSeededRandom:
    """The few Random methods trio's run loop uses: seeded in the thread that made it, the
    process's own Random in every other thread."""

    def __init__(self, seed: int, others: random.Random) -> None:
        self._thread = threading.get_ident()
        self._seeded = random.Random(seed)
        self._others = others

    def _pick(self) -> random.Random:
        return self._seeded if threading.get_ident() == self._thread else self._others

    def shuffle(self, x: list) -> None:
        self._pick().shuffle(x)

    def random(self) -> float:
        return self._pick().random()

    def uniform(self, a: float, b: float) -> float:
        return self._pick().uniform(a, b)


class Demo:
    """What a scenario holds: the cluster, a client, the trace, a change stream read in the background."""

    def __init__(self, core: ClusterCore, trace: T.Trace, nursery: trio.Nursery) -> None:
        self.core = core
        self.router = core.router
        self.trace = trace
        self.client = AsyncClient(core.router)
        self.nursery = nursery
        self.received: list[tuple[float, dict]] = []
        self.facts: dict[str, Any] = {}
        self.stream: AsyncChangeStream | None = None
        self._readers: list[tuple[trio.CancelScope, AsyncChangeStream, trio.Event]] = []
        self._new_event = trio.Event()

    # -- time and words ---------------------------------------------------------------------
    async def at(self, t: float) -> None:
        """Wait until virtual time `t` (seconds since the cluster started)."""
        await trio.sleep_until(t)

    def say(self, text: str) -> None:
        self.trace.note(text)

    def did(self, text: str, who: str = "client") -> None:
        self.trace.action(text, where=who)

    # -- writes ---------------------------------------------------------------------------------
    def shard_of(self, doc: dict, ns: str = "db.c") -> str:
        r = self.router.catalog.routing(ns)
        if r is None:  # not sharded (any more): the database's primary shard
            return self.router.catalog.primary_of(ns.split(".", 1)[0]) or "?"
        return r.shard_for(r.pattern.extract(doc))

    async def insert(self, *docs: dict, ns: str = "db.c", **cmd: Any) -> dict:
        db, coll = ns.split(".", 1)
        where = ", ".join(f"{value(d)} → {self.shard_of(d, ns)}" for d in docs)
        text = f"inserts {where}" if len(docs) == 1 else f"inserts (one command) {where}"
        if cmd.get("autocommit") is False:
            text += " — inside the transaction: nothing reaches the oplog before the commit"
        self.did(text)
        return await self.client.command(db, {"insert": coll, "documents": list(docs), **cmd})

    async def update(self, q: dict, u: dict, ns: str = "db.c") -> dict:
        db, coll = ns.split(".", 1)
        self.did(f"updates {value(q)} with {value(u)}")
        return await self.client.update(db, coll, q, u)

    # -- the change stream ----------------------------------------------------------------------
    async def watch(self, db: str = "db", coll: Any = "c", pipeline: list | None = None, *, read: bool = True,
                    **options: Any) -> AsyncChangeStream:
        """Open a change stream (logged) and, with `read`, read it in the background like an application."""
        zero = int(round(self.trace.cluster_zero))
        opts = ", ".join(f"{k} {key_label(v['_data'], zero) if isinstance(v, dict) and '_data' in v else value(v)}"
                         for k, v in options.items())
        target = f"{db}.{coll}" if isinstance(coll, str) else (db if db != "admin" else "the whole cluster")
        self.did(f"opens a change stream on {target}" + (f", {opts}" if opts else ""))
        stream = self.client.watch(db, coll, pipeline, **options)
        await stream.open()
        self.stream = stream
        if read:
            self.start_reading(stream)
        return stream

    def start_reading(self, stream: AsyncChangeStream) -> None:
        scope = trio.CancelScope()
        done = trio.Event()
        self._readers.append((scope, stream, done))

        async def reader() -> None:
            try:
                with scope:
                    while not stream.closed:
                        ev = await stream.try_next()
                        if ev is not None:
                            self.received.append((trio.current_time(), ev))
                            self._new_event.set()
                            self._new_event = trio.Event()
            finally:
                done.set()
        self.nursery.start_soon(reader)

    async def wait_for_events(self, n: int, *, within: float = 120.0) -> list[dict]:
        """Wait until the client has received `n` events in all (or `within` virtual seconds pass)."""
        with trio.move_on_after(within):
            while len(self.received) < n:
                await self._new_event.wait()
        return [e for _t, e in self.received]

    async def stop_reading(self) -> None:
        """Stop the background readers and close their streams (as an application would)."""
        readers, self._readers = self._readers, []
        for scope, stream, done in readers:
            scope.cancel()
            await done.wait()  # the reader is gone before its stream closes (it must not resume it)
            if not stream.closed:
                await stream.close()

    async def expect_error(self, coro: Awaitable[Any]) -> CommandError | None:
        try:
            await coro
        except CommandError as err:
            return err
        return None


async def _setup_collection(core: ClusterCore, shards: int) -> None:
    c = AsyncClient(core.router)
    names = sorted(core.shards)
    await c.admin({"enableSharding": "db", "primaryShard": names[0]})
    await c.admin({"shardCollection": "db.c", "key": {"k": 1}})
    for i, s in enumerate(names[1:shards], start=1):
        await c.admin({"split": "db.c", "middle": {"k": 100 * i}})
        await c.admin({"moveChunk": "db.c", "find": {"k": 100 * i}, "to": s})


def run_scenario(scenario: Scenario, *, seed: int = SEED) -> DemoResult:
    """Run one scenario on virtual time; return its trace, story and measurements."""
    trace = T.Trace()
    out: dict[str, Any] = {}

    async def main() -> None:
        opts = {"shards": scenario.shards, "epoch": EPOCH, "listen": False, **scenario.options}
        async with open_cluster(**opts) as core:
            await _setup_collection(core, scenario.shards)
            async with trio.open_nursery() as nursery:
                with trace.attached(core):
                    demo = Demo(core, trace, nursery)
                    out["demo"] = demo
                    await scenario.run(demo)
                    nursery.cancel_scope.cancel()

    with deterministic_scheduling(seed):
        trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    demo: Demo = out["demo"]
    story = build_story(trace)
    return DemoResult(scenario, trace, story, demo.received, demo.facts)
