"""The error-code table: complete, consistent, and what errors.py expects."""

from mongosim.oplog.error_codes import CATEGORIES, CODES
from mongosim.oplog.errors import MongoError, in_category, name_of


def test_names_and_codes_are_unique():
    assert len(set(CODES.values())) == len(CODES)


def test_categories_only_hold_known_codes():
    known = set(CODES.values())
    for name, codes in CATEGORIES.items():
        assert codes <= known, name


def test_change_stream_codes():
    expected = {
        "CursorNotFound": 43,
        "NoMatchingDocument": 47,
        "FailedToSatisfyReadPreference": 133,
        "CloseChangeStream": 222,
        "RetryChangeStream": 234,
        "InvalidResumeToken": 260,
        "ChangeStreamFatalError": 280,
        "ChangeStreamHistoryLost": 286,
        "OplogQueryMinTsMissing": 326,
        "ChangeStreamInvalidated": 346,
        "ChangeStreamTopologyChange": 348,
        "ChangeStreamStartAfterInvalidate": 351,
        "ChangeStreamNotEnabled": 376,
    }
    for name, code in expected.items():
        assert CODES[name] == code


def test_categories_of_the_yml():
    assert CATEGORIES["NetworkError"] >= {6, 7, 89, 9001}
    assert CATEGORIES["NotPrimaryError"] == {189, 10107, 11602, 13435, 13436}
    assert CATEGORIES["ShutdownError"] >= {91, 11600}
    assert CATEGORIES["NeedRetargettingError"] == {150, 13388}
    assert CATEGORIES["CursorInvalidatedError"] == {43, 96, 175, 237, 314}
    assert CATEGORIES["NonResumableChangeStreamError"] == {280, 286}
    assert {50, 202, 262, 290, 407} == CATEGORIES["ExceededTimeLimitError"]
    assert in_category(262, "RetriableError")
    assert not in_category(63, "NeedRetargettingError")  # OBSOLETE_StaleShardVersion has none


def test_errors_module_uses_the_table():
    err = MongoError("InvalidResumeToken", "bad")
    assert err.to_reply() == {"ok": 0.0, "errmsg": "bad", "code": 260, "codeName": "InvalidResumeToken"}
    assert MongoError(40647, "x").code_name == "Location40647"
    assert name_of(11602) == "InterruptedDueToReplStateChange"
