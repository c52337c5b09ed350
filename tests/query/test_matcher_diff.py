"""Differential test: our Matcher against mongomock's filter engine.

Cases where mongomock is known to differ from the server are excluded here by
`mongomock_diverges` and pinned against the server's documented behaviour in
test_divergences.py.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from mongomock.filtering import filter_applies

from mongosim.shardsim.query.matcher import Matcher
from tests.query.strategies import documents, filters
from tests.query._settings import QUERY_SETTINGS


def _walk_filter(flt):
    for k, v in flt.items():
        if k in ("$and", "$or", "$nor"):
            for sub in v:
                yield from _walk_filter(sub)
        else:
            yield k, v


def _path_diverges(doc, path) -> bool:
    """Paths on which mongomock's traversal differs from the server's (see test_divergences.py):
    through a scalar or null, through arrays holding non-objects, and array offsets past the end."""
    parts = path.split(".")

    def walk(v, i):
        if i == len(parts):
            return False
        if isinstance(v, dict):
            if parts[i] not in v:
                return False
            return walk(v[parts[i]], i + 1)
        if isinstance(v, list):
            if not v:
                return True  # mongomock treats an empty array mid-path as a dead end
            if parts[i].isdigit():
                if any(isinstance(e, (dict, list)) for e in v):
                    return True  # offsets into nested arrays / documents: see test_divergences
                idx = int(parts[i])
                if idx >= len(v) or str(idx) != parts[i]:
                    return True
                if any(isinstance(e, dict) and parts[i] in e for e in v):
                    return True
                return walk(v[idx], i + 1)
            if any(not isinstance(e, dict) for e in v):
                return True
            return any(walk(e, i) for e in v)
        return True  # a scalar or null before the end of the path

    return walk(doc, 0)


def _null_or_empty_cmp(cond) -> bool:
    if cond == {}:
        return True  # mongomock treats {} as an empty operator document, the server as equality to {}
    if isinstance(cond, dict):
        for op, v in cond.items():
            if op in ("$gte", "$lte", "$gt", "$lt") and v is None:
                return True
            if op == "$not" and _null_or_empty_cmp(v):
                return True
            if op == "$size":
                return True  # mongomock matches $size on non-arrays (2 has "size" 1); pinned in test_divergences
    return False


def mongomock_diverges(doc, flt) -> bool:
    for path, cond in _walk_filter(flt):
        if _path_diverges(doc, path) or _null_or_empty_cmp(cond):
            return True
        if _has_bool_or_mixed(doc):
            return True
    return False


def _has_bool_or_mixed(v) -> bool:
    if isinstance(v, bool):
        return True
    if isinstance(v, float) and (math.isnan(v)):
        return True
    if isinstance(v, dict):
        return any(_has_bool_or_mixed(x) for x in v.values())
    if isinstance(v, list):
        return any(_has_bool_or_mixed(x) for x in v)
    return False


@QUERY_SETTINGS
@given(doc=documents(), flt=filters())
def test_matcher_agrees_with_mongomock(doc, flt):
    if mongomock_diverges(doc, flt):
        return
    try:
        expected = filter_applies(flt, doc)
    except Exception:
        return  # mongomock cannot evaluate it (e.g. compares unorderable types)
    assert Matcher(flt).matches(doc) == expected, (doc, flt)
