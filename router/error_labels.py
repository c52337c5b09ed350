"""Error labels the server adds to a reply (src/mongo/db/error_labels.cpp, ErrorLabelBuilder).

The labels follow from the command, its session fields and the codes of the
reply: `code` (the command failed) and `wc_code` (its write concern failed).

- TransientTransactionError: a statement of a transaction (txnNumber and
  autocommit present) failed with a code that leaves no trace, so the whole
  transaction may be retried (`is_transient_transaction_error`);
- RetryableWriteError (only if not transient): a retryable write (txnNumber
  without autocommit), or commitTransaction/abortTransaction, failed or met a
  write concern error with a RetriableError code.  A mongos never adds it: the
  errors it passes on come from shards, which do not label replies to it;
- ResumableChangeStreamError / NonResumableChangeStreamError for change
  streams (`change_stream_labels`).

The server never adds UnknownTransactionCommitResult: the drivers do, from
the error they see (the transactions specification).  A failCommand failpoint
that names `errorLabels` replaces all of these (the router applies it).
"""

from __future__ import annotations

from mongosim.oplog.error_codes import CODES
from mongosim.oplog.errors import in_category

COMMIT_OR_ABORT = frozenset({
    "abortTransaction", "clusterAbortTransaction", "clusterCommitTransaction", "commitTransaction",
    "coordinateCommitTransaction",
})

# transient whatever the command (isTransientTransactionError's first switch)
_ALWAYS_TRANSIENT = frozenset({
    CODES["WriteConflict"], CODES["LockTimeout"], CODES["PreparedTransactionInProgress"],
    CODES["ShardCannotRefreshDueToLocksHeld"], CODES["StaleDbVersion"],
})
_NO_SUCH_TRANSACTION = CODES["NoSuchTransaction"]
_INTERNAL_TRANSACTION_NOT_SUPPORTED = CODES["InternalTransactionNotSupported"]


def is_transient_transaction_error(code: int, has_write_concern_error: bool, commit_or_abort: bool) -> bool:
    """Whether a transaction that failed with `code` may be retried from its start.

    NoSuchTransaction on commit/abort only without a write concern error (with one, the
    transaction may have committed and been rolled back: not safe to run again)."""
    if code == _INTERNAL_TRANSACTION_NOT_SUPPORTED:
        return False  # a retryable write error, not a transaction one
    if code in _ALWAYS_TRANSIENT or in_category(code, "SnapshotError") or in_category(code, "NeedRetargettingError"):
        return True
    if commit_or_abort:
        return code == _NO_SUCH_TRANSACTION and not has_write_concern_error
    return in_category(code, "RetriableError") or code == _NO_SUCH_TRANSACTION


def error_labels(name: str, cmd: dict, code: int | None, wc_code: int | None = None, *,
                 is_mongos: bool = False) -> list[str]:
    """The transaction and retryable-write labels of a reply (ErrorLabelBuilder::build)."""
    has_txn_number = cmd.get("txnNumber") is not None
    in_txn = has_txn_number and "autocommit" in cmd
    commit_or_abort = name in COMMIT_OR_ABORT
    if code is not None and in_txn and is_transient_transaction_error(code, wc_code is not None, commit_or_abort):
        return ["TransientTransactionError"]
    retryable_write = has_txn_number and "autocommit" not in cmd
    if is_mongos or not (retryable_write or (in_txn and commit_or_abort)):
        return []
    if (code is not None and in_category(code, "RetriableError")) or \
            (wc_code is not None and in_category(wc_code, "RetriableError")):
        return ["RetryableWriteError"]
    return []


def label_write_concern_error(reply: dict, name: str, cmd: dict) -> None:
    """A mongod's labels for a successful reply carrying a writeConcernError (its own, or the
    failCommand failpoint's when the failpoint names no errorLabels)."""
    wce = reply.get("writeConcernError")
    if not isinstance(wce, dict) or not reply.get("ok") or "errorLabels" in reply:
        return
    wc_code = wce.get("code")
    if not isinstance(wc_code, int) or isinstance(wc_code, bool):
        return
    labels = error_labels(name, cmd, None, wc_code)
    if labels:
        reply["errorLabels"] = labels


def change_stream_labels(code: int, *, resumable_candidate: bool = True) -> list[str]:
    """Labels the server puts on a failed change-stream aggregate/getMore (error_labels.cpp).

    `resumable_candidate` False: the server could not tell the command is a change stream
    (a getMore failed by failCommand before its cursor was checked out has no originating
    command), so no ResumableChangeStreamError."""
    labels = []
    if resumable_candidate and (
        in_category(code, "RetriableError")
        or in_category(code, "NetworkError")
        or in_category(code, "NeedRetargettingError")
        or code in (234, 133)  # RetryChangeStream, FailedToSatisfyReadPreference
    ):
        labels.append("ResumableChangeStreamError")
    if in_category(code, "NonResumableChangeStreamError"):
        labels.append("NonResumableChangeStreamError")
    return labels
