"""Helpers of the user and role store tests."""

from __future__ import annotations

import uuid

import pytest

from mongosim.oplog.errors import MongoError
from mongosim.router.auth import UserStore

FAST = {"SCRAM-SHA-1": 4096, "SCRAM-SHA-256": 4096}  # low iteration counts keep the tests fast


def empty_store() -> UserStore:
    """A store with no users or roles, whose userIds are UUID(1), UUID(2), ..."""
    ids = iter(uuid.UUID(int=i) for i in range(1, 1000))
    return UserStore(iterations=FAST, uuid_factory=lambda: next(ids))


def error(call) -> tuple[int, str, str]:
    """(code, codeName, errmsg) of the MongoError `call()` raises."""
    with pytest.raises(MongoError) as info:
        call()
    return info.value.code, info.value.code_name, info.value.errmsg
