"""Tests that need a newer pymongo than the lowest one mongosim supports.

mongosim needs only pymongo's bson (>= 4.9); some tests drive the emulator through driver features
that came later.  Under `make test-lowest` (pymongo 4.9) they skip, naming the driver feature and
the release that brought it: the requirement is the driver's, not the emulator's.
"""

from __future__ import annotations

import pymongo
import pytest

PYMONGO = tuple(pymongo.version_tuple[:2])


def requires_pymongo(version: tuple[int, int], feature: str) -> pytest.MarkDecorator:
    """Skip unless the installed pymongo is at least `version` (it brought `feature`)."""
    return pytest.mark.skipif(
        PYMONGO < version,
        reason=f"pymongo {pymongo.version} predates {feature} (pymongo {version[0]}.{version[1]})")


# pymongo < 4.12 maps a raw `bulkWrite` command's document sequence to the field `bulkWrite`
# (its `_FIELD_MAP`), so `db.command({"bulkWrite": 1, "ops": ...})` fails in the driver.
RAW_BULK_WRITE = requires_pymongo((4, 12), "a raw bulkWrite command through db.command")
# `sort` on UpdateOne / ReplaceOne / update_one / replace_one.
UPDATE_ONE_SORT = requires_pymongo((4, 11), "sort on updateOne and replaceOne")
