"""Resuming from a resume token of an older version (v1, or v0) than the default v2.

An 8.0 server still resumes a stream from a v1 token (a 6.0 mongos, or a
client that kept an old token).  To find the token in the resumed stream, the
events around it must carry tokens of the client's version: the transform
(ChangeStreamEventTransformation::makeResumeToken) gives an event the client
token's version while the event is not past the token —

    version = default if clusterTime > client.clusterTime or txnOpIndex > client.txnOpIndex
              else client.version

— and the default version (2) after, so check-resumability and
ensure-resume-token-present compare like with like and every later event
carries a v2 token.  A high-water-mark token of another version is simply
replaced by the v2 high-water mark at its clusterTime (DocumentSourceChangeStream::
createFromBson): there is no event at it to find.  The stream's
postBatchResumeTokens are v2 high-water marks, as the stream's own version is
max(default, client token's version) = 2.
"""

from __future__ import annotations

from dataclasses import replace

from mongosim.oplog.resume_token import (
    DEFAULT_VERSION,
    ResumeTokenData,
    decode_resume_token,
    encode_resume_token,
    event_identifier,
    make_high_water_mark_token,
)
from mongosim.oplog.clock import ts_key
from mongosim.shardsim.changestream.spec import ChangeStreamSpec


def regenerate_high_water_mark(spec: ChangeStreamSpec) -> None:
    """A client's high-water-mark token of another version becomes the v2 one at its time (resumeAfter)."""
    token = spec.resume_token
    if token is None:
        return
    data = decode_resume_token(token)
    if data.token_type == 0 and data.version != DEFAULT_VERSION:
        spec.resume_after = make_high_water_mark_token(data.cluster_time)
        spec.start_after = None


class ClientTokenVersion:
    """Re-tokens the events not past an older-version client token in the client's version."""

    __slots__ = ("client", "key")

    def __init__(self, client: ResumeTokenData) -> None:
        self.client = client
        self.key = ts_key(client.cluster_time)

    @staticmethod
    def for_stream(client: ResumeTokenData | None) -> "ClientTokenVersion | None":
        if client is None or client.version >= DEFAULT_VERSION or client.token_type == 0:
            return None
        return ClientTokenVersion(client)

    def adopt(self, ev) -> None:
        """Give `ev` (a change-stream Event) a token of the client's version if it is not past the token."""
        if ev.ts_key > self.key:
            return
        data = decode_resume_token(ev.token)
        if data.txn_op_index > self.client.txn_op_index:
            return
        ident = data.event_identifier or {}
        op_type = ident.get("operationType", ev.op_type)
        old = replace(data, version=self.client.version, fragment_num=None,
                      event_identifier=event_identifier(op_type, ident.get("documentKey"),
                                                        ident.get("operationDescription"), self.client.version))
        token = encode_resume_token(old)
        ev.token = token
        ev.set_field("_id", token)
