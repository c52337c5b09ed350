"""What a multi-document transaction may run (the server's validateSessionOptions and
CommandHelpers::canUseTransactions, src/mongo/db/transaction_validation.cpp and commands.cpp).

A command carrying `autocommit` is a statement of a transaction.  Before it
runs — before any failpoint, before the transaction is started or continued —
both a mongod and a mongos check that the command may run in one:

- `count` never (its own message points at countDocuments' aggregate);
- only the commands whose `allowedInTransactions()` is true: CRUD, find,
  aggregate, distinct, getMore, killCursors (not as the first statement),
  create and createIndexes, the transaction commands;
- not on the `local` database, not on `<db>.system.profile`, and not on the
  `config` database (a shard may: mongos runs internal transactions there).

Each refusal is OperationNotSupportedInTransaction (263), with no label: the
transaction, not yet touched by the statement, stays as it was.
"""

from __future__ import annotations

from mongosim.oplog.errors import MongoError

ALLOWED_IN_TRANSACTIONS = frozenset({
    "abortTransaction", "aggregate", "bulkWrite", "commitTransaction", "coordinateCommitTransaction", "create",
    "createIndexes", "delete", "distinct", "find", "findAndModify", "findandmodify", "getMore", "insert",
    "killCursors", "prepareTransaction", "update",
})

_COUNT_MESSAGE = ("Cannot run 'count' in a multi-document transaction. Please see "
                  "http://dochub.mongodb.org/core/transaction-count for a recommended alternative.")


def _not_supported(msg: str) -> MongoError:
    return MongoError("OperationNotSupportedInTransaction", msg)


def validate_session_options(db: str, name: str, cmd: dict, *, allow_config_database: bool = False) -> None:
    """Refuse a transaction statement the server refuses (nothing to do outside transactions)."""
    if "autocommit" not in cmd:
        return
    if name == "count":
        raise _not_supported(_COUNT_MESSAGE)
    if name not in ALLOWED_IN_TRANSACTIONS:
        raise _not_supported(f"Cannot run '{name}' in a multi-document transaction.")
    if db == "local":
        raise _not_supported(f"Cannot run command against the '{db}' database in a transaction.")
    target = cmd.get(name)
    if isinstance(target, str) and target == "system.profile":
        raise _not_supported(f"Cannot run command against the '{db}.{target}' collection in a transaction.")
    if db == "config" and not allow_config_database:
        raise _not_supported("Cannot run command against the config database in a transaction.")
    if name == "killCursors" and cmd.get("startTransaction"):
        raise _not_supported("Cannot run killCursors as the first operation in a multi-document transaction.")
