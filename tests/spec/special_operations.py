"""Special test operations (`object: testRunner`): failpoints, entity creation, assertions.

`SPECIAL_OPERATIONS[name](ctx, args)` runs one; they return nothing and
either succeed or raise AssertionError.  Assertions on a session's state read
pymongo's session internals (`_transaction`, `_pinned_address`,
`_server_session`), for which pymongo has no public accessor.  Collection and
index existence are checked through the runner's internal client.
"""

from __future__ import annotations

from typing import Any, Callable

import pymongo
from bson.son import SON
from pymongo.client_session import ClientSession
try:  # pymongo >= 4.14 keeps the state enum in the shared module
    from pymongo.client_session_shared import _TxnState
except ImportError:  # pymongo 4.9 - 4.13 (the lowest `make test-lowest` runs)
    from pymongo.synchronous.client_session import _TxnState

from tests.spec.errors import UnsupportedByRunner

SPECIAL_OPERATIONS: dict[str, Callable[[Any, dict], None]] = {}


def special(name: str, *allowed: str) -> Callable:
    """Register a testRunner operation taking exactly the arguments `allowed`."""
    def register(fn: Callable) -> Callable:
        def checked(ctx: Any, args: dict) -> None:
            extra = set(args) - set(allowed)
            if extra:
                raise UnsupportedByRunner(f"unsupported {name} arguments {sorted(extra)}")
            missing = [a for a in allowed if a not in args and a not in _OPTIONAL.get(name, ())]
            if missing:
                raise UnsupportedByRunner(f"{name} needs {missing}")
            fn(ctx, args)
        SPECIAL_OPERATIONS[name] = checked
        return fn
    return register


# Arguments a special operation accepts without needing them.  failPoint's `session` is not in the
# format: two transactions files pass it; the command is sent without it, as other runners do.
_OPTIONAL = {"failPoint": ("session",)}


@special("failPoint", "client", "failPoint", "session")
def fail_point(ctx, args: dict) -> None:
    """configureFailPoint through the client entity (primary); the runner turns it off after the test."""
    client = ctx.entities.get(args["client"], pymongo.MongoClient)
    command = SON(args["failPoint"])
    client.admin.command(command, read_preference=pymongo.ReadPreference.PRIMARY)
    ctx.failpoints.append((None, command["configureFailPoint"]))


@special("targetedFailPoint", "session", "failPoint")
def targeted_fail_point(ctx, args: dict) -> None:
    """configureFailPoint on the mongos the session is pinned to (an error if it is not pinned)."""
    session = ctx.entities.get(args["session"], ClientSession)
    address = session._pinned_address
    if address is None:
        raise UnsupportedByRunner(f"targetedFailPoint: session {args['session']} is not pinned to a mongos")
    command = SON(args["failPoint"])
    ctx.runner.client_for(address).admin.command(command)
    ctx.failpoints.append((address, command["configureFailPoint"]))


@special("createEntities", "entities")
def create_entities(ctx, args: dict) -> None:
    ctx.create_entities(args["entities"])


# The format's transaction states and pymongo's (an empty committed transaction is committed).
_STATES = {"none": (_TxnState.NONE,), "starting": (_TxnState.STARTING,), "in_progress": (_TxnState.IN_PROGRESS,),
           "committed": (_TxnState.COMMITTED, _TxnState.COMMITTED_EMPTY), "aborted": (_TxnState.ABORTED,)}


@special("assertSessionTransactionState", "session", "state")
def assert_session_transaction_state(ctx, args: dict) -> None:
    session = ctx.entities.get(args["session"], ClientSession)
    if args["state"] not in _STATES:
        raise UnsupportedByRunner(f"unknown transaction state {args['state']!r}")
    if session._transaction.state not in _STATES[args["state"]]:
        raise AssertionError(f"session {args['session']} is in transaction state {session._transaction.state}, "
                             f"expected {args['state']}")


@special("assertSessionPinned", "session")
def assert_session_pinned(ctx, args: dict) -> None:
    session = ctx.entities.get(args["session"], ClientSession)
    if session._transaction.pinned_address is None:
        raise AssertionError(f"session {args['session']} is not pinned to a mongos")


@special("assertSessionUnpinned", "session")
def assert_session_unpinned(ctx, args: dict) -> None:
    session = ctx.entities.get(args["session"], ClientSession)
    if session._pinned_address is not None or session._transaction.pinned_address is not None:
        raise AssertionError(f"session {args['session']} is pinned to {session._pinned_address}")


def _last_two_lsids(ctx, client_name: str) -> tuple[Any, Any]:
    ctx.entities.get(client_name, pymongo.MongoClient)
    started = [e for e in ctx.entities.recorders[client_name].events if e.name == "commandStartedEvent"]
    if len(started) < 2:
        raise AssertionError(f"client {client_name}: {len(started)} commandStartedEvents, need two")
    last, before = started[-1].fields["command"], started[-2].fields["command"]
    if "lsid" not in last or "lsid" not in before:
        raise AssertionError(f"client {client_name}: the last two commands do not both have an lsid")
    return before["lsid"], last["lsid"]


@special("assertSameLsidOnLastTwoCommands", "client")
def assert_same_lsid(ctx, args: dict) -> None:
    a, b = _last_two_lsids(ctx, args["client"])
    if a != b:
        raise AssertionError(f"the last two commands have different lsids: {a} and {b}")


@special("assertDifferentLsidOnLastTwoCommands", "client")
def assert_different_lsid(ctx, args: dict) -> None:
    a, b = _last_two_lsids(ctx, args["client"])
    if a == b:
        raise AssertionError(f"the last two commands have the same lsid {a}")


@special("assertSessionDirty", "session")
def assert_session_dirty(ctx, args: dict) -> None:
    session = ctx.entities.get(args["session"], ClientSession)
    if not session._server_session.dirty:
        raise AssertionError(f"session {args['session']} is not dirty")


@special("assertSessionNotDirty", "session")
def assert_session_not_dirty(ctx, args: dict) -> None:
    session = ctx.entities.get(args["session"], ClientSession)
    if session._server_session.dirty:
        raise AssertionError(f"session {args['session']} is dirty")


def _collection_names(ctx, args: dict) -> list[str]:
    return ctx.runner.internal[args["databaseName"]].list_collection_names()


@special("assertCollectionExists", "databaseName", "collectionName")
def assert_collection_exists(ctx, args: dict) -> None:
    names = _collection_names(ctx, args)
    if args["collectionName"] not in names:
        raise AssertionError(f"collection {args['databaseName']}.{args['collectionName']} does not exist: {names}")


@special("assertCollectionNotExists", "databaseName", "collectionName")
def assert_collection_not_exists(ctx, args: dict) -> None:
    if args["collectionName"] in _collection_names(ctx, args):
        raise AssertionError(f"collection {args['databaseName']}.{args['collectionName']} exists")


def _index_names(ctx, args: dict) -> list[str]:
    coll = ctx.runner.internal[args["databaseName"]][args["collectionName"]]
    return [ix["name"] for ix in coll.list_indexes()]


@special("assertIndexExists", "databaseName", "collectionName", "indexName")
def assert_index_exists(ctx, args: dict) -> None:
    names = _index_names(ctx, args)
    if args["indexName"] not in names:
        raise AssertionError(f"index {args['indexName']} does not exist: {names}")


@special("assertIndexNotExists", "databaseName", "collectionName", "indexName")
def assert_index_not_exists(ctx, args: dict) -> None:
    if args["indexName"] in _index_names(ctx, args):
        raise AssertionError(f"index {args['indexName']} exists")


@special("assertNumberConnectionsCheckedOut", "client", "connections")
def assert_number_connections_checked_out(ctx, args: dict) -> None:
    """Counted from the client's CMAP events (checked out minus checked in)."""
    ctx.entities.get(args["client"], pymongo.MongoClient)
    n = ctx.entities.recorders[args["client"]].checked_out
    if n != args["connections"]:
        raise AssertionError(f"client {args['client']}: {n} connections checked out, expected {args['connections']}")
