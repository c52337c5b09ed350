"""Transaction commands on a node: the session's transaction, commit, abort, prepare.

Drivers mark every command of a transaction with `lsid`, `txnNumber` and
`autocommit: false`; the first one also carries `startTransaction: true`.
`attach_transaction` finds (or starts) the session's transaction for such a
command.  `commitTransaction`/`abortTransaction` end it; the router sends
`prepareTransaction` and then `commitTransaction` with a `commitTimestamp` to
the participants of a multi-shard transaction (two-phase commit).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bson import Timestamp
from mongosim.oplog.clock import key_ts
from mongosim.oplog.errors import MongoError
from mongosim.shardsim import api_parameters
from mongosim.shardsim.command_registry import command
from mongosim.shardsim.operation_context import OpCtx
from mongosim.shardsim.sessions import end_open_transaction
from mongosim.shardsim.transaction_validation import validate_session_options
from mongosim.shardsim.transactions import Transaction, no_such_transaction

if TYPE_CHECKING:
    from mongosim.shardsim.node import Node

def attach_transaction(node: Node, ctx: OpCtx, name: str) -> None:
    cmd = ctx.cmd
    if ctx.lsid is None:
        raise MongoError("InvalidOptions", "'autocommit' field requires a transaction number to also be specified")
    if ctx.txn_number is None:
        raise MongoError("InvalidOptions", "'autocommit' field requires a transaction number to also be specified")
    validate_session_options(ctx.db, name, cmd, allow_config_database=ctx.from_router)
    state = node.sessions.state(ctx.lsid)
    if cmd.get("startTransaction"):
        if ctx.txn_number < state.txn_number:
            raise MongoError(225, f"Cannot start transaction {ctx.txn_number} on session because a newer transaction "
                                  f"{state.txn_number} has already started.")
        restart = ctx.from_router and state.txn is not None and state.txn.state == "aborted"
        if ctx.txn_number == state.txn_number and state.txn is not None and not restart:
            # (mongos may start an aborted, unprepared transaction again at its number: after a view
            # resolution that aborted what its first statement started)
            raise MongoError("ConflictingOperationInProgress",
                             f"Cannot start transaction {ctx.txn_number} on session because it has already started.")
        end_open_transaction(state)
        state.txn_number = ctx.txn_number
        state.executed = {}
        # readConcern snapshot: read at the cluster time mongos picked for every shard (or, on a
        # replica set, now); otherwise at this node's present, as local/majority do
        at = None
        if isinstance(cmd.get("readConcern"), dict) and cmd["readConcern"].get("level") == "snapshot":
            from mongosim.shardsim import snapshot_reads

            key = snapshot_reads.requested_time(cmd, max(node.clock.key, node.oplog.last_key))
            if key is not None:
                at = snapshot_reads.pin(node, key)
        state.txn = Transaction(node, ctx.lsid, ctx.txn_number, at_snapshot=at)
        state.txn.api_params = api_parameters.params_of(cmd)
    txn = state.txn
    if (not ctx.from_router and txn is not None and txn.txn_number == ctx.txn_number
            and txn.state in ("in_progress", "prepared")):  # (the session checked out: its stashed parameters)
        api_parameters.mismatch(name, cmd, txn.api_params)
    if txn is None or txn.txn_number != ctx.txn_number:
        raise no_such_transaction(ctx.txn_number, aborted=False)
    if txn.state == "aborted" and name != "abortTransaction":
        raise no_such_transaction(ctx.txn_number)
    if txn.state == "committed" and name not in ("commitTransaction", "abortTransaction"):
        raise MongoError("TransactionCommitted", f"Transaction with {{ txnNumber: {ctx.txn_number} }} has been committed.")
    ctx.txn = txn


@command("commitTransaction")
def cmd_commit(node: Node, ctx: OpCtx) -> dict:
    txn = ctx.txn
    if txn is None:
        raise MongoError("InvalidOptions", "commitTransaction must be run within a transaction")
    commit_ts = ctx.cmd.get("commitTimestamp")
    if commit_ts is not None:
        if not isinstance(commit_ts, Timestamp):
            raise MongoError("TypeMismatch", "commitTimestamp must be a timestamp")
        txn.commit_prepared(ctx, commit_ts)
    elif txn.state == "prepared":
        raise MongoError("InvalidOptions", "commitTimestamp must be provided to commit a prepared transaction")
    else:
        txn.commit(ctx)
    return {"ok": 1.0}


@command("abortTransaction")
def cmd_abort(node: Node, ctx: OpCtx) -> dict:
    txn = ctx.txn
    if txn is None:
        raise MongoError("InvalidOptions", "abortTransaction must be run within a transaction")
    if txn.state == "committed":
        raise MongoError("TransactionCommitted", f"Transaction with {{ txnNumber: {ctx.txn_number} }} has been committed.")
    if txn.state == "aborted" and not ctx.cmd.get("$_idempotent"):
        raise no_such_transaction(ctx.txn_number)
    txn.abort(ctx)
    return {"ok": 1.0}


@command("prepareTransaction")
def cmd_prepare(node: Node, ctx: OpCtx) -> dict:
    txn = ctx.txn
    if txn is None or not ctx.from_router:
        raise MongoError("InvalidOptions", "prepareTransaction is an internal command of the transaction coordinator")
    rs = node.replica_set
    if rs is not None and rs.arbiters:  # (a PSA set can keep accepting writes it cannot commit: 2PC would stall)
        raise MongoError("ReadConcernMajorityNotEnabled",
                         "'prepareTransaction' is not supported for replica sets with arbiters")
    key = txn.prepare(ctx)
    return {"prepareTimestamp": key_ts(key), "ok": 1.0}


@command("coordinateCommitTransaction")
async def cmd_coordinate_commit(node: Node, ctx: OpCtx) -> dict:
    """A router that did not run the transaction recovers its outcome here, the shard its
    recoveryToken names (the first participant that wrote).  mongosim's routers coordinate
    two-phase commits themselves, so a shard only answers recovery requests (an empty
    `participants` list), from its own participant as the server's does when it holds no
    coordinator: committed is committed; an open transaction is aborted; a prepared one is waited
    for; anything else is NoSuchTransaction."""
    if not ctx.from_router or ctx.lsid is None or ctx.txn_number is None:
        raise MongoError("InvalidOptions", "coordinateCommitTransaction is an internal command of mongos")
    if ctx.cmd.get("participants"):
        raise MongoError("InvalidOptions", "mongosim: two-phase commits are coordinated by the router; "
                                           "coordinateCommitTransaction only recovers a decision")
    state = node.sessions.state(ctx.lsid)

    def mine() -> Transaction | None:
        txn = state.txn
        return txn if txn is not None and txn.txn_number == ctx.txn_number else None

    txn = mine()
    if txn is not None and txn.state == "in_progress":
        txn.abort(ctx)
    await node.park_until(lambda: mine() is None or mine().state != "prepared", float("inf"))
    txn = mine()
    if txn is None or txn.state != "committed":
        raise MongoError("NoSuchTransaction", "Recovering the transaction's outcome found the transaction aborted")
    return {"ok": 1.0}
