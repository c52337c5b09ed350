"""$changeStreamSplitLargeEvent: split an event too large for one BSON document.

An event bigger than 16 MiB minus 8 KiB becomes N fragments.  Fragment i has
`_id` = the event's token with `fragmentNum: i`, `splitEvent: {fragment: i+1,
of: N}`, then as many of the event's remaining fields as fit, in order.
Resuming from a fragment's token regenerates the fragments and skips the ones
before it.
"""

from __future__ import annotations

from dataclasses import replace

from mongosim.oplog import bsonutil
from mongosim.oplog.errors import MongoError
from mongosim.oplog.resume_token import decode_resume_token, encode_resume_token
from mongosim.shardsim.changestream.context import PAUSE, ChangeStreamContext, Event, Stage

LIMIT = bsonutil.MAX_BSON_OBJECT_SIZE - 8 * 1024


def split_event(ev: Event) -> list[Event]:
    doc = ev.doc
    if len(bsonutil.encode(doc)) <= LIMIT:
        return [ev]
    data = decode_resume_token(ev.token)
    fields = [(k, v) for k, v in doc.items() if k != "_id"]
    groups: list[list[tuple]] = [[]]
    overhead = 512
    size = overhead
    for k, v in fields:
        s = len(bsonutil.encode({k: v}))
        if s + overhead > LIMIT:
            raise MongoError("BSONObjectTooLarge", f"Could not split a change event: field '{k}' alone is too large")
        if size + s > LIMIT and groups[-1]:
            groups.append([])
            size = overhead
        groups[-1].append((k, v))
        size += s
    out = []
    n = len(groups)
    for i, group in enumerate(groups):
        token = encode_resume_token(replace(data, fragment_num=i))
        frag = {"_id": token, "splitEvent": {"fragment": i + 1, "of": n}}
        frag.update(group)
        out.append(Event(frag, token, ev.ts_key))
    return out


class SplitLargeEvent(Stage):
    name = "$changeStreamSplitLargeEvent"

    def __init__(self, source: Stage, ctx: ChangeStreamContext) -> None:
        super().__init__(source, ctx)
        self._pending: list[Event] = []
        tok = ctx.client_token
        self._skip_before = tok.fragment_num if tok is not None and tok.fragment_num is not None else None
        self._resume_token = tok

    def skippable(self) -> bool:
        return not self._pending  # (the run renderer leaves events over LIMIT to the pipeline)

    def get_next(self):
        if self._pending:
            return self._pending.pop(0)
        ev = self.source.get_next()
        if ev is PAUSE:
            return ev
        frags = split_event(ev)
        if self._skip_before is not None and len(frags) > 1:
            # resuming from fragment k: the client has fragments 0..k already
            if decode_resume_token(frags[0].token).cluster_time == self._resume_token.cluster_time:
                frags = frags[self._skip_before + 1:]
            self._skip_before = None
            if not frags:
                return self.get_next()
        self._pending = frags[1:]
        return frags[0]
