"""The trace of a change stream: what each shard's stages and the router's merge did, step by step.

Off by default, and free when off: every emit point in `router/` and
`shardsim/` is guarded by `if tracer:`.  Attach a `Trace` to a running cluster
to switch it on:

    trace = Trace()
    with trace.attached(core):          # core: mongosim.core.ClusterCore
        ...                             # run a change stream
    for rec in trace.records: ...

`attached` sets `router.tracer = trace.router_sink` and, on every node
(including shards added later), `node.tracer = trace.node_sink`.  Each emitted
dict becomes one typed record below, stamped with the virtual time
(`trio.current_time()`, seconds) and a sequence number.  Sort keys are resume
tokens' `_data` strings (`key`); cluster times are ts keys (`ts`:
`secs << 32 | inc`, see `oplog.clock`).

Shard side (`where` = the node's name; emitted through `ctx.emit` by the
stages in `shardsim/changestream/`, and by the node itself):

    scanned      ts, op, ns            oplog_match: an oplog entry the stream may need
    filtered     ts, reason, key, op, ns   oplog_match dropped an entry (fromMigrate: op, ns), or
                                       an event was dropped (key) by the classic-events filter
                                       or the user's $match
    unwound      ts, txn_op_index, ns  unwind_transaction: one operation of a transaction
    transformed  ts, operation_type, key   transform: the entry became a change event
    swallowed    ts, key, reason       check_resumability: before (or at) the client's token
    invalidate   ts, key               check_invalidate: the stream ends after this event
    promise      ts, previous, why     cursor: the shard's postBatchResumeToken moved to a
                                       high-water mark at `ts` (why: "oplog" = the latest
                                       entry scanned, "instant" = its clock, instant-HWM)
    noop         ts                    node: the periodic noop writer wrote an entry

Router side (`where` = "router"; `stream` numbers the merged streams 1, 2, ...;
emitted by `router/merge/`):

    remote_added shard                 a cursor on a shard (or "config") joined the merge
    batch        shard, events, ops, pbrt, min_promised
                                       a reply from a shard: its events' keys and types, its
                                       promise (PBRT), and the minimum promise after it
    gate         key, shard, min_promised, waiting_on
                                       the smallest buffered event (`key`, from `shard`) cannot
                                       be released: `waiting_on` lists every remote whose
                                       promise is below it (shard, promise, in_flight)
    released     shard, key, op, min_promised   an event passed the gate
    hwm          key, shard            nothing releasable: the high-water mark rose to the
                                       minimum promise (held by `shard`)
    swallowed    key, shard, op, reason  the merge part dropped an event (topology event,
                                       or ensure-resume-token-present)
    new_shard    shard, start          handle-topology-change opens a cursor on a new shard
    reply        events, pbrt, closed  what the client's aggregate/getMore got back

Scenario side (`where` = "client" or "scenario"; added by `Trace.note`):

    action       text                  something the scenario did (a write, a watch(), ...)
    note         text                  an explanation
"""

from __future__ import annotations

import itertools
import json
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields
from typing import Any, ClassVar, Iterator

import trio
from bson import Timestamp

# -- records -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Record:
    """Every record: when (virtual seconds), in which order, where, which step."""

    step: ClassVar[str] = "?"
    seq: int
    t: float
    where: str

    def to_dict(self) -> dict:
        d = asdict(self)
        d["step"] = self.step
        return d


@dataclass(frozen=True)
class Scanned(Record):
    step: ClassVar[str] = "scanned"
    ts: int
    op: str
    ns: str


@dataclass(frozen=True)
class Filtered(Record):
    step: ClassVar[str] = "filtered"
    ts: int
    reason: str
    key: str | None = None
    op: str | None = None
    ns: str | None = None


@dataclass(frozen=True)
class Unwound(Record):
    step: ClassVar[str] = "unwound"
    ts: int
    txn_op_index: int
    ns: str


@dataclass(frozen=True)
class Transformed(Record):
    step: ClassVar[str] = "transformed"
    ts: int
    operation_type: str
    key: str


@dataclass(frozen=True)
class Swallowed(Record):
    """On a shard (check resumability: `ts` set) or in the router's merge part (`shard`, `op` set)."""

    step: ClassVar[str] = "swallowed"
    key: str
    reason: str
    ts: int | None = None
    shard: str | None = None
    op: str | None = None
    stream: int | None = None


@dataclass(frozen=True)
class Invalidate(Record):
    step: ClassVar[str] = "invalidate"
    ts: int
    key: str


@dataclass(frozen=True)
class Promise(Record):
    step: ClassVar[str] = "promise"
    ts: int
    previous: str
    why: str  # "oplog" | "instant"


@dataclass(frozen=True)
class Noop(Record):
    step: ClassVar[str] = "noop"
    ts: int


@dataclass(frozen=True)
class RemoteAdded(Record):
    step: ClassVar[str] = "remote_added"
    shard: str
    stream: int | None = None


@dataclass(frozen=True)
class Batch(Record):
    step: ClassVar[str] = "batch"
    shard: str
    events: tuple[str, ...]
    ops: tuple[str, ...]
    pbrt: str | None
    min_promised: str | None
    stream: int | None = None


@dataclass(frozen=True)
class Waiting:
    shard: str
    promise: str | None
    in_flight: bool


@dataclass(frozen=True)
class Gate(Record):
    step: ClassVar[str] = "gate"
    key: str
    shard: str
    min_promised: str | None
    waiting_on: tuple[Waiting, ...]
    stream: int | None = None


@dataclass(frozen=True)
class Released(Record):
    step: ClassVar[str] = "released"
    shard: str
    key: str
    op: str | None
    min_promised: str | None
    stream: int | None = None


@dataclass(frozen=True)
class HighWaterMark(Record):
    step: ClassVar[str] = "hwm"
    key: str
    shard: str
    stream: int | None = None


@dataclass(frozen=True)
class NewShard(Record):
    step: ClassVar[str] = "new_shard"
    shard: str
    start: int
    stream: int | None = None


@dataclass(frozen=True)
class Reply(Record):
    step: ClassVar[str] = "reply"
    events: tuple[str, ...]
    pbrt: str
    closed: bool = False
    stream: int | None = None


@dataclass(frozen=True)
class Action(Record):
    step: ClassVar[str] = "action"
    text: str


@dataclass(frozen=True)
class Note(Record):
    step: ClassVar[str] = "note"
    text: str


@dataclass(frozen=True)
class Other(Record):
    """A step this schema does not know (yet): kept as it came."""

    name: str = ""
    data: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"seq": self.seq, "t": self.t, "where": self.where, "step": self.name, **self.data}


STEPS: dict[str, type[Record]] = {
    cls.step: cls
    for cls in (Scanned, Filtered, Unwound, Transformed, Swallowed, Invalidate, Promise, Noop, RemoteAdded, Batch,
                Gate, Released, HighWaterMark, NewShard, Reply, Action, Note)
}
SHARD_STEPS = ("scanned", "filtered", "unwound", "transformed", "swallowed", "invalidate", "promise", "noop")
ROUTER_STEPS = ("remote_added", "batch", "gate", "released", "hwm", "swallowed", "new_shard", "reply")

# emitted names -> record field names
_RENAME = {"operationType": "operation_type", "txnOpIndex": "txn_op_index", "token": "key"}


def _value(v: Any) -> Any:
    if isinstance(v, Timestamp):
        return (v.time << 32) | v.inc
    if isinstance(v, list):
        return tuple(_value(x) for x in v)
    return v


# -- the collector ---------------------------------------------------------------------------


class Trace:
    """Collects trace records from a cluster's router and nodes.

    `Trace(out=file, keep=False)` streams instead: each record is written to `out` as one JSON line
    as it happens and not kept (what `mongosim serve --trace FILE` does for a long-running server).
    """

    def __init__(self, out: Any = None, keep: bool = True) -> None:
        self.records: list[Record] = []
        self.out = out
        self.keep = keep
        self._seq = itertools.count()
        self._streams: dict[Any, int] = {}
        self.cluster_zero: float = 0.0  # cluster-time seconds at virtual time 0
        self._attached: list[tuple[Any, str, Any]] = []

    # sinks: what router.tracer / node.tracer call
    def router_sink(self, d: dict) -> None:
        self.add({"where": "router", **d})

    def node_sink(self, d: dict) -> None:
        self.add(d)

    def add(self, d: dict) -> Record:
        d = dict(d)
        step = d.pop("step")
        where = d.pop("where", "router")
        if "stream" in d:
            d["stream"] = self._streams.setdefault(d["stream"], len(self._streams) + 1)
        cls = STEPS.get(step)
        base = {"seq": next(self._seq), "t": trio.current_time(), "where": where}
        if cls is None:
            rec: Record = Other(**base, name=step, data=d)
        else:
            names = {f.name for f in fields(cls)}
            kw = {}
            for k, v in d.items():
                k = _RENAME.get(k, k)
                if k in names:
                    kw[k] = _value(v)
            if cls is Gate:
                kw["waiting_on"] = tuple(Waiting(w["shard"], w["promise"], bool(w["in_flight"]))
                                         for w in d.get("waiting_on", ()))
            rec = cls(**base, **kw)
        if self.keep:
            self.records.append(rec)
        if self.out is not None:
            self.out.write(json.dumps(rec.to_dict(), default=str) + "\n")
        return rec

    def note(self, text: str, *, where: str = "scenario") -> Record:
        return self.add({"step": "note", "where": where, "text": text})

    def action(self, text: str, *, where: str = "client") -> Record:
        return self.add({"step": "action", "where": where, "text": text})

    # attaching to a cluster
    @contextmanager
    def attached(self, core: Any) -> Iterator["Trace"]:
        self.attach(core)
        try:
            yield self
        finally:
            self.detach()

    def attach(self, core: Any) -> "Trace":
        self.cluster_zero = core.time.now() - trio.current_time()
        router = core.router
        if router is not None:
            self._set(router, "tracer", self.router_sink)
            factory = router.shard_factory
            if factory is not None:
                def traced_factory(name: str, _factory=factory) -> Any:
                    node = _factory(name)
                    node.tracer = self.node_sink
                    return node
                self._set(router, "shard_factory", traced_factory)
        for node in core.nodes.values():
            self._set(node, "tracer", self.node_sink)
        return self

    def _set(self, obj: Any, attr: str, value: Any) -> None:
        self._attached.append((obj, attr, getattr(obj, attr)))
        setattr(obj, attr, value)

    def detach(self) -> None:
        for obj, attr, old in reversed(self._attached):
            setattr(obj, attr, old)
        self._attached.clear()

    # reading
    def of(self, *steps: str, where: str | None = None, **match: Any) -> list[Record]:
        """Records of these steps (all if none), optionally at `where` and with fields equal to `match`."""
        out = []
        for r in self.records:
            if steps and r.step not in steps:
                continue
            if where is not None and r.where != where:
                continue
            if any(getattr(r, k, None) != v for k, v in match.items()):
                continue
            out.append(r)
        return out

    def to_json_lines(self) -> str:
        return "".join(json.dumps(r.to_dict(), default=str) + "\n" for r in self.records)


def promise_violations(trace: Trace) -> list[str]:
    """Check the merge's premise on a trace: a remote never sends an event below a promise it made."""
    bad = []
    promised: dict[tuple, str] = {}
    for b in trace.of("batch"):
        k = (b.stream, b.shard)
        p = promised.get(k)
        for key in b.events:
            if p is not None and key < p:
                bad.append(f"{b.shard} sent {key} at t={b.t} after promising {p}")
        if b.pbrt is not None:
            promised[k] = b.pbrt
    return bad
