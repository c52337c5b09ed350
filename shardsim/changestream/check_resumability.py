"""$_internalChangeStreamCheckResumability: swallow the events before the client's token.

Each event is compared with the client's resume token, field by field
(clusterTime, tokenType, txnOpIndex, fromInvalidate, uuid, eventIdentifier,
fragmentNum): older events are swallowed; the event equal to the token
("found") and everything after ("surpassed") pass on — the found event is
swallowed later by ensure-resume-token-present.  A scan that cannot reach the
start point (OplogQueryMinTsMissing) becomes ChangeStreamHistoryLost.
"""

from __future__ import annotations

from enum import Enum

from mongosim.oplog.clock import ts_key
from mongosim.oplog.errors import MongoError
from mongosim.oplog.resume_token import ResumeTokenData, decode_resume_token
from mongosim.shardsim.changestream.context import PAUSE, ChangeStreamContext, Stage
from mongosim.shardsim.query.values import compare


class ResumeStatus(Enum):
    CHECK_NEXT = "checkNextDoc"
    FOUND = "foundToken"
    SURPASSED = "surpassedToken"
    NEEDS_SPLIT = "needsSplit"


def _uuid_bytes(u) -> bytes | None:
    return bytes(u) if u is not None else None


def compare_against_client_token(event: ResumeTokenData, client: ResumeTokenData) -> ResumeStatus:
    """Where an event from the resumed stream stands relative to the client's token."""
    if event.cluster_time != client.cluster_time:
        return ResumeStatus.SURPASSED if event.cluster_time > client.cluster_time else ResumeStatus.CHECK_NEXT
    if event.token_type != client.token_type:
        return ResumeStatus.SURPASSED if event.token_type > client.token_type else ResumeStatus.CHECK_NEXT
    if event.txn_op_index != client.txn_op_index:
        return ResumeStatus.CHECK_NEXT if event.txn_op_index < client.txn_op_index else ResumeStatus.SURPASSED
    if event.from_invalidate != client.from_invalidate:
        return ResumeStatus.SURPASSED if event.from_invalidate else ResumeStatus.CHECK_NEXT
    eu, cu = _uuid_bytes(event.uuid), _uuid_bytes(client.uuid)
    if eu != cu:
        if eu is None:
            return ResumeStatus.CHECK_NEXT
        if cu is None:
            return ResumeStatus.SURPASSED
        return ResumeStatus.SURPASSED if eu > cu else ResumeStatus.CHECK_NEXT
    c = compare(event.event_identifier, client.event_identifier)
    if c == 0:
        if client.fragment_num is not None and event.fragment_num is None:
            return ResumeStatus.NEEDS_SPLIT
        if event.fragment_num == client.fragment_num:
            return ResumeStatus.FOUND
        return ResumeStatus.SURPASSED if (event.fragment_num or 0) > (client.fragment_num or 0) else ResumeStatus.CHECK_NEXT
    return ResumeStatus.SURPASSED if c > 0 else ResumeStatus.CHECK_NEXT


HISTORY_LOST = "Resume of change stream was not possible, as the resume point may no longer be in the oplog."


class CheckResumability(Stage):
    name = "$_internalChangeStreamCheckResumability"

    def __init__(self, source: Stage, ctx: ChangeStreamContext, client_token: ResumeTokenData) -> None:
        super().__init__(source, ctx)
        self.client_token = client_token
        self.client_key = ts_key(client_token.cluster_time)
        self.status = ResumeStatus.CHECK_NEXT

    def skippable(self) -> bool:
        return self.status is ResumeStatus.SURPASSED  # (before it, events are compared with the token)

    def _pull(self):
        try:
            return self.source.get_next()
        except MongoError as err:
            if err.code_name == "OplogQueryMinTsMissing":
                raise MongoError("ChangeStreamHistoryLost", HISTORY_LOST) from None
            raise

    def _compare(self, ev) -> ResumeStatus:
        """`compare_against_client_token` for `ev`; an event of a later clusterTime (the token's
        first field) surpasses the token without decoding the event's."""
        if ev.ts_key > self.client_key:
            return ResumeStatus.SURPASSED
        return compare_against_client_token(decode_resume_token(ev.token), self.client_token)

    def get_next(self):
        if self.status is ResumeStatus.SURPASSED:
            return self.source.get_next()
        while True:
            ev = self._pull()
            if ev is PAUSE:
                return ev
            self.status = self._compare(ev)
            if self.status is ResumeStatus.CHECK_NEXT:
                self.ctx.emit("swallowed", ts=ev.ts_key, token=ev.sort_key, reason="before the resume token")
                continue
            return ev


class EnsureResumeTokenPresent(CheckResumability):
    """$_internalChangeStreamEnsureResumeTokenPresent: the client's event token must be in the stream.

    Swallows every event up to and including the token; if the stream passes
    the token without having seen it, the stream fails with
    ChangeStreamFatalError (280).  Runs on the router for sharded streams and
    on the node for replica-set streams, as the last stage (the optimizer moves
    the user's stages and the split stage ahead of it); never for
    high-water-mark tokens.
    """

    name = "$_internalChangeStreamEnsureResumeTokenPresent"

    def __init__(self, source, ctx, client_token: ResumeTokenData) -> None:
        super().__init__(source, ctx, client_token)
        self.seen = False

    def get_next(self):
        if self.status is ResumeStatus.SURPASSED:
            return self.source.get_next()
        while True:
            ev = self._pull()
            if ev is PAUSE:
                return ev
            self.status = self._compare(ev)
            if self.status is ResumeStatus.CHECK_NEXT:
                continue
            if self.status is ResumeStatus.FOUND:
                self.seen = True
                self.ctx.emit("swallowed", ts=ev.ts_key, token=ev.sort_key, reason="the resume token itself")
                continue
            if self.status is ResumeStatus.NEEDS_SPLIT:
                continue  # a split event's fragments come from the split stage, which runs before this one
            if not self.seen:
                raise MongoError("ChangeStreamFatalError",
                                 f"cannot resume stream; the resume token was not found. {ev.token}")
            return ev
