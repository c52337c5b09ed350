"""From a trace to a story: numbered steps in plain words, each with the merge's state at that moment.

`build_story(trace)` replays the trace records (`mongosim.trace`) through a
small model of the router's merge — each remote's promise, the events
buffered at the router, the released ones, the gate, the client's resume
token — and writes one `Step` per thing worth saying.  Repetitive records
(a shard answering "nothing new" every second) are folded into one step.

The same steps drive the terminal account (`terminal.py`) and the HTML
timeline (`timeline.py`); `Story.events` and `Story.waits` are what the
tests check the scenarios' claims against.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mongosim import trace as T
from mongosim.demo.fmt import event_name, key_info, key_label, promise_label, seconds, ts_label

QUIET_SPAN = 1.5  # fold "nothing new" records into one line when they span at least this long
OPS = {"i": "insert", "u": "update", "d": "delete", "c": "command", "n": "noop"}

# what a config.shards event the router swallows means (handle topology change: it acts on inserts only)
_CONFIG_SHARDS_CHANGE = {
    "insert": "a shard was added (config.shards insert)",
    "update": "a shard's document changed (config.shards update: draining, topologyTime) — nothing to do",
    "delete": "a shard was removed (config.shards delete) — nothing to do: its cursor stays in the merge",
}


@dataclass
class Passage:
    """An event's way through one merged stream."""

    stream: int | None
    received_t: float | None = None  # when the router got it in a shard's batch
    released_t: float | None = None  # when it passed the gate
    delivered_t: float | None = None  # when the client got it
    swallowed: str | None = None  # why the merge part dropped it, if it did


@dataclass
class EventInfo:
    """One change event, followed from its shard to the client (through each stream that carried it)."""

    key: str
    shard: str
    ts: int
    name: str  # "insert _id:1"
    transformed_t: float | None = None  # when the shard's stages made it (the last time)
    filtered: str | None = None  # why a shard's stage dropped it (classic-events filter, user $match)
    passages: dict = field(default_factory=dict)  # stream -> Passage

    def passage(self, stream: int | None = None) -> Passage:
        if stream is None and self.passages:
            return next(iter(self.passages.values()))
        p = self.passages.get(stream)
        if p is None:
            p = self.passages[stream] = Passage(stream)
        return p

    # the first stream's passage, for the common one-stream story
    @property
    def received_t(self) -> float | None:
        return self.passage().received_t if self.passages else None

    @property
    def released_t(self) -> float | None:
        return self.passage().released_t if self.passages else None

    @property
    def delivered_t(self) -> float | None:
        return self.passage().delivered_t if self.passages else None

    @property
    def swallowed(self) -> str | None:
        return self.passage().swallowed if self.passages else None


@dataclass(frozen=True)
class GateState:
    key: str
    shard: str
    min_promised: str | None
    waiting_on: tuple[T.Waiting, ...]


@dataclass(frozen=True)
class Snapshot:
    """The merge at one moment (of the stream being told)."""

    t: float
    remotes: tuple[str, ...]
    promises: dict
    min_promised: str | None
    buffered: tuple[str, ...]
    released: tuple[tuple[int | None, str], ...]  # (stream, key), every stream so far
    gate: GateState | None
    client_pbrt: str | None
    stream: int | None


@dataclass(frozen=True)
class Step:
    t: float
    who: str  # "client", "router", "scenario", or a node: "shard00", "config"
    kind: str  # the record step it tells (or "quiet" for folded records)
    text: str
    snapshot: Snapshot
    key: str | None = None  # the event it is about, if any
    t_end: float | None = None  # for folded steps: the end of the quiet period


@dataclass
class Wait:
    """Why a released event waited at the gate, and what let it go."""

    key: str
    name: str
    shard: str
    stream: int | None
    received_t: float
    released_t: float
    blockers: list[str]  # remotes whose promise was below it
    released_by: dict  # blocker -> (t, promise key, why)  — the reply that lifted the promise past it

    @property
    def waited(self) -> float:
        return self.released_t - self.received_t


@dataclass
class Story:
    steps: list[Step]
    events: dict[str, EventInfo]
    waits: list[Wait]
    lanes: list[str]  # remotes in display order (shards sorted, then config)
    streams: list[int | None]  # the merged streams, in the order they opened
    zero: int  # cluster seconds at virtual time 0
    noops: list[tuple[str, int, float]]  # (node, ts, t)
    added_at: dict  # remote -> virtual time its cursor joined
    end_t: float

    def released(self, stream: int | None = None) -> list[EventInfo]:
        """Events released to the client by `stream` (default: the first), in release order."""
        stream = self.streams[0] if stream is None and self.streams else stream
        out = [(e.passages[stream], e) for e in self.events.values() if stream in e.passages]
        return [e for p, e in sorted(((p, e) for p, e in out if p.released_t is not None and p.swallowed is None),
                                     key=lambda pe: (pe[0].released_t, pe[1].key))]

    def delivered(self, stream: int | None = None) -> list[EventInfo]:
        stream = self.streams[0] if stream is None and self.streams else stream
        out = [(e.passages[stream], e) for e in self.events.values() if stream in e.passages]
        return [e for p, e in sorted(((p, e) for p, e in out if p.delivered_t is not None),
                                     key=lambda pe: (pe[0].delivered_t, pe[1].key))]


class _StreamModel:
    def __init__(self, stream: int | None) -> None:
        self.stream = stream
        self.remotes: list[str] = []
        self.promises: dict[str, str | None] = {}
        self.min_promised: str | None = None
        self.buffered: dict[str, str] = {}  # key -> shard
        self.gate: GateState | None = None
        self.client_pbrt: str | None = None
        self.seen_batch: set[str] = set()
        self.closed = False


def lane_order(names) -> list[str]:
    shards = sorted(n for n in names if n != "config")
    return shards + (["config"] if "config" in names else [])


def build_story(trace: T.Trace) -> Story:
    return _Teller(trace).tell()


class _Teller:
    def __init__(self, trace: T.Trace) -> None:
        self.trace = trace
        self.zero = int(round(trace.cluster_zero))
        self.streams: dict[int | None, _StreamModel] = {}
        self.current: _StreamModel = _StreamModel(None)
        self.events: dict[str, EventInfo] = {}
        self.released: list[tuple[int | None, str]] = []
        self.steps: list[Step] = []
        self.quiet: list[T.Record] = []
        self.noops: list[tuple[str, int, float]] = []
        self.noop_ts: set[tuple[str, int]] = set()
        self.promise_why: dict[tuple[str, int], str] = {}
        self.explained_noop: set[str] = set()
        self.added_at: dict[str, float] = {}
        self.pending_scan: dict[tuple[str, int], T.Scanned] = {}
        self.gates: dict[tuple, T.Gate] = {}  # (stream, key) -> first gate record that held it
        self.batches: list[T.Batch] = []
        self.t = 0.0

    # -- helpers ----------------------------------------------------------------------------
    def ts(self, ts: int | None) -> str:
        return ts_label(ts, self.zero)

    def key(self, key: str | None) -> str:
        return key_label(key, self.zero)

    def promise(self, key: str | None) -> str:
        return promise_label(key, self.zero)

    def model(self, stream: int | None) -> _StreamModel:
        m = self.streams.get(stream)
        if m is None:
            m = self.streams[stream] = _StreamModel(stream)
        self.current = m
        return m

    def snapshot(self) -> Snapshot:
        m = self.current
        return Snapshot(self.t, tuple(lane_order(m.remotes)), dict(m.promises), m.min_promised,
                        tuple(m.buffered), tuple(self.released), m.gate, m.client_pbrt, m.stream)

    def say(self, who: str, kind: str, text: str, key: str | None = None) -> None:
        self.flush_quiet()
        self.steps.append(Step(self.t, who, kind, text, self.snapshot(), key))

    def event(self, key: str, shard: str) -> EventInfo:
        ev = self.events.get(key)
        if ev is None:
            info = key_info(key)
            ev = self.events[key] = EventInfo(key, shard, info.ts, event_name(key))
        elif ev.shard == "?" and shard != "?":
            ev.shard = shard
        return ev

    def why_promise(self, shard: str, key: str | None) -> str:
        """Where a shard's promise comes from, in words."""
        if key is None:
            return ""
        info = key_info(key)
        if not info.hwm:
            return "its last event"
        why = self.promise_why.get((shard, info.ts))
        if why == "instant":
            return "its own clock, at once: instant-HWM"
        if (shard, info.ts) in self.noop_ts:
            return "its latest oplog entry: the periodic noop"
        return "the latest oplog entry it has read"

    def promise_why_text(self, shard: str, key: str | None) -> str:
        if key is None:
            return "no promise yet"
        info = key_info(key)
        if not info.hwm:
            return f"{self.ts(info.ts)} (its last event, {event_name(key)})"
        return f"{self.ts(info.ts)} ({self.why_promise(shard, key)})"

    # -- folding quiet records ------------------------------------------------------------------
    def flush_quiet(self) -> None:
        if not self.quiet:
            return
        recs, self.quiet = self.quiet, []
        t0, t1 = recs[0].t, recs[-1].t
        if t1 - t0 < QUIET_SPAN:
            return  # a moment's routine traffic: not worth a line
        shards = lane_order({r.shard for r in recs if isinstance(r, T.Batch)})
        replies = sum(1 for r in recs if isinstance(r, T.Reply))
        parts = []
        if shards:
            n = sum(1 for r in recs if isinstance(r, T.Batch))
            moved = any(r.pbrt != r.min_promised for r in recs if isinstance(r, T.Batch))
            who = " and ".join([", ".join(shards[:-1]), shards[-1]] if len(shards) > 1 else shards)
            parts.append(f"{who} answered {n} time{'s' if n != 1 else ''} with no event"
                         + (" (promises moving with time)" if moved and self.current.gate is None
                            else " and the same promise"))
        if replies:
            parts.append(f"the client got {replies} empty batch{'es' if replies != 1 else ''} "
                         f"with the same resume token")
        text = "; ".join(parts) or "nothing new"
        if self.current.gate is not None:
            text += f" — the gate stays closed"
        self.steps.append(Step(t0, "…", "quiet", text, self.snapshot(), None, t_end=t1))

    # -- the replay -------------------------------------------------------------------------------
    def tell(self) -> Story:
        for rec in self.trace.records:
            self.t = rec.t
            handler = getattr(self, "on_" + rec.step, None)
            if handler is not None:
                handler(rec)
        self.flush_quiet()
        lanes = lane_order({r for m in self.streams.values() for r in m.remotes})
        end_t = self.trace.records[-1].t if self.trace.records else 0.0
        streams = [s for s in self.streams if s is not None]
        return Story(self.steps, self.events, self.waits(), lanes, streams, self.zero, self.noops, self.added_at,
                     end_t)

    def on_action(self, r: T.Action) -> None:
        self.say(r.where, "action", r.text)

    def on_note(self, r: T.Note) -> None:
        self.say(r.where, "note", r.text)

    def on_noop(self, r: T.Noop) -> None:
        self.noops.append((r.where, r.ts, r.t))
        self.noop_ts.add((r.where, r.ts))
        if not self.explained_noop:
            text = (f"writes a periodic noop @{self.ts(r.ts)}: once per interval (periodicNoopIntervalSecs) a "
                    f"node's noop writer checks whether anything was written since its previous check; nothing "
                    f"was, so it writes this entry. It carries no data: it exists so that the node's promise "
                    f"can move")
        elif r.where not in self.explained_noop:
            text = f"writes a periodic noop @{self.ts(r.ts)} too"
        else:
            text = f"writes a periodic noop @{self.ts(r.ts)}"
        self.explained_noop.add(r.where)
        self.say(r.where, "noop", text)

    def on_promise(self, r: T.Promise) -> None:
        self.promise_why[(r.where, r.ts)] = r.why

    def on_scanned(self, r: T.Scanned) -> None:
        self.pending_scan[(r.where, r.ts)] = r

    def _entry(self, where: str, ts: int) -> str:
        s = self.pending_scan.pop((where, ts), None)
        if s is None:
            return ""
        op = OPS.get(s.op, s.op)
        return f"reads oplog entry {op} {s.ns} @{self.ts(ts)} → "

    def on_transformed(self, r: T.Transformed) -> None:
        ev = self.event(r.key, r.where)
        ev.transformed_t = r.t
        prefix = self._entry(r.where, r.ts)
        what = f"change event {event_name(r.key)} @{self.ts(r.ts)}"
        self.say(r.where, "transformed", f"{prefix}{what}" if prefix else f"makes {what}", r.key)

    def on_unwound(self, r: T.Unwound) -> None:
        prefix = self._entry(r.where, r.ts)
        self.say(r.where, "unwound", f"{prefix}unwinds operation #{r.txn_op_index} of the transaction "
                                     f"committed @{self.ts(r.ts)} ({r.ns})")

    def on_filtered(self, r: T.Filtered) -> None:
        self.pending_scan.pop((r.where, r.ts), None)
        if r.key is not None:
            self.event(r.key, r.where).filtered = r.reason
            self.say(r.where, "filtered", f"drops {self.key(r.key)}: {r.reason}", r.key)
            return
        why = {"fromMigrate": "fromMigrate — written by the cluster's own machinery (a chunk migration, or a "
                              "sharded DDL on a shard that is not the primary), never reported"}.get(r.reason, r.reason)
        what = f"{OPS.get(r.op, r.op)} {r.ns} " if r.op else ""
        self.say(r.where, "filtered", f"skips oplog entry {what}@{self.ts(r.ts)}: {why}")

    def on_swallowed(self, r: T.Swallowed) -> None:
        if r.ts is not None and r.shard is None:  # on a shard: check resumability
            self.say(r.where, "swallowed", f"check-resumability swallows {self.key(r.key)}: {r.reason}", r.key)
            return
        m = self.model(r.stream)
        ev = self.event(r.key, r.shard or "?")
        ev.passage(r.stream).swallowed = r.reason
        m.buffered.pop(r.key, None)
        if r.reason.startswith("topology"):
            what = (_CONFIG_SHARDS_CHANGE.get(r.op, "config.shards changed") if r.shard == "config"
                    else "a chunk moved to a shard that had none (migrateChunkToNewShard)")
            text = (f"swallows {self.key(r.key)} from {r.shard}: {what} — "
                    f"a topology event for the router itself, never for the client")
        else:
            text = (f"swallows {self.key(r.key)} from {r.shard}: {r.reason} "
                    f"(ensure-resume-token-present: the client already has it)")
        self.say("router", "swallowed", text, r.key)

    def on_invalidate(self, r: T.Invalidate) -> None:
        self.say(r.where, "invalidate", f"check-invalidate: this command ends the stream; an invalidate event "
                                        f"({self.key(r.key)}) follows it, then this shard's cursor closes", r.key)

    def on_remote_added(self, r: T.RemoteAdded) -> None:
        m = self.model(r.stream)
        if r.shard not in m.remotes:
            m.remotes.append(r.shard)
            m.promises[r.shard] = None
        self.added_at.setdefault(r.shard, r.t)

    def on_batch(self, r: T.Batch) -> None:
        m = self.model(r.stream)
        self.batches.append(r)
        first = r.shard not in m.seen_batch
        m.seen_batch.add(r.shard)
        old = m.promises.get(r.shard)
        m.promises[r.shard] = r.pbrt
        m.min_promised = r.min_promised
        for key in r.events:
            self.event(key, r.shard).passage(r.stream).received_t = r.t
            m.buffered[key] = r.shard
        if not first and not r.events and (r.pbrt == old or not m.buffered):
            # nothing new — or a promise moved while no event waits at the gate: routine, folded
            self.quiet.append(r)
            return
        names = ", ".join(self.key(k) for k in r.events)
        got = f"{len(r.events)} event{'s' if len(r.events) != 1 else ''}: {names}" if r.events else "no events"
        if first and not r.events and r.pbrt is not None:
            promise = f"promises {self.key(r.pbrt)} (where the stream starts)"
        else:
            promise = f"promises {self.promise_why_text(r.shard, r.pbrt)}"
        if first and r.shard == "config":
            text = (f"→ router: cursor opened on config.shards (how the router hears of new shards); "
                    f"{got}; {promise}")
        elif first:
            text = f"→ router: cursor opened (the router sent it the shard part of the pipeline); {got}; {promise}"
        elif r.pbrt != old:
            text = f"→ router: {got}; {promise}"
        else:
            text = f"→ router: {got}; promise unchanged ({self.promise(r.pbrt)})"
        self.say(r.shard, "batch", text)

    def on_gate(self, r: T.Gate) -> None:
        m = self.model(r.stream)
        again = m.gate is not None and m.gate.key == r.key
        before = {w.shard for w in m.gate.waiting_on} if again else set()
        m.gate = GateState(r.key, r.shard, r.min_promised, r.waiting_on)
        self.gates.setdefault((r.stream, r.key), r)
        waits = " and ".join(f"{w.shard} (promised {self.promise(w.promise)})" for w in r.waiting_on)
        if again:
            done = lane_order(before - {w.shard for w in r.waiting_on})
            caught_up = " and ".join(f"{s} (now promises {self.promise(m.promises.get(s))})" for s in done)
            text = (f"gate still closed for {self.key(r.key)}: {caught_up} caught up; still waiting on {waits}"
                    if done else f"gate still closed for {self.key(r.key)}: waiting on {waits}")
        else:
            who = "could" if len(r.waiting_on) > 1 else "could"
            text = (f"gate closed: next in line is {self.key(r.key)} from {r.shard}, but {waits} "
                    f"{who} still send something earlier — it must wait")
        self.say("router", "gate", text, r.key)

    def on_released(self, r: T.Released) -> None:
        m = self.model(r.stream)
        self.event(r.key, r.shard).passage(r.stream).released_t = r.t
        m.buffered.pop(r.key, None)
        if m.gate is not None and m.gate.key == r.key:
            m.gate = None
        self.released.append((r.stream, r.key))
        m.min_promised = r.min_promised
        self.say("router", "released",
                 f"releases {self.key(r.key)} from {r.shard}: no remote can still send anything earlier "
                 f"(lowest promise now {self.promise(r.min_promised)})", r.key)

    def on_hwm(self, r: T.HighWaterMark) -> None:
        pass  # told with the reply that carries it

    def on_new_shard(self, r: T.NewShard) -> None:
        self.model(r.stream)
        self.say("router", "new_shard",
                 f"handle-topology-change: {r.shard} is new — the router opens a cursor on it starting at "
                 f"{self.ts(r.start)}, right after the shard was added, so nothing written there is missed")

    def on_reply(self, r: T.Reply) -> None:
        m = self.model(r.stream)
        old = m.client_pbrt
        m.client_pbrt = r.pbrt
        for key in r.events:
            self.event(key, "?").passage(r.stream).delivered_t = r.t
        if r.closed:
            m.gate = None
            m.closed = True
        if r.events:
            names = ", ".join(self.key(k) for k in r.events)
            self.say("client", "reply", f"receives {len(r.events)} event{'s' if len(r.events) != 1 else ''}: "
                                        f"{names}; postBatchResumeToken {self.key(r.pbrt)}"
                     + ("; the stream is closed" if r.closed else ""))
        elif r.closed:
            self.say("client", "reply", "gets an empty last batch: the stream is closed")
        elif old is None:
            self.say("client", "reply", f"gets an empty first batch; postBatchResumeToken {self.key(r.pbrt)} "
                                        f"(the start of the stream)")
        elif r.pbrt != old:
            info = key_info(r.pbrt)
            if info.hwm:
                self.say("client", "reply",
                         f"gets an empty batch, but its resume token moves to {self.key(r.pbrt)}: the high-water "
                         f"mark — every remote has promised that nothing before it is still to come")
            else:
                self.say("client", "reply", f"gets an empty batch; resume token {self.key(r.pbrt)}")
        else:
            self.quiet.append(r)

    # -- why did events wait? -------------------------------------------------------------------------
    def waits(self) -> list[Wait]:
        out = []
        for ev in self.events.values():
            for stream, p in ev.passages.items():
                if p.released_t is None or p.received_t is None or p.swallowed is not None:
                    continue
                first_gate = self.gates.get((stream, ev.key))
                if first_gate is None or p.released_t - p.received_t <= 1e-9:
                    continue
                blockers = lane_order({w.shard for w in first_gate.waiting_on})
                lifted = {}
                for b in self.batches:
                    if b.shard in blockers and b.shard not in lifted and first_gate.t <= b.t <= p.released_t \
                            and b.stream == stream and b.pbrt is not None and b.pbrt >= ev.key:
                        why = self.why_promise(b.shard, b.pbrt)
                        noop_t = [t for node, ts, t in self.noops if node == b.shard and ts == key_info(b.pbrt).ts]
                        if noop_t and key_info(b.pbrt).hwm:
                            why += f", written at {seconds(noop_t[0])}"
                        lifted[b.shard] = (b.t, b.pbrt, why)
                out.append(Wait(ev.key, ev.name, ev.shard, stream, p.received_t, p.released_t, blockers, lifted))
        return sorted(out, key=lambda w: (w.released_t, w.key))


def explain_wait(w: Wait, zero: int) -> str:
    """One paragraph: why this event waited, and what released it."""
    blockers = " and ".join(w.blockers)
    parts = [f"{w.name} (from {w.shard}, @{ts_label(key_info(w.key).ts, zero)}) reached the router at "
             f"{seconds(w.received_t)} but was released at {seconds(w.released_t)}: it waited "
             f"{w.waited:.1f} s, because {blockers} had not yet promised anything at or after it — "
             f"and the router may only release an event once every remote has."]
    for shard in w.blockers:
        if shard in w.released_by:
            t, key, why = w.released_by[shard]
            parts.append(f"{shard}'s reply at {seconds(t)} promised {promise_label(key, zero)}"
                         + (f" — {why}" if why else "") + ".")
    return " ".join(parts)
