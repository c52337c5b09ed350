"""Transactions through the router: participants, two-phase commit, error labels.

The router remembers, per session, the open transaction's number and its
participants (each shard it sent a command to, with `startTransaction: true`
and the transaction's readConcern on first contact).  `commitTransaction`:

- no participant, or one: the participant commits on its own (one applyOps);
- several that wrote: two-phase commit — `prepareTransaction` on each (each
  logs applyOps with `prepare: true` and returns its prepareTimestamp), then
  `commitTransaction` with `commitTimestamp = max(prepare timestamps)` on each.

Any error inside the transaction aborts it on every participant.  Errors get
the labels the server's ErrorLabelBuilder gives them (router/error_labels.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import trio
from mongosim.oplog.errors import MongoError
from mongosim.router.command_registry import router_command
from mongosim.router.error_labels import error_labels
from mongosim.router.request import Request
from mongosim.shardsim import api_parameters
from mongosim.shardsim.node import RESOLVED_VIEW, WOULD_CHANGE_OWNING_SHARD
from mongosim.shardsim.sessions import named_sessions, session_key, user_digest
from mongosim.shardsim.transactions import no_such_transaction

if TYPE_CHECKING:
    from mongosim.router.mongos import Router

WRITE_COMMANDS = {"insert", "update", "delete", "findAndModify", "findandmodify", "bulkWrite"}
TXN_FIELDS = ("lsid", "txnNumber", "autocommit")


def transaction_labels(err: MongoError, name: str, cmd: dict, *, is_mongos: bool = False) -> None:
    """Add the transaction and retryable-write labels the server would add (router/error_labels.py)."""
    for label in error_labels(name, cmd, err.code, is_mongos=is_mongos):
        err.add_label(label)


@dataclass
class RouterTxn:
    lsid: dict
    txn_number: int
    read_concern: Any = None
    participants: dict[str, bool] = field(default_factory=dict)  # shard -> wrote
    state: str = "in_progress"  # committed | aborted
    api_params: dict = field(default_factory=dict)  # its first command's (shardsim.api_parameters)
    recovery_shard: str | None = None  # the first participant that wrote (named by the recoveryToken)


class RouterTransactions:
    def __init__(self, router: Router) -> None:
        self.router = router
        self._txns: dict[bytes, RouterTxn] = {}

    def _get(self, req: Request) -> RouterTxn:
        lsid = req.cmd.get("lsid")
        txn_number = req.cmd.get("txnNumber")
        if lsid is None or txn_number is None:
            raise MongoError("InvalidOptions", "'autocommit' field requires a transaction number to also be specified")
        key = session_key(lsid)
        cur = self._txns.get(key)
        if req.cmd.get("startTransaction"):
            if cur is not None and cur.txn_number > txn_number:
                raise MongoError(225, f"Cannot start transaction {txn_number} on session because a newer "
                                      f"transaction {cur.txn_number} has already started.")
            if cur is None or cur.txn_number < txn_number:
                cur = self._txns[key] = RouterTxn(lsid, int(txn_number), self._read_concern(req.cmd.get("readConcern")),
                                                  api_params=api_parameters.params_of(req.cmd))
        if cur is None or cur.txn_number != txn_number:
            raise no_such_transaction(int(txn_number), aborted=False)
        return cur

    def begin(self, req: Request) -> None:
        """A statement with startTransaction starts the router's transaction as it arrives
        (TransactionRouter::beginOrContinueTxn), whether or not a shard is asked."""
        if req.cmd.get("startTransaction"):
            self._get(req)

    def check_api_parameters(self, req: Request) -> None:
        """A statement continuing the transaction (commit and abort included) gives the API parameters
        of its first one: APIMismatchError otherwise, and the transaction goes on."""
        lsid = req.cmd.get("lsid")
        cur = self._txns.get(session_key(lsid)) if isinstance(lsid, dict) else None
        if (cur is not None and not req.cmd.get("startTransaction") and cur.txn_number == req.cmd.get("txnNumber")
                and cur.state == "in_progress"):
            api_parameters.mismatch(req.name, req.cmd, cur.api_params)

    def _read_concern(self, rc: Any) -> Any:
        """The transaction's readConcern; for level snapshot, with the atClusterTime mongos picks
        (its latest cluster time), pinned on every shard now, so each participant joining later
        reads at that same time."""
        if not isinstance(rc, dict) or rc.get("level") != "snapshot":
            return rc
        return self.router.pin_snapshot_time(rc)

    async def run_in_transaction(self, req: Request, shard: str, db: str, cmd: dict) -> dict:
        txn = self._get(req)
        if txn.state == "aborted":
            raise no_such_transaction(txn.txn_number)
        out = {k: v for k, v in cmd.items() if k not in ("startTransaction", "readConcern")}
        out["lsid"] = txn.lsid
        out["txnNumber"] = txn.txn_number
        out["autocommit"] = False
        if shard not in txn.participants:
            out["startTransaction"] = True
            if txn.read_concern is not None:
                out["readConcern"] = txn.read_concern
            txn.participants[shard] = False
        if next(iter(cmd)) in WRITE_COMMANDS:
            txn.participants[shard] = True
            if txn.recovery_shard is None:
                txn.recovery_shard = shard
        try:
            return await self.router.shard(shard).command(db, out)
        except MongoError as err:
            if err.code == RESOLVED_VIEW:  # a view resolved for mongos: the transaction goes on
                if out.get("startTransaction"):  # (the shard dropped what it started: it starts again)
                    del txn.participants[shard]
                raise
            if err.code != WOULD_CHANGE_OWNING_SHARD:  # mongos moves the document within the transaction
                await self._abort_all(txn)
            raise

    def _cmd(self, txn: RouterTxn, name: str, **extra: Any) -> dict:
        return {name: 1, "lsid": txn.lsid, "txnNumber": txn.txn_number, "autocommit": False, **extra}

    async def _abort_all(self, txn: RouterTxn) -> None:
        txn.state = "aborted"
        for shard in txn.participants:
            try:
                await self.router.shard(shard).command("admin", self._cmd(txn, "abortTransaction", **{"$_idempotent": True}))
            except MongoError:
                pass

    def recovery_token(self, req: Request) -> dict | None:
        """The `recoveryToken` mongos adds to every reply in a transaction: the shard another router
        asks for the outcome when the commit is retried there (none for read-only transactions)."""
        lsid = req.cmd.get("lsid")
        txn = self._txns.get(session_key(lsid)) if isinstance(lsid, dict) else None
        if txn is None or txn.txn_number != req.cmd.get("txnNumber"):
            return None
        return {"recoveryShardId": txn.recovery_shard} if txn.recovery_shard is not None else {}

    def _unknown_here(self, req: Request) -> bool:
        txn = self._txns.get(session_key(req.cmd["lsid"])) if isinstance(req.cmd.get("lsid"), dict) else None
        return txn is None or txn.txn_number != req.cmd.get("txnNumber")

    async def _commit_with_recovery_token(self, req: Request) -> dict:
        """commitTransaction on a router that did not run the transaction (the driver retried the
        commit on another mongos): the recovery shard answers with the transaction's outcome."""
        token = req.cmd["recoveryToken"]
        shard = token.get("recoveryShardId") if isinstance(token, dict) else None
        if shard is None:
            raise MongoError("NoSuchTransaction", "Recovery token is empty, meaning the transaction only "
                                                  "performed reads and can be safely retried")
        cmd = {"coordinateCommitTransaction": 1, "participants": [], "lsid": req.cmd["lsid"],
               "txnNumber": req.cmd["txnNumber"]}
        return await self.router.shard(shard).command("admin", cmd)

    async def commit(self, req: Request) -> dict:
        if "recoveryToken" in req.cmd and self._unknown_here(req):
            await self._commit_with_recovery_token(req)
            return {"ok": 1.0}
        txn = self._get(req)
        if txn.state == "committed":
            return {"ok": 1.0}
        if txn.state == "aborted":
            raise no_such_transaction(txn.txn_number)
        shards = list(txn.participants)
        writers = [s for s, wrote in txn.participants.items() if wrote]
        wc = {"writeConcern": req.cmd["writeConcern"]} if "writeConcern" in req.cmd else {}  # the shards wait for it
        try:
            if len(writers) <= 1:
                # read-only participants first, then the one that wrote (single-shard commit)
                for s in sorted(shards, key=lambda s: txn.participants[s]):
                    await self.router.shard(s).command("admin", self._cmd(txn, "commitTransaction", **wc))
            else:
                prepared = await self._everywhere(shards, self._cmd(txn, "prepareTransaction"))
                commit_ts = max(r["prepareTimestamp"] for r in prepared)
                await self._everywhere(shards, self._cmd(txn, "commitTransaction", commitTimestamp=commit_ts, **wc))
        except MongoError:
            if txn.state != "committed":
                await self._abort_all(txn)
            raise
        txn.state = "committed"
        if shards:
            req.op_time_key = max(self.router.shard(s).node.oplog.last_key for s in shards)
        return {"ok": 1.0}

    async def _everywhere(self, shards: list[str], cmd: dict) -> list[dict]:
        """Send `cmd` to every participant concurrently, all with the same `$clusterTime`."""
        gossip = self.router.clock.key
        replies: dict[str, dict] = {}

        async def one(s: str) -> None:
            replies[s] = await self.router.shard(s).command("admin", dict(cmd), cluster_time=gossip, learn=False)

        try:
            async with trio.open_nursery() as nursery:
                for s in shards:
                    nursery.start_soon(one, s)
        except BaseExceptionGroup as eg:
            first = eg.exceptions[0]
            while isinstance(first, BaseExceptionGroup):
                first = first.exceptions[0]
            raise first
        finally:  # concurrent messages do not hear each other's replies: learn the times afterwards
            for s in shards:
                self.router.clock.advance(self.router.shard(s).node.clock.key)
        return [replies[s] for s in shards]

    async def abort(self, req: Request) -> dict:
        txn = self._get(req)
        if txn.state == "committed":
            raise MongoError("TransactionCommitted", f"Transaction with {{ txnNumber: {txn.txn_number} }} has been committed.")
        if not txn.participants:  # (the error a shard would give)
            raise MongoError("NoSuchTransaction", "no known command has been sent by this router for this transaction",
                             labels=["TransientTransactionError"])
        if txn.state == "aborted":  # already aborted after an error: the participants say so
            for shard in txn.participants:
                await self.router.shard(shard).command("admin", self._cmd(txn, "abortTransaction"))
        await self._abort_all(txn)
        return {"ok": 1.0}

    async def implicitly_abort(self, req: Request) -> None:
        """A statement of the transaction failed at the router (not on a shard, which aborts it
        there already): the transaction is aborted on every participant, as mongos's
        implicitlyAbortTransaction does after any error that reaches the client."""
        lsid = req.cmd.get("lsid")
        txn = self._txns.get(session_key(lsid)) if isinstance(lsid, dict) else None
        if txn is not None and txn.txn_number == req.cmd.get("txnNumber") and txn.state == "in_progress":
            await self._abort_all(txn)

    async def restart_after_stale(self, req: Request) -> bool:
        """A stale routing table met by a transaction's first statement, sent to one shard: the
        transaction is aborted there and started afresh, and the statement runs again (the server
        retries only then: with more participants, a retry could race with their requests)."""
        if not req.cmd.get("startTransaction"):
            return False
        key = session_key(req.cmd["lsid"])
        txn = self._txns.get(key)
        if txn is None or txn.txn_number != req.cmd.get("txnNumber") or len(txn.participants) > 1:
            return False
        await self._abort_all(txn)
        del self._txns[key]
        return True

    async def abort_quietly(self, req: Request) -> None:
        """Abort the session's transaction if it is still open (cleanup after a failure)."""
        txn = self._txns.get(session_key(req.cmd["lsid"]))
        if txn is not None and txn.state == "in_progress":
            await self._abort_all(txn)

    async def end_sessions(self, cmd: dict) -> None:
        """endSessions / killSessions / killAllSessions: the named sessions' transactions are aborted
        on every participant shard (killAllSessions: every session's, or those of the users it names).
        An ended session is forgotten; a killed one keeps its aborted transaction, so its next
        statement gets NoSuchTransaction ("has been aborted") as on the shards."""
        ended = next(iter(cmd)) == "endSessions"
        for key in named_sessions(cmd, self._txns, lambda txn: txn.lsid.get("uid") or user_digest()):
            txn = self._txns.pop(key) if ended else self._txns[key]
            if txn.state == "in_progress":
                await self._abort_all(txn)

    def label_error(self, err: MongoError, req: Request) -> None:
        transaction_labels(err, req.name, req.cmd, is_mongos=True)


@router_command("commitTransaction")
async def cmd_commit_transaction(router: Router, req: Request) -> dict:
    return await router.txns.commit(req)


@router_command("abortTransaction")
async def cmd_abort_transaction(router: Router, req: Request) -> dict:
    return await router.txns.abort(req)
