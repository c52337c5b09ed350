"""Model objects as documents (unified test format, "Converting Returned Model Objects to Documents").

pymongo's result objects become the CRUD specification's result documents
(InsertOneResult, InsertManyResult, UpdateResult, DeleteResult,
BulkWriteResult, ClientBulkWriteResult); an unacknowledged result is
`{acknowledged: false}`.  The partial result carried by a bulk write
exception (`BulkWriteError.details`, `ClientBulkWriteException.partial_result`)
converts the same way.  Keys of index maps (insertedIds, upsertedIds,
insertResults, ...) are strings, as in the test files.
"""

from __future__ import annotations

from typing import Any

from pymongo.errors import BulkWriteError, ClientBulkWriteException, NotPrimaryError, OperationFailure
from pymongo.results import (BulkWriteResult, ClientBulkWriteResult, DeleteResult, InsertManyResult,
                             InsertOneResult, UpdateResult)


def _update(matched: int, modified: int, upserted_id: Any, *, with_count: bool = True) -> dict:
    """An UpdateResult; a client bulk write's per-operation result has no upsertedCount (CRUD spec)."""
    doc = {"matchedCount": matched, "modifiedCount": modified}
    if with_count:
        doc["upsertedCount"] = 0 if upserted_id is None else 1
    if upserted_id is not None:
        doc["upsertedId"] = upserted_id
    return doc


def result_to_document(result: Any) -> Any:
    if isinstance(result, (InsertOneResult, InsertManyResult, UpdateResult, DeleteResult, BulkWriteResult,
                           ClientBulkWriteResult)) and not result.acknowledged:
        return {"acknowledged": False}
    if isinstance(result, InsertOneResult):
        return {"insertedId": result.inserted_id}
    if isinstance(result, InsertManyResult):
        return {"insertedIds": {str(i): v for i, v in enumerate(result.inserted_ids)}}
    if isinstance(result, UpdateResult):
        return _update(result.matched_count, result.modified_count, result.upserted_id)
    if isinstance(result, DeleteResult):
        return {"deletedCount": result.deleted_count}
    if isinstance(result, BulkWriteResult):
        return bulk_api_result(result.bulk_api_result)
    if isinstance(result, ClientBulkWriteResult):
        return client_bulk_write_result(result)
    return result


def bulk_api_result(raw: dict) -> dict:
    """BulkWriteResult from pymongo's bulk API result (also the details of a BulkWriteError)."""
    return {"deletedCount": raw.get("nRemoved", 0), "insertedCount": raw.get("nInserted", 0),
            "matchedCount": raw.get("nMatched", 0), "modifiedCount": raw.get("nModified", 0),
            "upsertedCount": raw.get("nUpserted", 0),
            "upsertedIds": {str(u["index"]): u["_id"] for u in raw.get("upserted", [])}}


def client_bulk_write_result(result: ClientBulkWriteResult) -> dict:
    doc: dict = {"insertedCount": result.inserted_count, "upsertedCount": result.upserted_count,
                 "matchedCount": result.matched_count, "modifiedCount": result.modified_count,
                 "deletedCount": result.deleted_count}
    if result.has_verbose_results:
        doc["insertResults"] = {str(i): {"insertedId": r.inserted_id} for i, r in result.insert_results.items()}
        doc["updateResults"] = {str(i): _update(r.matched_count, r.modified_count, r.upserted_id, with_count=False)
                                for i, r in result.update_results.items()}
        doc["deleteResults"] = {str(i): {"deletedCount": r.deleted_count} for i, r in result.delete_results.items()}
    return doc


def partial_result(exc: BaseException) -> Any:
    """The write result an error carries (bulk writes only), or None."""
    if isinstance(exc, ClientBulkWriteException):
        partial = exc.partial_result
        return None if partial is None else client_bulk_write_result(partial)
    if isinstance(exc, BulkWriteError):
        return bulk_api_result(exc.details)
    return None


def top_level_error(exc: BaseException) -> BaseException:
    """The error behind a client bulk write exception (its `error`), else the exception itself."""
    if isinstance(exc, ClientBulkWriteException) and isinstance(exc.error, BaseException):
        return exc.error
    return exc


def server_reply(exc: BaseException) -> dict | None:
    """The server's error document behind an exception, or None for a client-side error."""
    if isinstance(exc, ClientBulkWriteException):
        error = exc.error
        return server_reply(error) if isinstance(error, BaseException) else None
    if isinstance(exc, (OperationFailure, NotPrimaryError)) and isinstance(getattr(exc, "details", None), dict):
        return exc.details
    return None


def describe_error(exc: BaseException) -> str:
    """One line: the error's class, the server's code / codeName / labels and message."""
    reply = server_reply(exc)
    if reply is None:
        return f"{type(exc).__name__}: {exc}"
    labels = reply.get("errorLabels")
    return (f"{type(exc).__name__} {reply.get('code')} {reply.get('codeName')}"
            f"{' ' + str(labels) if labels else ''}: {reply.get('errmsg', exc)}")
