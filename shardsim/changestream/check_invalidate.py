"""$_internalChangeStreamCheckInvalidate: end collection and database streams on drop/rename/dropDatabase.

A collection stream is invalidated by a drop or rename of its collection (or
a dropDatabase); a database stream by dropDatabase; a cluster stream never.
The DDL event is returned first, then `{_id, operationType: "invalidate",
clusterTime, wallTime}` whose token is the DDL event's token with
`fromInvalidate: true`; the next call ends the cursor.

A stream opened with `startAfter` an invalidate token is not invalidated again
by that same command: its invalidate event passes on (without ending the
stream) so that check-resumability finds it as the client's token.
"""

from __future__ import annotations

from mongosim.shardsim.changestream.context import PAUSE, ChangeStreamContext, Event, Invalidated, Stage
from mongosim.shardsim.changestream.spec import COLLECTION, DATABASE
from mongosim.oplog.resume_token import decode_resume_token, encode_resume_token
from dataclasses import replace


class CheckInvalidate(Stage):
    name = "$_internalChangeStreamCheckInvalidate"

    def __init__(self, source: Stage, ctx: ChangeStreamContext) -> None:
        super().__init__(source, ctx)
        self._queued: Event | None = None
        self._raise_next = False
        tok = ctx.client_token
        self._start_after_invalidate = tok if (ctx.spec.start_after is not None and tok is not None and tok.from_invalidate) else None

    def _invalidates(self, op_type: str) -> bool:
        if self.ctx.level == COLLECTION:
            return op_type in ("drop", "rename", "dropDatabase")
        if self.ctx.level == DATABASE:
            return op_type == "dropDatabase"
        return False

    def skippable(self) -> bool:
        return self._queued is None and not self._raise_next

    def get_next(self):
        if self._queued is not None:
            ev, self._queued = self._queued, None
            return ev
        if self._raise_next:
            raise Invalidated()
        ev = self.source.get_next()
        if ev is PAUSE:
            return ev
        op_type = ev.op_type
        if self._invalidates(op_type):
            data = replace(decode_resume_token(ev.token), from_invalidate=True)
            token = encode_resume_token(data)
            inv = Event({"_id": token, "operationType": "invalidate", "clusterTime": ev.doc["clusterTime"],
                         "wallTime": ev.doc["wallTime"]}, token, ev.ts_key)
            self._queued = inv
            if self._start_after_invalidate is not None and data == self._start_after_invalidate:
                self._start_after_invalidate = None
            else:
                self._raise_next = True
                self.ctx.emit("invalidate", ts=ev.ts_key, token=token["_data"])
        return ev
