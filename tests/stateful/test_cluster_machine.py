"""The whole cluster under random writes, transactions, migrations, chunk merges, new shards, drops and faults,
through two routers (each with its own, possibly stale, routing cache), while routers restart, a
shard drains and leaves, and the balancer's AutoMerger merges chunks back.

A hypothesis RuleBasedStateMachine on virtual time (mongosim.testing.TrioPortal).
After every step, every watcher (collection, database and cluster level, each
an AsyncChangeStream following the driver's resume rules, some with user stages
that keep every event) is read until it has everything committed on its
namespace (where every third `_id` is a long or a double: tokens with
`_typeBits`), and:

- its stream is sorted by token and has no duplicates;
- it misses nothing committed on its namespace, and holds nothing else;
- every resume token it observed (event ids and PBRTs) is monotone;
- resuming from any token it saw yields exactly the rest (rule `resume_check`; since a shard's
  removal, from the tokens after it: 8.0 targets only the current shards).

Reads through the shard-key index (rule `indexed_read`, also under a collation) see exactly the
documents written; a capped collection (rule `insert_capped`) keeps its newest three, and streams show
the evictions as deletes.  DDL: the sharded collection dropped and recreated, an unsharded one renamed
into another database (its copy's events in whole-cluster streams), a view's definition modified (both
routers read the new one at once), and a collection sharded after its zone range was defined (its
first chunks keep the zone: the documents written to it are on the zone's shard at once).
"""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import timezone

import trio
from bson import Int64, MaxKey, MinKey
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from mongosim.core import ClusterOptions, serve_cluster
from mongosim.testing import AsyncClient, CommandError
from mongosim.testing.portal import TrioPortal
from mongosim.router.catalog_cache import CatalogCache
from mongosim.router.initial_split_policy import default_engine_shuffle
from mongosim.router.sharding import add_shard
from mongosim.shardsim.shard_key import hash64
from mongosim.shardsim.snapshots import HISTORY_WINDOW_S

EPOCH = 1_700_000_000
RESUMABLE = [6, 10107, 234, 91, 13436]
TMP = re.compile(r"^tmp[a-zA-Z0-9]{5}\.renameCollection$")  # renameCollection across databases' copy
USER_STAGES = {"none": [], "match": [{"$match": {"operationType": {"$ne": "no such type"}}}],
               "set": [{"$set": {"seen": True}}]}


class GossipingClient(AsyncClient):
    """One of an application's connections to several routers: they share the cluster time they gossip,
    as one pymongo MongoClient does across its mongoses (so a stream opened on one router starts after
    a write acknowledged by the other)."""

    def __init__(self, service, gossip: dict) -> None:
        self._gossip = gossip
        super().__init__(service)

    @property
    def cluster_time(self):
        return self._gossip.get("clusterTime")

    @cluster_time.setter
    def cluster_time(self, value) -> None:
        now = self._gossip.get("clusterTime")
        if value is not None and (now is None or value["clusterTime"] > now["clusterTime"]):
            self._gossip["clusterTime"] = value


@dataclass
class Watcher:
    level: str  # "coll" | "db" | "cluster"
    stream: object
    start: int  # index into the machine's log when it opened
    received: list = field(default_factory=list)
    tokens: list = field(default_factory=list)
    ended: bool = False
    resumable_from: int = 0  # tokens before this index precede a shard's removal (see resume_check)
    events_before_removal: int = 0  # events received before the last removal (see lost_to_a_removal)
    lost: bool = False  # ended by ChangeStreamFatalError 280 after a removal (see lost_to_a_removal)

    def lost_to_a_removal(self, err: CommandError) -> bool:
        """Whether `err` ends this stream as 8.0 ends it after a shard's removal: resumed (a router
        restarted) from the token of an event the removed shard wrote, the stream, opened on the current
        shards only, finds that token on none of them: ChangeStreamFatalError 280.  Only a resume from
        an event seen before the removal may end so (a PBRT is not looked for)."""
        token = (self.stream.resume_token or {}).get("_data")
        return err.code == 280 and token in {e["_id"]["_data"] for e in self.received[: self.events_before_removal]}


def visible(level: str, ev: tuple) -> bool:
    ns = ev[0]
    if level == "coll":
        return ns == "db.c"
    if level == "db":
        return ns.startswith("db.")
    return True


def _ns_of(ev: dict) -> str:
    """An event's namespace as the machine logs it (a rename's temporary collection: `<db>.tmp`)."""
    if "ns" not in ev:
        return "db.c"  # (an invalidate)
    coll = ev["ns"].get("coll")
    return f"{ev['ns']['db']}.{'tmp' if coll and TMP.match(coll) else coll}"


def _k(bound: dict) -> int:
    """A chunk bound of db.c as a number (MinKey and MaxKey beyond every k)."""
    k = bound["k"]
    return k if isinstance(k, int) else -(10**9) if isinstance(k, MinKey) else 10**9


def _hashed_in(chunk: dict, h: Int64) -> bool:
    lo, hi = chunk["min"]["u"], chunk["max"]["u"]
    return (isinstance(lo, MinKey) or lo <= h) and (isinstance(hi, MaxKey) or h < hi)


class ClusterMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.portal = TrioPortal()
        opts = ClusterOptions(**self.cluster_options())
        self.core = self.portal.start_background(serve_cluster, opts)
        self.gossip: dict = {}
        self.clients = [GossipingClient(r, self.gossip) for r in self.core.routers]  # router00, router01
        self.client = self.clients[0]
        self.faults = self.core.faults
        self.portal.call(self._setup_collection)
        self.docs: dict[int, int] = {}  # _id -> k, in db.c
        self.other: set[int] = set()  # _ids in db.o (unsharded)
        self.elsewhere: set[int] = set()  # _ids in other.c
        self.capped: list[int] | None = None  # _ids in db.cap (capped, at most 3), oldest first
        self.log: list[tuple] = []  # (ns, operationType, _id) in commit order
        self.watchers: list[Watcher] = []
        self.next_id = 0
        self.added = 0
        self.snapshots: list[tuple] = []  # (atClusterTime, {_id: k} seen, drops then, restarts then, trio time)
        self.drops = 0
        self.zone: tuple[int, int] | None = None  # db.c's zone range, if any (router/zones.py)
        self.zoned = 0  # collections db.z<N> sharded after their zone range was defined (shard_a_zoned_collection)
        self.hashed = 0  # collections db.h<N> sharded on a hashed key while empty (shard_a_hashed_collection)
        self.restarts = 0  # a restarted shard has no snapshot history
        self.created = 0  # collections db.t<N> created by transactions (rule transaction_creates_a_collection)
        self.removed: set[str] = set()  # shards removed by removeShard
        self.view = False  # the view db.v on db.o exists (rule modify_view)

    def cluster_options(self) -> dict:
        return dict(shards=3, routers=2, listen=False, epoch=EPOCH, instant_hwm=True, noop_interval=1.0)

    def live_shards(self) -> list[str]:
        return sorted(self.core.router.shards)

    def live(self, shard: str) -> bool:
        return shard not in self.removed

    async def _setup_collection(self) -> None:
        c = self.client
        shards = sorted(self.core.router.shards)
        await c.admin({"enableSharding": "db", "primaryShard": shards[0]})
        await c.admin({"shardCollection": "db.c", "key": {"k": 1}})
        await c.command("db", {"createIndexes": "c", "indexes": [{"key": {"$**": 1}, "name": "wildcard",
                                                                  "wildcardProjection": {"k": 1}}]})
        for i in (1, 2):
            await c.admin({"split": "db.c", "middle": {"k": 100 * i}})
            await c.admin({"moveChunk": "db.c", "find": {"k": 100 * i}, "to": shards[i % len(shards)]})
        # the AutoMerger runs in rule auto_merge only (sh.stopAutoMerger()), a round each time it is on
        config = self.core.member_frontends[self.core.replica_sets["config"].primary.host]
        await AsyncClient(config).admin({"setParameter": 1, "autoMergerIntervalSecs": 1, "autoMergerThrottlingMS": 0})
        await c.update("config", "settings", {"_id": "automerge"}, {"$set": {"enabled": False}}, upsert=True)

    def teardown(self) -> None:
        self.portal.close()

    # -- helpers ------------------------------------------------------------------------
    def _write(self, afn, *args) -> bool:
        """Run a write; False if it failed (an injected fault): then it did not commit."""
        try:
            self.portal.call(afn, *args)
            return True
        except CommandError:
            return False

    # -- writes -------------------------------------------------------------------------
    @rule(k=st.integers(0, 399), via=st.integers(0, 1))
    def insert(self, k: int, via: int) -> None:
        i = self.next_id
        self.next_id += 1
        # every third _id a long or a double: their tokens carry _typeBits (equal to i as numbers)
        _id = (i, Int64(i), float(i))[i % 3]
        if self._write(self.clients[via].insert, "db", "c", [{"_id": _id, "k": k}]):
            self.docs[i] = k
            self.log.append(("db.c", "insert", i))

    @precondition(lambda self: self.docs)
    @rule(pick=st.integers(0, 2**16), via=st.integers(0, 1))
    def update(self, pick: int, via: int) -> None:
        i = sorted(self.docs)[pick % len(self.docs)]
        if self._write(self.clients[via].update, "db", "c", {"_id": i, "k": self.docs[i]}, {"$inc": {"v": 1}}):
            self.log.append(("db.c", "update", i))

    @precondition(lambda self: self.docs)
    @rule(pick=st.integers(0, 2**16), via=st.integers(0, 1))
    def delete(self, pick: int, via: int) -> None:
        i = sorted(self.docs)[pick % len(self.docs)]
        if self._write(lambda: self.clients[via].delete("db", "c", {"_id": i, "k": self.docs[i]}, limit=1)):
            del self.docs[i]
            self.log.append(("db.c", "delete", i))

    @precondition(lambda self: self.docs)
    @rule(pick=st.integers(0, 2**16), k=st.integers(0, 399))
    def change_shard_key(self, pick: int, k: int) -> None:
        """A retryable update of `k`: in place on the same shard, else mongos moves the document
        (WouldChangeOwningShard): a delete and an insert, at two shards' commit times."""
        i = sorted(self.docs)[pick % len(self.docs)]
        old = self.docs[i]
        if k == old:
            return
        fresh = CatalogCache()  # (the routers' own caches may be stale)
        fresh.refresh(self.core.config.catalog)
        r = fresh.routing("db.c")
        same = r.shard_for(r.pattern.extract({"k": old})) == r.shard_for(r.pattern.extract({"k": k}))
        lsid = {"id": __import__("bson").Binary(os.urandom(16), 4)}
        cmd = {"update": "c", "updates": [{"q": {"_id": i, "k": old}, "u": {"$set": {"k": k}}}],
               "lsid": lsid, "txnNumber": 1}
        if self._write(self.client.command, "db", cmd):
            self.docs[i] = k
            self.log += [("db.c", "update", i)] if same else [("db.c", "delete", i), ("db.c", "insert", i)]

    @rule(k1=st.integers(0, 399), k2=st.integers(0, 399))
    def upsert_across_shards(self, k1: int, k2: int) -> None:
        """A retryable upsert targeted by `k1` whose new document has `k2`: inserted where `k2` lives
        (mongos moves it when that is another shard); the stream sees one insert."""
        i = self.next_id
        self.next_id += 1
        lsid = {"id": __import__("bson").Binary(os.urandom(16), 4)}
        cmd = {"update": "c", "updates": [{"q": {"_id": i, "k": k1}, "u": {"$set": {"k": k2}}, "upsert": True}],
               "lsid": lsid, "txnNumber": 1}
        if self._write(self.client.command, "db", cmd):
            self.docs[i] = k2
            self.log.append(("db.c", "insert", i))

    @rule(ops=st.lists(st.tuples(st.sampled_from(["insert", "update", "delete", "insert_o"]),
                                 st.integers(0, 399), st.integers(0, 2**16)), min_size=1, max_size=6),
          ordered=st.booleans(), via=st.integers(0, 1))
    def bulk_write(self, ops: list, ordered: bool, via: int) -> None:
        """A retryable bulkWrite through mongos over the sharded db.c and the unsharded db.o: mongos
        splits it per shard; exactly the ops whose reply item is ok (and matched) committed."""
        planned, bulk_ops = [], []
        for kind, k, pick in ops:
            if kind in ("update", "delete") and not self.docs:
                kind = "insert"
            if kind in ("insert", "insert_o"):
                i = self.next_id
                self.next_id += 1
                bulk_ops.append({"insert": 1 if kind == "insert_o" else 0, "document": {"_id": i, "k": k}})
            else:
                i = sorted(self.docs)[pick % len(self.docs)]
                q = {"_id": i, "k": self.docs[i]}
                bulk_ops.append({"update": 0, "filter": q, "updateMods": {"$inc": {"v": 1}}} if kind == "update"
                                else {"delete": 0, "filter": q, "multi": False})
            planned.append((kind, i, k))
        lsid = {"id": __import__("bson").Binary(os.urandom(16), 4)}
        cmd = {"bulkWrite": 1, "ops": bulk_ops, "nsInfo": [{"ns": "db.c"}, {"ns": "db.o"}], "ordered": ordered,
               "lsid": lsid, "txnNumber": 1}
        try:
            reply = self.portal.call(self.clients[via].command, "admin", cmd)
        except CommandError:
            return
        for item in reply["cursor"]["firstBatch"]:
            kind, i, k = planned[item["idx"]]
            if not item["ok"]:
                continue
            if kind == "insert":
                self.docs[i] = k
                self.log.append(("db.c", "insert", i))
            elif kind == "insert_o":
                self.other.add(i)
                self.log.append(("db.o", "insert", i))
            elif item["n"] == 1 and kind == "update":
                self.log.append(("db.c", "update", i))
            elif item["n"] == 1:
                del self.docs[i]
                self.log.append(("db.c", "delete", i))

    @rule(where=st.sampled_from(["db.o", "other.c"]), via=st.integers(0, 1))
    def insert_elsewhere(self, where: str, via: int) -> None:
        i = self.next_id
        self.next_id += 1
        db, coll = where.split(".")
        if self._write(self.clients[via].insert, db, coll, [{"_id": i}]):
            (self.other if where == "db.o" else self.elsewhere).add(i)
            self.log.append((where, "insert", i))

    @rule()
    def insert_capped(self) -> None:
        """An insert into a capped collection of at most 3 documents: past 3, the oldest is deleted,
        and the stream shows that delete after the insert."""
        if self.capped is None:
            if not self._write(self.client.command, "db", {"create": "cap", "capped": True, "size": 4096, "max": 3}):
                return
            self.capped = []
        i = self.next_id
        self.next_id += 1
        if self._write(self.client.insert, "db", "cap", [{"_id": i}]):
            self.capped.append(i)
            self.log.append(("db.cap", "insert", i))
            if len(self.capped) > 3:
                self.log.append(("db.cap", "delete", self.capped.pop(0)))
            reply = self.portal.call(lambda: self.client.command("db", {"find": "cap"}, check=False))
            if reply.get("ok"):
                assert [d["_id"] for d in reply["cursor"]["firstBatch"]] == self.capped

    @rule(ks=st.lists(st.integers(0, 399), min_size=1, max_size=4), via=st.integers(0, 1))
    def transaction(self, ks: list[int], via: int) -> None:
        ids = list(range(self.next_id, self.next_id + len(ks)))
        self.next_id += len(ks)
        lsid = {"id": __import__("bson").Binary(os.urandom(16), 4)}

        async def txn() -> None:
            c = self.clients[via]  # every statement through the router that started it (pinned)
            for n, (i, k) in enumerate(zip(ids, ks)):
                extra = {"startTransaction": True} if n == 0 else {}
                await c.command("db", {"insert": "c", "documents": [{"_id": i, "k": k}], "lsid": lsid,
                                       "txnNumber": 1, "autocommit": False, **extra})
            await c.command("admin", {"commitTransaction": 1, "lsid": lsid, "txnNumber": 1, "autocommit": False})

        if self._write(txn):
            for i, k in zip(ids, ks):
                self.docs[i] = k
                self.log.append(("db.c", "insert", i))

    @rule(n=st.integers(1, 3), commit=st.booleans())
    def transaction_creates_a_collection(self, n: int, commit: bool) -> None:
        """A transaction creates db.t<N> by inserting into it: no other command sees the collection
        before the commit (none after an abort); the watchers get its inserts with the commit."""
        name = f"t{self.created}"
        self.created += 1
        ids = list(range(self.next_id, self.next_id + n))
        self.next_id += n
        lsid = {"id": __import__("bson").Binary(os.urandom(16), 4)}
        seen: list[bool] = []

        async def listed() -> bool:
            reply = await self.client.command("db", {"listCollections": 1, "filter": {"name": name}})
            return bool(reply["cursor"]["firstBatch"])

        async def txn() -> None:
            c = self.client
            for j, i in enumerate(ids):
                extra = {"startTransaction": True} if j == 0 else {}
                await c.command("db", {"insert": name, "documents": [{"_id": i}], "lsid": lsid, "txnNumber": 1,
                                       "autocommit": False, **extra})
            seen.append(await listed())
            end = "commitTransaction" if commit else "abortTransaction"
            await c.command("admin", {end: 1, "lsid": lsid, "txnNumber": 1, "autocommit": False})

        committed = self._write(txn)
        assert seen[:1] != [True], f"db.{name} was visible before its transaction committed"
        if committed and commit:
            self.log.extend((f"db.{name}", "insert", i) for i in ids)
        elif committed:
            assert not self.portal.call(listed), f"db.{name} exists after its transaction aborted"

    # -- topology and DDL ---------------------------------------------------------------
    @rule(region=st.integers(0, 2), to=st.integers(0, 4), via=st.integers(0, 1))
    def move_chunk(self, region: int, to: int, via: int) -> None:
        """A migration through one router: the other one's routing cache is stale until a shard tells it."""
        shards = self.live_shards()
        self._write(self.clients[via].admin, {"moveChunk": "db.c", "find": {"k": 100 * region},
                                               "to": shards[to % len(shards)]})

    @rule(lo=st.integers(0, 399), span=st.integers(1, 200), which=st.integers(0, 2**16))
    def zone_a_range(self, lo: int, span: int, which: int) -> None:
        """A range of db.c pinned to one shard's zone: the balancer splits chunks at its bounds and moves
        them there while the watchers go on (migrations are invisible to change streams)."""
        self.portal.call(self._clear_faults)
        shards = self.live_shards()
        self.portal.call(self._zone, shards[which % len(shards)], lo, min(lo + span, 400))

    async def _zone(self, shard: str, lo: int, hi: int) -> None:
        c = self.client
        await self._unzone()
        zone = f"z_{shard}"
        await c.admin({"addShardToZone": shard, "zone": zone})
        await c.admin({"updateZoneKeyRange": "db.c", "min": {"k": lo}, "max": {"k": hi}, "zone": zone})
        self.zone = (lo, hi)
        await self._balanced()
        chunks = await c.find("config", "chunks", {"min.k": {"$gte": lo}, "max.k": {"$lte": hi}})
        assert {d["min"]["k"] for d in chunks if isinstance(d["min"]["k"], int)} >= {lo}, "no chunk starts at the zone"
        assert {d["shard"] for d in chunks} == {shard}, f"zone [{lo}, {hi}) of {shard} holds chunks elsewhere: {chunks}"

    async def _balanced(self) -> None:
        """Wait until the balancer has split and placed db.c's chunks by its zone."""
        for _ in range(600):
            if (await self.client.admin({"balancerCollectionStatus": "db.c"}))["balancerCompliant"]:
                return
            await trio.sleep(1)

    async def _unzone(self) -> None:
        if self.zone is not None:
            lo, hi = self.zone
            await self.client.admin({"updateZoneKeyRange": "db.c", "min": {"k": lo}, "max": {"k": hi}, "zone": None})
            self.zone = None

    @rule(at=st.integers(1, 399), pick=st.integers(0, 2**16), span=st.integers(2, 4), via=st.integers(0, 1),
          every=st.booleans())
    def merge_chunks(self, at: int, pick: int, span: int, via: int, every: bool) -> None:
        """db.c split at `at` (two adjacent chunks on one shard at least), then adjacent chunks of one shard
        merged through one router: `mergeChunks` on up to `span` of them, or `mergeAllChunksOnShard` (which
        takes only the chunks on the shard since before the history window).  A merge moves no shard's major
        version: the other router, routing by the chunks from before, still reads exactly the documents
        written; watchers see nothing of it."""
        chunks = self.portal.call(self._db_c_chunks)
        if all(d["min"] != {"k": at} for d in chunks):
            self.portal.call(self.client.admin, {"split": "db.c", "middle": {"k": at}})
            chunks = self.portal.call(self._db_c_chunks)
        runs: list[list[dict]] = []
        for d in chunks:
            if runs and runs[-1][-1]["shard"] == d["shard"] and runs[-1][-1]["max"] == d["min"]:
                runs[-1].append(d)
            else:
                runs.append([d])
        runs = [r for r in runs if len(r) > 1]
        if not runs:
            return
        run = runs[pick % len(runs)]
        n = min(span, len(run))
        start = (pick // len(runs)) % (len(run) - n + 1)
        first, last = run[start], run[start + n - 1]
        client = self.clients[via]
        if every:
            self.portal.call(client.admin, {"mergeAllChunksOnShard": "db.c", "shard": first["shard"]})
        else:
            self.portal.call(client.admin, {"mergeChunks": "db.c", "bounds": [first["min"], last["max"]]})
        if self.zone is not None:  # a merged chunk across a zone bound: the balancer splits it there again
            self.portal.call(self._balanced)
        after = self.portal.call(self._db_c_chunks)
        assert all(a["max"] == b["min"] for a, b in zip(after, after[1:])), f"a hole or an overlap: {after}"
        lo, hi = _k(first["min"]), _k(last["max"])
        resplit = self.zone is not None and any(lo < b < hi for b in self.zone)
        assert len(after) <= len(chunks) - (0 if every or resplit else n - 1)
        if not every:  # [lo, hi) is on the shard it was on, in one chunk unless a zone bound cuts it
            inside = [d for d in after if lo <= _k(d["min"]) and _k(d["max"]) <= hi]
            assert {d["shard"] for d in inside} == {first["shard"]}, after
            assert resplit or [(d["min"], d["max"]) for d in inside] == [(first["min"], last["max"])], after
        try:
            docs = self.portal.call(self.clients[1 - via].find, "db", "c", {"k": {"$gte": lo, "$lt": hi}})
        except CommandError:
            return  # an injected fault
        assert sorted(d["_id"] for d in docs) == sorted(i for i, k in self.docs.items() if lo <= k < hi)

    @rule(wait=st.booleans(), skip=st.booleans())
    def auto_merge(self, wait: bool, skip: bool) -> None:
        """The balancer's AutoMerger (off between steps: sh.stopAutoMerger() at setup) on for one
        automerge round: after it no two adjacent db.c chunks of one shard, both there since before the
        history window when the round started, are left apart (a zone bound aside); `wait` first lets
        the window pass; with `skip`, db.c is left out (sh.disableAutoMerger) and keeps every chunk bound.
        Every document reads back through both routers; watchers see nothing of it (the invariant)."""
        self.portal.call(self._clear_faults)
        self.portal.call(self._auto_merge_round, wait, skip)
        for client in self.clients:
            docs = self.portal.call(client.find, "db", "c", {})
            assert {d["_id"]: d["k"] for d in docs} == self.docs

    async def _auto_merge_round(self, wait: bool, skip: bool) -> None:
        c = self.client
        if wait:
            await trio.sleep(HISTORY_WINDOW_S + 1)
        before = await self._db_c_chunks()
        if skip:
            await c.update("config", "collections", {"_id": "db.c"}, {"$set": {"enableAutoMerge": False}})
        ended = len(await c.find("config", "changelog", {"what": "autoMerge.end"}))
        await c.update("config", "settings", {"_id": "automerge"}, {"$set": {"enabled": True}}, upsert=True)
        t0 = trio.current_time()
        while len(ends := await c.find("config", "changelog", {"what": "autoMerge.end"})) == ended:
            assert trio.current_time() - t0 < 120, "no automerge round"
            await trio.sleep(1)
        await c.update("config", "settings", {"_id": "automerge"}, {"$set": {"enabled": False}}, upsert=True)
        if skip:
            await c.update("config", "collections", {"_id": "db.c"}, {"$unset": {"enableAutoMerge": 1}})
        start = sorted(d["time"] for d in await c.find("config", "changelog", {"what": "autoMerge.start"})
                       if d["time"] <= max(e["time"] for e in ends))[-1]
        oldest = int(start.replace(tzinfo=timezone.utc).timestamp()) - HISTORY_WINDOW_S
        after = await self._db_c_chunks()
        assert all(a["max"] == b["min"] for a, b in zip(after, after[1:])), f"a hole or an overlap: {after}"
        if skip:
            assert {_k(d["min"]) for d in before} <= {_k(d["min"]) for d in after}, (before, after)
            return
        zone_bounds = set(self.zone or ())
        for a, b in zip(after, after[1:]):
            both_old = all(d["onCurrentShardSince"].time < oldest and not d.get("jumbo") for d in (a, b))
            assert not (a["shard"] == b["shard"] and both_old and _k(b["min"]) not in zone_bounds), (
                f"mergeable chunks left apart: {a} {b}")

    async def _db_c_chunks(self) -> list[dict]:
        """db.c's chunks in config.chunks, by lower bound."""
        [coll] = await self.client.find("config", "collections", {"_id": "db.c"})
        docs = await self.client.find("config", "chunks", {"uuid": coll["uuid"]})
        return sorted(docs, key=lambda d: _k(d["min"]))

    @precondition(lambda self: self.zoned < 3)
    @rule(lo=st.integers(0, 398), span=st.integers(1, 200), which=st.integers(0, 2**16))
    def shard_a_zoned_collection(self, lo: int, span: int, which: int) -> None:
        """A new collection whose zone range was defined before it was sharded (router/initial_split_policy.py):
        its first chunks keep the zone at once (nothing for the balancer to do), and its documents land where
        their chunks are.  The range then goes, so that any shard can still be drained."""
        self.portal.call(self._clear_faults)
        shards = self.live_shards()
        self.zoned += 1
        self.portal.call(self._shard_zoned, f"z{self.zoned}", shards[which % len(shards)], lo, min(lo + span, 400))

    async def _insert_one(self, name: str, fields: dict) -> int | None:
        """Insert a document with the next `_id` into db.`name` and log it; None if the insert failed."""
        i = self.next_id
        self.next_id += 1
        try:
            await self.client.insert("db", name, [{"_id": i, **fields}])
        except CommandError:
            return None
        self.log.append((f"db.{name}", "insert", i))
        return i

    async def _shard_zoned(self, name: str, shard: str, lo: int, hi: int) -> None:
        c, ns, zone = self.client, f"db.{name}", f"initial_{name}"  # (keyed on z: rule zone_a_range reads chunks by k)
        await c.admin({"addShardToZone": shard, "zone": zone})
        await c.admin({"updateZoneKeyRange": ns, "min": {"z": lo}, "max": {"z": hi}, "zone": zone})
        await c.admin({"shardCollection": ns, "key": {"z": 1}})
        [coll] = await c.find("config", "collections", {"_id": ns})
        chunks = await c.find("config", "chunks", {"uuid": coll["uuid"]})
        # [MinKey, lo), the range on its zone's shard, [hi, MaxKey)
        assert len(chunks) == 3 and [d["shard"] for d in chunks if d["min"]["z"] == lo] == [shard], chunks
        assert (await c.admin({"balancerCollectionStatus": ns}))["balancerCompliant"]
        written = []
        for k in sorted({lo, (lo + hi) // 2, hi - 1, hi}):
            if (i := await self._insert_one(name, {"z": k})) is not None:
                written.append((i, k))
        held = self.core.router.shard(shard).node.catalog.collection("db", name)
        assert {i for i, k in written if lo <= k < hi} <= {d["_id"] for d in held.docs.values()}
        assert sorted(d["_id"] for d in await c.find("db", name)) == sorted(i for i, _ in written)
        await c.admin({"updateZoneKeyRange": ns, "min": {"z": lo}, "max": {"z": hi}, "zone": None})
        await c.admin({"removeShardFromZone": shard, "zone": zone})

    @precondition(lambda self: self.hashed < 2)
    @rule(ids=st.lists(st.integers(0, 2**40), min_size=1, max_size=6, unique=True))
    def shard_a_hashed_collection(self, ids: list[int]) -> None:
        """A new empty collection sharded on a hashed key (router/initial_split_policy.py,
        SplitPointsBasedSplitPolicy), whatever shards were added or removed before: one chunk per shard of
        config.shards, round-robin over them in the server's shuffled order; documents land on their
        chunk's shard."""
        self.portal.call(self._clear_faults)
        self.hashed += 1
        self.portal.call(self._shard_hashed, f"h{self.hashed}", ids)

    async def _shard_hashed(self, name: str, ids: list[int]) -> None:
        c, ns = self.client, f"db.{name}"
        await c.admin({"shardCollection": ns, "key": {"u": "hashed"}})
        order = [d["_id"] for d in await c.find("config", "shards") if not d.get("draining")]
        [coll] = await c.find("config", "collections", {"_id": ns})
        chunks = sorted(await c.find("config", "chunks", {"uuid": coll["uuid"]}), key=lambda d: d["lastmod"])
        shuffled = default_engine_shuffle(order)
        assert [d["shard"] for d in chunks] == [shuffled[i % len(shuffled)] for i in range(len(chunks))], chunks
        assert len(chunks) == len(self.core.router.shards)
        for u in ids:
            if (i := await self._insert_one(name, {"u": u})) is None:
                continue
            [owner] = [d["shard"] for d in chunks if _hashed_in(d, hash64(u))]
            held = self.core.router.shard(owner).node.catalog.collection("db", name)
            assert held is not None and held.get(i) is not None

    @precondition(lambda self: not self.removed)
    @rule(which=st.integers(0, 2**16))
    def remove_a_shard(self, which: int) -> None:
        """removeShard until completed: the balancer drains it, its databases move (movePrimary)."""
        self.portal.call(self._clear_faults)
        self.portal.call(self._unzone)  # (a shard that is its zone's last one could not be drained)
        shard = self.live_shards()[which % len(self.live_shards())]
        for w in self.watchers:  # (every watcher has caught up: what it saw so far precedes the removal)
            w.resumable_from = len(w.tokens)
            w.events_before_removal = len(w.received)
        self.portal.call(self._remove, shard)
        self.removed.add(shard)

    async def _remove(self, shard: str) -> None:
        c = self.client
        while True:
            r = await c.admin({"removeShard": shard})
            if r["state"] == "completed":
                return
            if r["state"] == "ongoing" and r["remaining"]["chunks"] == 0:
                to = next(s for s in self.live_shards() if s != shard)
                for db in r["dbsToMove"]:
                    await c.admin({"movePrimary": db, "to": to})
            await trio.sleep(1)

    @rule(which=st.integers(0, 1))
    def restart_router(self, which: int) -> None:
        """A mongos restarts: its cursors die (watchers resume), its cache starts afresh."""
        self.portal.call(self.faults.restart_router, self.core.routers[which].name)

    @precondition(lambda self: self.added < 2)
    @rule()
    def add_a_shard(self) -> None:
        self.added += 1
        self.portal.call(add_shard, self.core.router, f"new{self.added}")

    @precondition(lambda self: self.log)
    @rule()
    def drop_and_recreate(self) -> None:
        self.portal.call(self._clear_faults)
        self.portal.call(self.client.command, "db", {"drop": "c"})
        self.zone = None  # (its zone ranges went with it)
        self.log.append(("db.c", "drop", None))
        self.drops += 1
        self.docs.clear()
        self.portal.call(self._setup_collection)

    @precondition(lambda self: self.other)
    @rule()
    def rename_across_databases(self) -> None:
        """db.o renamed over moved.o (dropTarget): a whole-cluster watcher sees the copy's inserts into
        moved.tmpXXXXX.renameCollection, the rename to moved.o, then the drop of db.o; a database watcher
        the drop.  mongos creates `moved` on db's primary shard; once a removed shard moved the two
        databases' primaries apart, the rename is refused (CommandFailed) and changes nothing."""
        self.portal.call(self._clear_faults)
        try:
            self.portal.call(self.client.admin, {"renameCollection": "db.o", "to": "moved.o", "dropTarget": True})
        except CommandError as err:
            assert err.code == 125 and "must be on same shard" in str(err), err
            return
        self.log.extend(("moved.tmp", "insert", i) for i in sorted(self.other))
        self.log.append(("moved.tmp", "rename", None))
        self.log.append(("db.o", "drop", None))
        self.other.clear()

    @rule(low=st.integers(0, 60), via=st.integers(0, 1))
    def modify_view(self, low: int, via: int) -> None:
        """collMod of the view db.v on db.o: both routers read the new definition at once, and no watcher
        (none shows expanded events) sees the system.views writes."""
        self.portal.call(self._clear_faults)
        definition = {"viewOn": "o", "pipeline": [{"$match": {"_id": {"$gte": low}}}]}
        if not self.view:
            self.portal.call(self.client.command, "db", {"create": "v", **definition})
            self.view = True
        else:
            self.portal.call(self.clients[via].command, "db", {"collMod": "v", **definition})
        for client in self.clients:
            docs = self.portal.call(client.find, "db", "v", {})
            assert sorted(d["_id"] for d in docs) == sorted(i for i in self.other if i >= low)

    # -- snapshot reads -------------------------------------------------------------------
    async def _snapshot_find(self, at) -> tuple[dict | None, float]:
        rc = {"level": "snapshot", **({"atClusterTime": at} if at is not None else {})}
        reply = await self.client.command("db", {"find": "c", "readConcern": rc}, check=False)
        return reply, trio.current_time()

    @rule()
    def snapshot_read(self) -> None:
        """A snapshot read sees db.c as it is; remember its time and what it saw."""
        reply, now = self.portal.call(self._snapshot_find, None)
        if not reply.get("ok"):
            return  # an injected fault
        seen = {d["_id"]: d["k"] for d in reply["cursor"]["firstBatch"]}
        assert seen == self.docs
        self.snapshots.append((reply["cursor"]["atClusterTime"], seen, (self.drops, len(self.removed)),
                               self.restarts, now))

    @precondition(lambda self: self.snapshots)
    @rule(pick=st.integers(0, 2**16))
    def snapshot_reread(self, pick: int) -> None:
        """Reading again at a remembered time sees what was seen then, whatever happened since
        (writes, chunk moves, shard-key changes, new shards, restarts) within the history window."""
        at, seen, drops, restarts, then = self.snapshots[pick % len(self.snapshots)]
        if drops != (self.drops, len(self.removed)):  # (a removed shard's past is not read by snapshot reads)
            return  # (the collection was dropped since)
        reply, now = self.portal.call(self._snapshot_find, at)
        if not reply.get("ok"):  # SnapshotTooOld only past the window or after a restart
            assert reply.get("code") != 239 or now - then >= HISTORY_WINDOW_S or restarts != self.restarts, reply
            return
        assert {d["_id"]: d["k"] for d in reply["cursor"]["firstBatch"]} == seen

    # -- index reads ------------------------------------------------------------------------
    @rule(lo=st.integers(0, 399), span=st.integers(1, 250), desc=st.booleans(), collated=st.booleans())
    def indexed_read(self, lo: int, span: int, desc: bool, collated: bool) -> None:
        """A range read through the shard-key index {k: 1}, sorted by it: every write path so far
        (inserts, updates, deletes, shard-key changes, transactions, migrations' clones and range
        deletions, restarts) kept the index in step with the documents.  Under a collation (numbers
        compare alike under every one) the simple index still bounds the range, a SORT stage orders
        by the collation and mongos merges by it: the same documents in the same order."""
        extra = {"collation": {"locale": "en", "strength": 1}} if collated else {}

        async def read():
            return await self.client.find("db", "c", {"k": {"$gte": lo, "$lt": lo + span}}, hint={"k": 1},
                                          sort={"k": -1 if desc else 1}, **extra)

        try:
            docs = self.portal.call(read)
        except CommandError:
            return  # an injected fault
        want = sorted(((k, i) for i, k in self.docs.items() if lo <= k < lo + span), reverse=desc)
        assert sorted((d["k"], d["_id"]) for d in docs) == sorted(want)
        assert [d["k"] for d in docs] == [k for k, _i in want]

    @rule(lo=st.integers(0, 399), span=st.integers(1, 250), other=st.integers(0, 399))
    def wildcard_and_or_read(self, lo: int, span: int, other: int) -> None:
        """The wildcard index {$**: 1} (projected on k) and a rooted $or planned branch by branch see the
        same documents as the model, whatever wrote them: every write path keeps wildcard keys too."""
        rng = {"k": {"$gte": lo, "$lt": lo + span}}

        async def read():
            by_wildcard = await self.client.find("db", "c", rng, hint={"$**": 1})
            by_or = await self.client.find("db", "c", {"$or": [rng, {"k": other}]})
            return by_wildcard, by_or

        try:
            by_wildcard, by_or = self.portal.call(read)
        except CommandError:
            return  # an injected fault
        assert sorted(d["_id"] for d in by_wildcard) == sorted(i for i, k in self.docs.items() if lo <= k < lo + span)
        assert sorted(d["_id"] for d in by_or) == sorted(i for i, k in self.docs.items()
                                                         if lo <= k < lo + span or k == other)

    @rule(lo=st.integers(0, 399), limit=st.integers(1, 5))
    def planner_choices_read(self, lo: int, limit: int) -> None:
        """Reads whose plan the multi-planner's trial picks (the `k` index or the `_id` index for a sort on
        `_id` with a limit), a covered read (the projection of `k` from the `k` index, no document read)
        and `distinct("k")` by a DISTINCT_SCAN of the shard-key index see what the model holds, whatever
        wrote it."""
        flt = {"k": {"$gte": lo}}

        async def read():
            first = await self.client.find("db", "c", flt, sort={"_id": 1}, limit=limit)
            keys = await self.client.find("db", "c", flt, projection={"_id": 0, "k": 1}, sort={"k": 1})
            values = (await self.client.command("db", {"distinct": "c", "key": "k"}))["values"]
            return first, keys, values

        try:
            first, keys, values = self.portal.call(read)
        except CommandError:
            return  # an injected fault
        matching = sorted(i for i, k in self.docs.items() if k >= lo)
        assert [d["_id"] for d in first] == matching[:limit]
        assert [d["k"] for d in keys] == sorted(k for k in self.docs.values() if k >= lo)
        assert values == sorted(set(self.docs.values()))

    # -- faults ---------------------------------------------------------------------------
    @rule(shard=st.sampled_from(["shard00", "shard01", "shard02"]), seconds=st.sampled_from([0.0, 0.2, 1.5]))
    def delay(self, shard: str, seconds: float) -> None:
        if self.live(shard):
            self.faults.delay(shard, seconds)

    @rule(shard=st.sampled_from(["shard00", "shard01", "shard02"]), code=st.sampled_from(RESUMABLE))
    def fail_a_get_more(self, shard: str, code: int) -> None:
        if self.live(shard):
            self.faults.fail(shard, 1, code, commands=["getMore"])

    @rule(shard=st.sampled_from(["shard00", "shard01", "shard02"]))
    def drop_connection(self, shard: str) -> None:
        if self.live(shard):
            self.faults.drop_connection(shard)

    @rule(shard=st.sampled_from(["shard00", "shard01", "shard02"]))
    def restart_shard(self, shard: str) -> None:
        if self.live(shard):
            self.portal.call(self._restart, shard)

    async def _clear_faults(self) -> None:
        self.faults.clear()  # (on the loop: healed members wake their replication)

    async def _restart(self, shard: str) -> None:
        self.faults.restart(shard)
        self.restarts += 1

    @rule(shard=st.sampled_from(["shard00", "shard01", "shard02"]), skew=st.integers(-30, 30))
    def skew_clock(self, shard: str, skew: int) -> None:
        self.faults.skew(shard, skew)

    # -- watchers -------------------------------------------------------------------------
    @precondition(lambda self: len(self.watchers) < 4)
    @rule(level=st.sampled_from(["coll", "db", "cluster"]), batch=st.sampled_from([None, 1, 3]), via=st.integers(0, 1),
          stages=st.sampled_from(list(USER_STAGES)))
    def open_watcher(self, level: str, batch, via: int, stages: str) -> None:
        """A watcher, with user stages that keep every event and its `_id` (the run renderer, or the
        stage pipeline with the router's check that each `_id` is still its token)."""
        db, coll = {"coll": ("db", "c"), "db": ("db", 1), "cluster": ("admin", 1)}[level]
        cs = self.clients[via].watch(db, coll, USER_STAGES[stages], batch_size=batch, max_await_time_ms=200)
        for attempt in range(4):  # injected faults may outlast the driver's single retry of the aggregate
            try:
                self.portal.call(cs.open)
                break
            except CommandError as err:
                if attempt == 3 or "ResumableChangeStreamError" not in err.labels and err.code not in RESUMABLE:
                    raise
        self.watchers.append(Watcher(level, cs, len(self.log)))

    @precondition(lambda self: self.watchers)
    @rule(which=st.integers(0, 2**16), batch=st.sampled_from([None, 1, 2, 5]))
    def change_batch_size(self, which: int, batch) -> None:
        """A watcher's next getMores ask for another batch size (the router may have merged the next
        batch ahead for the old one: a smaller ask merges for itself)."""
        self.watchers[which % len(self.watchers)].stream.batch_size = batch

    @precondition(lambda self: self.watchers)
    @rule(which=st.integers(0, 2**16), pick=st.integers(0, 2**16))
    def resume_check(self, which: int, pick: int) -> None:
        """Resuming from any token a watcher saw yields exactly the rest of its stream.

        (Indices are drawn first and reduced modulo: how many PBRTs a watcher saw
        depends on scheduling, and hypothesis needs draws that do not.)
        """
        w = self.watchers[which % len(self.watchers)]
        # a stream opened after a shard's removal targets the current shards only (8.0's mongos): resumed
        # from before the removal it would miss what the removed shard wrote, so only later tokens are tried
        tokens = w.tokens[w.resumable_from:]
        if not tokens:
            return
        tok = tokens[pick % len(tokens)]
        suffix = [e["_id"]["_data"] for e in w.received if e["_id"]["_data"] > tok and e["operationType"] != "invalidate"]
        db, coll = {"coll": ("db", "c"), "db": ("db", 1), "cluster": ("admin", 1)}[w.level]

        async def check() -> None:
            r = self.client.watch(db, coll, resumeAfter={"_data": tok}, max_await_time_ms=200)
            await r.open()
            got: list[str] = []
            t0 = trio.current_time()
            while len(got) < len(suffix) and not r.closed:
                ev = await r.try_next()
                if ev is not None and ev["operationType"] != "invalidate":
                    got.append(ev["_id"]["_data"])
                assert trio.current_time() - t0 < 300, "resumed stream stalled"
            await r.close()
            assert got == suffix

        if not any(e["operationType"] == "invalidate" and e["_id"]["_data"] <= tok for e in w.received):
            self.portal.call(check)

    # -- invariants -------------------------------------------------------------------------
    @invariant()
    def every_watcher_has_everything_in_order(self) -> None:
        for w in self.watchers:
            self.portal.call(self._catch_up, w)

    async def _catch_up(self, w: Watcher) -> None:
        expected = [e for e in self.log[w.start:] if visible(w.level, e)]
        if w.level == "coll" and any(e[1] == "drop" for e in expected):
            cut = next(i for i, e in enumerate(expected) if e[1] == "drop")
            expected = expected[: cut + 1] + [("db.c", "invalidate", None)]
        t0 = trio.current_time()
        while not w.ended and len(w.received) < len(expected):
            try:
                ev = await w.stream.try_next()
            except CommandError as err:
                if not w.lost_to_a_removal(err):
                    raise AssertionError(f"{w.level} watcher failed: {err}") from err
                w.ended = w.lost = True  # (what it received until then is still checked below)
                break
            if ev is not None:
                w.received.append(ev)
                w.tokens.append(ev["_id"]["_data"])
            elif w.stream.resume_token is not None:
                w.tokens.append(w.stream.resume_token["_data"])
            if w.stream.closed:
                w.ended = True
            assert trio.current_time() - t0 < 600, f"{w.level} watcher stalled with {len(w.received)}/{len(expected)}"
        keys = [e["_id"]["_data"] for e in w.received]
        assert keys == sorted(keys) and len(set(keys)) == len(keys), "out of order or duplicated"
        assert w.tokens == sorted(w.tokens), "a resume token went backwards"
        got = sorted((_ns_of(e), e["operationType"], e.get("documentKey", {}).get("_id")) for e in w.received)
        if w.lost:  # part of what it should have had, and nothing else
            missing = Counter(got) - Counter((ns, op, i) for ns, op, i in expected)
            assert not missing, f"{w.level} watcher (lost to a removal) got what it should not: {missing}"
            return
        want = sorted((ns, op, i) for ns, op, i in expected)
        assert got == want, f"{w.level} watcher: got {got} want {want}"


ClusterMachine.TestCase.settings = settings(
    max_examples=int(os.environ.get("STATEFUL_EXAMPLES", "200")),
    stateful_step_count=int(os.environ.get("STATEFUL_STEPS", "25")),
    deadline=None,
)
TestClusterMachine = ClusterMachine.TestCase
