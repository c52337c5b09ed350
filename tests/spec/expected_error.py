"""The expectError assertion (unified test format, "expectedError").

The error of an operation is checked field by field:

- `isClientError`: the error does not come from a server reply (network
  errors, client-side validation);
- `errorCode`, `errorCodeName`, `errorContains`: the server's code, codeName,
  message.  For a collection bulk write (BulkWriteError), which aggregates
  write errors and write concern errors, any of those matching satisfies the
  assertion; a write error without a codeName is compared through the code
  its expected name stands for (error_codes.yml).  For a client bulk write
  (ClientBulkWriteException) these fields look at its top-level `error` only;
- `errorLabelsContain` / `errorLabelsOmit`: the error's labels;
- `errorResponse`: the server reply, as a root-level document;
- `expectResult`: the partial write result the error carries;
- `writeErrors` / `writeConcernErrors`: a client bulk write's individual
  errors, by index / in order, each a root-level document, nothing extra.
"""

from __future__ import annotations

from typing import Any

from pymongo.errors import BulkWriteError, ClientBulkWriteException, PyMongoError

from mongosim.oplog.error_codes import CODES
from tests.spec.errors import UnsupportedByRunner
from tests.spec.matching import Matcher
from tests.spec.results import describe_error, partial_result, server_reply, top_level_error


def _bulk_errors(exc: BaseException) -> list[dict]:
    """The write errors and write concern errors a collection bulk write aggregates."""
    if isinstance(exc, BulkWriteError):
        return list(exc.details.get("writeErrors", [])) + list(exc.details.get("writeConcernErrors", []))
    return []


def _message(exc: BaseException) -> str:
    if isinstance(exc, BulkWriteError):
        return str(exc.details)
    if isinstance(exc, ClientBulkWriteException):
        error = exc.error
        return str(error) if error is not None else str(exc.details)
    return str(exc)


def check_error(matcher: Matcher, expected: dict, exc: PyMongoError, where: str) -> None:
    reply = server_reply(exc)
    top = top_level_error(exc)
    ctx = f"{where}: error {describe_error(exc)}"
    aggregated = _bulk_errors(exc)
    for key, value in expected.items():
        if key == "isError":
            continue
        if key == "isClientError":
            client_side = reply is None and not aggregated and not (
                isinstance(exc, ClientBulkWriteException) and exc.error is None)
            if value != client_side:
                raise AssertionError(f"{ctx}: expected isClientError={value}")
        elif key == "isTimeoutError":
            if value != bool(getattr(top, "timeout", False)):
                raise AssertionError(f"{ctx}: expected isTimeoutError={value}")
        elif key == "errorContains":
            if value.lower() not in _message(exc).lower():
                raise AssertionError(f"{ctx}: message does not contain {value!r}")
        elif key == "errorCode":
            codes = [reply.get("code")] if reply is not None else []
            codes += [e.get("code") for e in aggregated]
            if value not in codes:
                raise AssertionError(f"{ctx}: expected code {value}")
        elif key == "errorCodeName":
            names = [str(reply.get("codeName", "")).lower()] if reply is not None else []
            names += [str(e.get("codeName", "")).lower() for e in aggregated]
            by_code = CODES.get(value) in [e.get("code") for e in aggregated if "codeName" not in e]
            if value.lower() not in names and not by_code:
                raise AssertionError(f"{ctx}: expected codeName {value}")
        elif key == "errorLabelsContain":
            missing = [lbl for lbl in value if not top.has_error_label(lbl)]
            if missing:
                raise AssertionError(f"{ctx}: missing error labels {missing}")
        elif key == "errorLabelsOmit":
            present = [lbl for lbl in value if top.has_error_label(lbl)]
            if present:
                raise AssertionError(f"{ctx}: unexpected error labels {present}")
        elif key == "errorResponse":
            if reply is None:
                raise AssertionError(f"{ctx}: expected a server response")
            matcher.match(value, reply, root=True)
        elif key == "expectResult":
            result = partial_result(exc)
            try:
                matcher.match(value, result, root=True)
            except AssertionError as e:
                raise AssertionError(f"{ctx}: partial result {result!r} does not match: {e}") from None
        elif key == "writeErrors":
            _check_write_errors(matcher, value, exc, ctx)
        elif key == "writeConcernErrors":
            _check_write_concern_errors(matcher, value, exc, ctx)
        else:
            raise UnsupportedByRunner(f"unsupported expectError field {key!r}")


def _error_model(doc: dict) -> dict:
    """A server error document as the CRUD spec's WriteError / WriteConcernError model: code, message, details."""
    model = {"code": doc.get("code"), "message": doc.get("errmsg")}
    if "errInfo" in doc:
        model["details"] = doc["errInfo"]
    return model


def _check_write_errors(matcher: Matcher, expected: dict, exc: BaseException, ctx: str) -> None:
    if not isinstance(exc, ClientBulkWriteException):
        raise UnsupportedByRunner("expectError.writeErrors is for clientBulkWrite only")
    actual = {str(e["idx"]): e for e in (exc.write_errors or [])}
    if sorted(actual) != sorted(expected):
        raise AssertionError(f"{ctx}: write errors at indexes {sorted(actual)}, expected {sorted(expected)}")
    for index, want in expected.items():
        matcher.match(want, _error_model(actual[index]), root=True, path=f"writeErrors.{index}")


def _check_write_concern_errors(matcher: Matcher, expected: list, exc: BaseException, ctx: str) -> None:
    if not isinstance(exc, ClientBulkWriteException):
        raise UnsupportedByRunner("expectError.writeConcernErrors is for clientBulkWrite only")
    actual: list[Any] = list(exc.write_concern_errors or [])
    if len(actual) != len(expected):
        raise AssertionError(f"{ctx}: {len(actual)} write concern errors, expected {len(expected)}: {actual!r}")
    for i, (want, got) in enumerate(zip(expected, actual)):
        matcher.match(want, _error_model(got), root=True, path=f"writeConcernErrors[{i}]")
