"""$changeStreamSplitLargeEvent: split an event too large for one BSON document.

An event bigger than 16 MiB minus 8 KiB (kBSONObjMaxChangeEventSize; for a
shard feeding a router, counted with its `$sortKey`) becomes N fragments, as
change_stream_split_event_helpers.cpp builds them: the event's fields other
than `_id` are taken smallest first (ordered by their BSON element size, then
name), and each fragment — `_id` = the event's token with `fragmentNum: i`,
`splitEvent: {fragment: i+1, of: N}` — is filled greedily with as many of
them as fit under the limit less the token's size; every fragment holds at
least one field.

Resuming from a fragment's token: check-resumability lets the whole event
through ("needs split"), this stage regenerates its fragments and drops the
ones *before* the token's; the token's own fragment goes on to
ensure-resume-token-present (the last stage on a replica set, the router's
merge part on a sharded cluster), which swallows it as the resume point.  A
resumed stream whose event is no longer large enough to split, or splits
into fewer fragments, cannot reproduce the point: ChangeStreamFatalError.

The server's optimizer moves this stage ahead of
ensure-resume-token-present (DocumentSourceChangeStreamSplitLargeEvent::
doOptimizeAt); `pipeline.py` builds it there.
"""

from __future__ import annotations

from dataclasses import replace

from mongosim.oplog import bsonutil
from mongosim.oplog.errors import MongoError
from mongosim.oplog.resume_token import encode_resume_token
from mongosim.shardsim.changestream.check_resumability import ResumeStatus, compare_against_client_token
from mongosim.shardsim.changestream.context import PAUSE, ChangeStreamContext, Event, Stage
from mongosim.oplog.resume_token import decode_resume_token

LIMIT = bsonutil.MAX_BSON_OBJECT_SIZE - 8 * 1024  # kBSONObjMaxChangeEventSize
SORT_KEY_FIELD = "$sortKey"  # the metadata a shard's event carries to the router (Document::toBsonWithMetaData)


def _element_size(name: str, value) -> int:
    """The size of one BSON element `name: value` (the document's 4-byte length and NUL excluded)."""
    return len(bsonutil.encode({name: value})) - 5


def sort_key_size(token: dict) -> int:
    """What a shard's event for a router weighs more: its `$sortKey: {"": <token>}` element."""
    return _element_size(SORT_KEY_FIELD, {"": token})


def event_size(ev: Event, needs_merge: bool) -> int:
    """The event's BSON size as the split stage measures it (with its sort key for a router)."""
    size = len(ev.raw) if ev.raw is not None else len(bsonutil.encode_in_order(ev.doc))
    if needs_merge:
        size += sort_key_size(ev.token)
    return size


def split_event(ev: Event, skip: int = 0) -> list[Event]:
    """The fragments of `ev` from fragment number `skip` on."""
    doc = ev.doc
    data = decode_resume_token(ev.token)
    max_fragment = LIMIT - len(bsonutil.encode(ev.token))
    fields = sorted(((_element_size(k, v), k) for k, v in doc.items() if k != "_id"))
    if not fields:
        raise MongoError(7182502, "Cannot split an empty event or an event containing solely '_id' field")
    groups: list[tuple[dict, list[str]]] = []
    i = 0
    while i < len(fields):
        token = encode_resume_token(replace(data, fragment_num=len(groups)))
        head = {"_id": token, "splitEvent": {"fragment": len(groups) + 1, "of": 0}}
        size = len(bsonutil.encode({**head, SORT_KEY_FIELD: {"": token}}))
        names: list[str] = []
        while True:  # at least one field per fragment
            size += fields[i][0]
            names.append(fields[i][1])
            i += 1
            if i == len(fields) or size + fields[i][0] > max_fragment:
                break
        if size > max_fragment:
            raise MongoError(7182500, f"Splitting change event failed: fragment size {size} is greater than "
                                      f"maximum allowed fragment size {max_fragment}")
        groups.append((head, names))
    n = len(groups)
    out = []
    for head, names in groups[skip:]:
        head["splitEvent"]["of"] = n
        frag = dict(head)
        for name in names:
            frag[name] = doc[name]
        out.append(Event(frag, frag["_id"], ev.ts_key, op_type=ev.op_type))
    return out


class SplitLargeEvent(Stage):
    name = "$changeStreamSplitLargeEvent"

    def __init__(self, source: Stage, ctx: ChangeStreamContext) -> None:
        super().__init__(source, ctx)
        self._pending: list[Event] = []
        tok = ctx.client_token
        # resuming from a fragment: the first event decides which fragments to skip
        self._resume_after_split = tok if tok is not None and tok.fragment_num is not None else None

    def _skip_for(self, ev: Event, size: int) -> int:
        """How many of this event's fragments precede the resume point (the first event only)."""
        client = self._resume_after_split
        if client is None:
            return 0
        self._resume_after_split = None
        status = compare_against_client_token(decode_resume_token(ev.token), client)
        if status is not ResumeStatus.NEEDS_SPLIT:
            return 0  # surpassed: the resume point may be on another shard
        if size <= LIMIT:
            raise MongoError("ChangeStreamFatalError",
                             "Attempted to resume from a split event fragment, but the event in the resumed "
                             "stream was not large enough to be split")
        return client.fragment_num

    def skippable(self) -> bool:
        # (the run renderer leaves events the stage could split to the pipeline: RunRenderer.too_large)
        return not self._pending and self._resume_after_split is None

    def get_next(self):
        if self._pending:
            return self._pending.pop(0)
        ev = self.source.get_next()
        if ev is PAUSE:
            return ev
        size = event_size(ev, self.ctx.needs_merge)
        skip = self._skip_for(ev, size)
        if size <= LIMIT:
            return ev
        frags = split_event(ev, skip)
        if not frags:
            raise MongoError("ChangeStreamFatalError",
                             "Attempted to resume from a split event, but the resumed stream produced a different "
                             "split. Ensure that the pipeline used to resume is the same as the original")
        self._pending = frags[1:]
        return frags[0]
