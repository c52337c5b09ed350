"""$_internalChangeStreamEnsureResumeTokenPresent, on the router.

The shards hand over every event from the client's token on (check
resumability lets the token's own event through); here, in the merged stream,
events before the token and the token itself are swallowed, and passing the
token without having seen it is ChangeStreamFatalError (280) — the resume
point is not in the stream (e.g. the client's $match changed).  Tokens compare
as plain strings on `_data`.
"""

from __future__ import annotations

from mongosim.oplog.errors import MongoError


class EnsureResumeTokenPresent:
    def __init__(self, token: dict) -> None:
        self.token = token
        self.key = token["_data"]
        self.seen = False
        self.done = False

    def passes(self, key: str, tok: dict) -> bool:
        """False to swallow this event."""
        if self.done:
            return True
        if key < self.key:
            return False
        if key == self.key:
            self.seen = True
            return False
        if not self.seen:
            raise MongoError("ChangeStreamFatalError", f"cannot resume stream; the resume token was not found. {tok}")
        self.done = True
        return True
