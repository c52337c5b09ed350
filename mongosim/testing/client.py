"""An in-process, trio-native client: commands straight to a front door, no sockets.

Used where pymongo cannot go: inside `trio.run` on a `MockClock` (virtual
time), for deterministic property tests and demos.  Commands go through the
same path a wire request takes (`router.server._answer`: gossip, failpoints,
error replies and labels, `$clusterTime` decoration), only without encoding.

`AsyncChangeStream` implements the driver specification's change-stream
rules: the cached resume token (the PBRT for empty batches and after the last
document of a batch, otherwise the document's `_id`), and resuming once per
error when the error is resumable (network error, CursorNotFound, or the
`ResumableChangeStreamError` label) with `resumeAfter`/`startAfter`/
`startAtOperationTime` as the spec says.
"""

from __future__ import annotations

import itertools
from typing import Any

from bson import Timestamp

from mongosim.oplog import bsonutil
from mongosim.router.failpoints import CloseConnection
from mongosim.router.server import ConnState, _answer, run_after_reply

_ids = itertools.count(1_000_000)


class CommandError(Exception):
    def __init__(self, reply: dict) -> None:
        self.reply = reply
        self.code = reply.get("code")
        self.code_name = reply.get("codeName")
        self.labels = list(reply.get("errorLabels", []))
        super().__init__(f"{reply.get('codeName')} ({reply.get('code')}): {reply.get('errmsg')}")

    def has_label(self, label: str) -> bool:
        return label in self.labels


def absorb_reply(holder: Any, reply: dict, check: bool) -> dict:
    """Keep the reply's `$clusterTime`/`operationTime` on `holder` (its gossip for the next
    command); with `check`, a failed command or a write error raises CommandError."""
    if "$clusterTime" in reply:
        holder.cluster_time = reply["$clusterTime"]
    if "operationTime" in reply:
        holder.operation_time = reply["operationTime"]
    if check and not reply.get("ok"):
        raise CommandError(reply)
    if check and reply.get("writeErrors"):
        raise CommandError({**reply["writeErrors"][0], "ok": 0})
    return reply


def _plain(v: Any) -> Any:
    return bsonutil.plain(v)


class AsyncClient:
    """A client bound to a front door (the Router, or a replica-set front door)."""

    def __init__(self, service: Any, *, app_name: str | None = None) -> None:
        self.service = service
        self.conn = ConnState(next(_ids), "in-process", True, client={"application": {"name": app_name}} if app_name else None)
        self.cluster_time: dict | None = None
        self.operation_time: Timestamp | None = None

    async def command(self, db: str, cmd: dict, *, check: bool = True) -> dict:
        cmd = dict(cmd)
        if self.cluster_time is not None:
            cmd["$clusterTime"] = self.cluster_time
        try:
            reply = await _answer(self.service, db, cmd, self.conn)
        except CloseConnection:  # the server closed the connection: a network error, as a driver sees it
            reply = {"ok": 0.0, "errmsg": "connection closed by the server", "code": 6, "codeName": "HostUnreachable"}
        if self.conn.after_reply:
            run_after_reply(self.conn)
        return absorb_reply(self, reply, check)

    # -- conveniences -----------------------------------------------------------------
    async def insert(self, db: str, coll: str, docs: list[dict], **kw: Any) -> dict:
        return await self.command(db, {"insert": coll, "documents": docs, **kw})

    async def update(self, db: str, coll: str, q: dict, u: Any, *, multi: bool = False, upsert: bool = False) -> dict:
        return await self.command(db, {"update": coll, "updates": [{"q": q, "u": u, "multi": multi, "upsert": upsert}]})

    async def delete(self, db: str, coll: str, q: dict, *, limit: int = 0) -> dict:
        return await self.command(db, {"delete": coll, "deletes": [{"q": q, "limit": limit}]})

    async def find(self, db: str, coll: str, flt: dict | None = None, **kw: Any) -> list[dict]:
        reply = await self.command(db, {"find": coll, "filter": flt or {}, **kw})
        out = [_plain(d) for d in reply["cursor"]["firstBatch"]]
        cid = reply["cursor"]["id"]
        while cid:
            more = await self.command(db, {"getMore": cid, "collection": coll})
            out.extend(_plain(d) for d in more["cursor"]["nextBatch"])
            cid = more["cursor"]["id"]
        return out

    async def admin(self, cmd: dict) -> dict:
        return await self.command("admin", cmd)

    def watch(self, db: str = "admin", coll: str | int | None = None, pipeline: list | None = None,
              **options: Any) -> "AsyncChangeStream":
        """A change stream: a collection (`coll` a name), a database (`coll=1`), or the cluster (`db="admin"`)."""
        return AsyncChangeStream(self, db, coll if coll is not None else 1, pipeline or [], options)


RESUMABLE_CODES_NETWORK = {6, 7, 89, 9001}
# The retryable-reads specification's retryable codes (the initial aggregate is retried once).
RETRYABLE_READ_CODES = {6, 7, 89, 91, 134, 189, 262, 9001, 10107, 11600, 11602, 13435, 13436}


def is_resumable(err: CommandError) -> bool:
    """The change-streams spec: CursorNotFound, or the ResumableChangeStreamError label (wire >= 9)."""
    return err.code == 43 or err.has_label("ResumableChangeStreamError")


class AsyncChangeStream:
    def __init__(self, client: AsyncClient, db: str, target: Any, pipeline: list, options: dict) -> None:
        self.client = client
        self.db = db
        self.target = target
        self.pipeline = pipeline
        self.batch_size = options.pop("batch_size", None)
        self.max_await_ms = options.pop("max_await_time_ms", None)
        self.options = dict(options)
        if db == "admin" and target == 1:
            self.options.setdefault("allChangesForCluster", True)
        self.cursor_id = 0
        self.ns_coll = ""
        self.buffer: list[dict] = []
        self.resume_token: dict | None = None
        self.post_batch_resume_token: dict | None = None
        self.initial_operation_time: Timestamp | None = None
        self.closed = False
        self.resumes = 0
        self.events_seen = 0

    async def __aenter__(self) -> "AsyncChangeStream":
        await self.open()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    def _aggregate_cmd(self) -> dict:
        spec = dict(self.options)
        if self.resume_token is not None:
            for k in ("resumeAfter", "startAfter", "startAtOperationTime"):
                spec.pop(k, None)
            if "startAfter" in self.options and self.events_seen == 0:
                spec["startAfter"] = self.resume_token
            else:
                spec["resumeAfter"] = self.resume_token
        elif self.initial_operation_time is not None and not any(k in self.options for k in ("resumeAfter", "startAfter")):
            spec.pop("startAtOperationTime", None)
            spec["startAtOperationTime"] = self.initial_operation_time
        cursor: dict = {}
        if self.batch_size is not None:
            cursor["batchSize"] = self.batch_size
        return {"aggregate": self.target, "pipeline": [{"$changeStream": spec}, *self.pipeline], "cursor": cursor}

    async def open(self) -> None:
        try:
            reply = await self.client.command(self.db, self._aggregate_cmd())
        except CommandError as err:
            if err.code not in RETRYABLE_READ_CODES:
                raise
            reply = await self.client.command(self.db, self._aggregate_cmd())  # retryable reads: once
        if self.initial_operation_time is None:
            self.initial_operation_time = reply.get("operationTime")
        self._take(reply["cursor"], "firstBatch")

    def _take(self, cur: dict, field: str) -> None:
        self.cursor_id = int(cur["id"])
        self.ns_coll = cur["ns"].split(".", 1)[1]
        self.buffer = [_plain(d) for d in cur[field]]
        self.post_batch_resume_token = cur.get("postBatchResumeToken")
        if not self.buffer and self.post_batch_resume_token is not None:
            self.resume_token = self.post_batch_resume_token

    async def _get_more(self) -> None:
        cmd: dict = {"getMore": self.cursor_id, "collection": self.ns_coll}
        if self.batch_size is not None:
            cmd["batchSize"] = self.batch_size
        if self.max_await_ms is not None:
            cmd["maxTimeMS"] = self.max_await_ms
        reply = await self.client.command(self.db, cmd)
        self._take(reply["cursor"], "nextBatch")

    async def try_next(self) -> dict | None:
        """One event if one is buffered or arrives in one getMore, else None."""
        if self.closed:
            raise RuntimeError("change stream closed")
        if not self.buffer:
            if self.cursor_id == 0:
                self.closed = True
                return None
            try:
                await self._get_more()
            except CommandError as err:
                if not is_resumable(err):
                    self.closed = True
                    raise
                await self._resume()
                return None
        if not self.buffer:
            return None
        doc = self.buffer.pop(0)
        if "_id" not in doc:
            self.closed = True
            raise RuntimeError("Cannot provide resume functionality when the resume token is missing.")
        self.events_seen += 1
        if not self.buffer and self.post_batch_resume_token is not None:
            self.resume_token = self.post_batch_resume_token
        else:
            self.resume_token = doc["_id"]
        return doc

    async def next(self) -> dict:
        while True:
            doc = await self.try_next()
            if doc is not None:
                return doc
            if self.closed:
                raise StopAsyncIteration

    async def _resume(self) -> None:
        self.resumes += 1
        try:
            await self.client.command(self.db, {"killCursors": self.ns_coll, "cursors": [self.cursor_id]}, check=False)
        finally:
            self.cursor_id = 0
            await self.open()

    async def close(self) -> None:
        if self.cursor_id and not self.closed:
            await self.client.command(self.db, {"killCursors": self.ns_coll, "cursors": [self.cursor_id]}, check=False)
        self.closed = True
