"""Error labels the server adds to a failed change-stream command (src/mongo/db/error_labels.cpp)."""

from __future__ import annotations

from mongosim.oplog.errors import in_category


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
