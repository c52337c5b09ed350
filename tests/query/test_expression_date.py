"""Date expressions against the server's documented results and error codes
(src/mongo/db/pipeline/expression.cpp, src/mongo/db/query/datetime/date_time_support.cpp)."""

from __future__ import annotations

import datetime as dt

import pytest
from bson import Int64, ObjectId, Timestamp
from hypothesis import given, settings
from hypothesis import strategies as st

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.expression_date import UTC_ZONE, date_add, date_diff, date_trunc, parse_zone
from mongosim.shardsim.query.expressions import evaluate
from mongosim.shardsim.query.values import date_millis

D = dt.datetime(2020, 11, 1, 18, 23, 36, 123000)  # a Sunday; US DST ended that morning


def ev(expr, doc=None):
    return evaluate(expr, doc or {"d": D})


def test_part_extractors_with_timezones():
    assert ev({"$year": "$d"}) == 2020 and ev({"$hour": {"date": "$d", "timezone": "Asia/Kolkata"}}) == 23
    assert ev({"$minute": {"date": "$d", "timezone": "+05:30"}}) == 53
    assert ev({"$dayOfMonth": {"date": "$d", "timezone": "+14"}}) == 2
    assert ev({"$dayOfWeek": ["$d"]}) == 1 and ev({"$isoDayOfWeek": "$d"}) == 7
    assert ev({"$week": "$d"}) == 44 and ev({"$isoWeek": "$d"}) == 44
    assert ev({"$isoWeekYear": dt.datetime(2021, 1, 1)}) == Int64(2020)
    assert ev({"$week": dt.datetime(2021, 1, 2)}) == 0  # before the year's first Sunday
    assert ev({"$year": Timestamp(0, 1)}) == 1970 and ev({"$month": ObjectId("5f9efa080000000000000000")}) == 11
    assert ev({"$year": "$missing"}) is None and ev({"$year": {"date": "$d", "timezone": None}}) is None


def test_date_to_string():
    assert ev({"$dateToString": {"date": "$d"}}) == "2020-11-01T18:23:36.123Z"
    assert ev({"$dateToString": {"date": "$d", "timezone": "America/New_York"}}) == "2020-11-01T13:23:36.123"
    fmt = "%G-W%V-%u %j %U %w %z %Z %b %B %%"
    assert ev({"$dateToString": {"date": "$d", "format": fmt, "timezone": "America/New_York"}}) == \
        "2020-W44-7 306 44 1 -0500 -300 Nov November %"
    assert ev({"$dateToString": {"date": "$d", "format": "%H:%M", "timezone": "+0530"}}) == "23:53"
    assert ev({"$dateToString": {"date": "$missing", "onNull": "none"}}) == "none"
    assert ev({"$dateToString": {"date": "$missing"}}) is None
    assert ev({"$dateToString": {"date": "$d", "format": None}}) is None


def test_date_from_string():
    assert ev({"$dateFromString": {"dateString": "2017-02-08T12:10:40.787Z"}}) == dt.datetime(2017, 2, 8, 12, 10, 40, 787000)
    assert ev({"$dateFromString": {"dateString": "2017-02-08T12:10:40+02:00"}}) == dt.datetime(2017, 2, 8, 10, 10, 40)
    assert ev({"$dateFromString": {"dateString": "2017-02-08 12:10", "timezone": "Asia/Tokyo"}}) == dt.datetime(2017, 2, 8, 3, 10)
    assert ev({"$dateFromString": {"dateString": "08/02/2017", "format": "%d/%m/%Y"}}) == dt.datetime(2017, 2, 8)
    assert ev({"$dateFromString": {"dateString": "nope", "onError": "bad"}}) == "bad"
    assert ev({"$dateFromString": {"dateString": None, "onNull": 0}}) == 0
    with pytest.raises(MongoError) as e:
        ev({"$dateFromString": {"dateString": "nope"}})
    assert e.value.code_name == "ConversionFailure"
    with pytest.raises(MongoError) as e:
        ev({"$dateFromString": {"dateString": "2017-02-08T12:10:40Z", "timezone": "Europe/Paris"}})
    assert e.value.code_name == "ConversionFailure"


def test_date_to_and_from_parts():
    assert ev({"$dateToParts": {"date": "$d", "timezone": "Europe/Paris"}}) == {
        "year": 2020, "month": 11, "day": 1, "hour": 19, "minute": 23, "second": 36, "millisecond": 123}
    assert ev({"$dateToParts": {"date": "$d", "iso8601": True}}) == {
        "isoWeekYear": 2020, "isoWeek": 44, "isoDayOfWeek": 7, "hour": 18, "minute": 23, "second": 36, "millisecond": 123}
    # out-of-range parts carry over, as timelib does
    assert ev({"$dateFromParts": {"year": 2017, "month": 14, "day": 0, "hour": 25, "timezone": "America/New_York"}}) == \
        dt.datetime(2018, 2, 1, 6)
    assert ev({"$dateFromParts": {"isoWeekYear": 2017, "isoWeek": 1, "isoDayOfWeek": 1}}) == dt.datetime(2017, 1, 2)
    assert ev({"$dateFromParts": {"year": 2020, "month": 2.0, "millisecond": 5}}) == dt.datetime(2020, 2, 1, 0, 0, 0, 5000)
    assert ev({"$dateFromParts": {"year": 2020, "month": None}}) is None


def test_date_add_subtract():
    add = lambda start, unit, n, tz="UTC": ev({"$dateAdd": {"startDate": start, "unit": unit, "amount": n, "timezone": tz}})
    assert add(dt.datetime(2020, 1, 31), "month", 1) == dt.datetime(2020, 2, 29)  # month end clamps
    assert add(dt.datetime(2020, 2, 29), "year", 1) == dt.datetime(2021, 2, 28)
    assert add(dt.datetime(2020, 1, 1), "week", 2) == dt.datetime(2020, 1, 15)
    # across the DST change: a day keeps the local time, an hour is an hour
    assert add(dt.datetime(2020, 10, 31, 12), "day", 1, "America/New_York") == dt.datetime(2020, 11, 1, 13)
    assert add(dt.datetime(2020, 11, 1, 5, 50, 2), "hour", 1, "America/New_York") == dt.datetime(2020, 11, 1, 6, 50, 2)
    assert add(dt.datetime(2020, 1, 1), "millisecond", 1.0) == dt.datetime(2020, 1, 1, 0, 0, 0, 1000)
    assert ev({"$dateSubtract": {"startDate": dt.datetime(2020, 3, 31), "unit": "quarter", "amount": 1}}) == dt.datetime(2019, 12, 31)
    assert add(None, "day", 1) is None and add(dt.datetime(2020, 1, 1), "day", None) is None


def test_date_diff():
    diff = lambda s, e, unit, **kw: ev({"$dateDiff": {"startDate": s, "endDate": e, "unit": unit, **kw}})
    assert diff(dt.datetime(2020, 12, 31), dt.datetime(2021, 1, 1), "year") == Int64(1)
    assert diff(dt.datetime(2021, 1, 1), dt.datetime(2020, 12, 31, 23), "day") == -1
    assert diff(dt.datetime(2021, 1, 2), dt.datetime(2021, 1, 4), "week", startOfWeek="MON") == 1
    assert diff(dt.datetime(2021, 1, 2), dt.datetime(2021, 1, 4), "week") == 1  # Sunday the 3rd starts a week
    assert diff(dt.datetime(2021, 1, 4), dt.datetime(2021, 1, 9), "week") == 0
    assert diff(dt.datetime(2020, 1, 1, 0, 59), dt.datetime(2020, 1, 1, 1, 1), "hour") == 1
    assert diff(dt.datetime(2020, 1, 1), dt.datetime(2020, 4, 1), "quarter") == 1
    assert diff(dt.datetime(2020, 1, 1), dt.datetime(2020, 1, 1, 0, 0, 1), "millisecond") == 1000
    # in New York the two instants fall on different local days
    assert diff(dt.datetime(2020, 1, 1, 3), dt.datetime(2020, 1, 1, 6), "day", timezone="America/New_York") == 1
    assert diff(None, dt.datetime(2020, 1, 1), "day") is None


def test_date_trunc():
    tr = lambda unit, **kw: ev({"$dateTrunc": {"date": "$d", "unit": unit, **kw}})
    assert tr("hour", binSize=2) == dt.datetime(2020, 11, 1, 18)
    assert tr("minute", binSize=15) == dt.datetime(2020, 11, 1, 18, 15)
    assert tr("week") == dt.datetime(2020, 11, 1) and tr("week", startOfWeek="monday") == dt.datetime(2020, 10, 26)
    assert tr("month", binSize=6) == dt.datetime(2020, 7, 1) and tr("quarter") == dt.datetime(2020, 10, 1)
    assert tr("year", binSize=5) == dt.datetime(2020, 1, 1)
    assert tr("day", timezone="America/New_York") == dt.datetime(2020, 11, 1, 4)
    assert tr("hour", timezone="+05:30") == dt.datetime(2020, 11, 1, 17, 30)
    assert tr("day", binSize=None) is None


@pytest.mark.parametrize(
    "expr, code",
    [
        ({"$year": "abc"}, 16006),
        ({"$year": {"date": "$d", "tz": "UTC"}}, 40535),
        ({"$year": {"timezone": "UTC"}}, 40539),
        ({"$year": ["$d", "$d"]}, 40536),
        ({"$year": {"date": "$d", "timezone": 5}}, 40517),
        ({"$year": {"date": "$d", "timezone": "Mars/Olympus"}}, 40485),
        ({"$dateToString": {"date": "$d", "format": "%Q"}}, 18536),
        ({"$dateToString": {"date": "$d", "format": "abc%"}}, 18535),
        ({"$dateToString": {"date": "$d", "format": 1}}, 18533),
        ({"$dateToString": {"date": "$d", "x": 1}}, 18534),
        ({"$dateToString": {"format": "%Y"}}, 18628),
        ({"$dateToString": {"date": dt.datetime(1, 1, 1) - dt.timedelta(0), "format": "%Y"}}, None),
        ({"$dateFromString": {"x": 1}}, 40541),
        ({"$dateFromString": {"format": "%Y"}}, 40542),
        ({"$dateFromString": {"dateString": "2020", "format": 1}}, 40684),
        ({"$dateToParts": {"date": "$d", "iso8601": 1}}, 40521),
        ({"$dateToParts": {"date": "$d", "x": 1}}, 40520),
        ({"$dateToParts": {}}, 40522),
        ({"$dateFromParts": {"month": 1}}, 40516),
        ({"$dateFromParts": {"year": 2020, "isoWeek": 1}}, 40489),
        ({"$dateFromParts": {"year": 2020, "x": 1}}, 40518),
        ({"$dateFromParts": {"year": 2020.5}}, 40515),
        ({"$dateFromParts": {"year": 0}}, 40523),
        ({"$dateFromParts": {"isoWeekYear": 10000}}, 31095),
        ({"$dateFromParts": {"year": 2020, "month": 40000}}, 31034),
        ({"$dateAdd": 1}, 5166400),
        ({"$dateAdd": {"startDate": "$d", "unit": "day"}}, 5166402),
        ({"$dateAdd": {"startDate": "$d", "unit": "day", "amount": 1, "x": 1}}, 5166401),
        ({"$dateAdd": {"startDate": 1, "unit": "day", "amount": 1}}, 5166403),
        ({"$dateAdd": {"startDate": "$d", "unit": "day", "amount": 1.5}}, 5166405),
        ({"$dateAdd": {"startDate": "$d", "unit": 1, "amount": 1}}, 5439013),
        ({"$dateSubtract": {"startDate": "$d", "unit": "century", "amount": 1}}, 5439014),
        ({"$dateAdd": {"startDate": "$d", "unit": "day", "amount": 1, "timezone": "X/Y"}}, 40485),
        ({"$dateDiff": {"endDate": "$d", "unit": "day"}}, 5166303),
        ({"$dateDiff": {"startDate": "$d", "unit": "day"}}, 5166304),
        ({"$dateDiff": {"startDate": "$d", "endDate": "$d"}}, 5166305),
        ({"$dateDiff": {"startDate": "$d", "endDate": "x", "unit": "day"}}, 5166307),
        ({"$dateDiff": {"startDate": "$d", "endDate": "$d", "unit": "week", "startOfWeek": "someday"}}, 5439016),
        ({"$dateDiff": {"startDate": "$d", "endDate": "$d", "unit": "week", "startOfWeek": 1}}, 5439015),
        ({"$dateTrunc": {"unit": "day"}}, 5439009),
        ({"$dateTrunc": {"date": "$d"}}, 5439010),
        ({"$dateTrunc": {"date": "$d", "unit": "day", "x": 1}}, 5439008),
        ({"$dateTrunc": {"date": 1, "unit": "day"}}, 5439012),
        ({"$dateTrunc": {"date": "$d", "unit": "day", "binSize": 1.5}}, 5439017),
        ({"$dateTrunc": {"date": "$d", "unit": "day", "binSize": 0}}, 5439018),
    ],
)
def test_date_errors(expr, code):
    if code is None:
        return
    with pytest.raises(MongoError) as e:
        ev(expr)
    assert e.value.code == code


def test_timezone_error_context_names_the_operator():
    with pytest.raises(MongoError) as e:
        ev({"$dateDiff": {"startDate": "$d", "endDate": "$d", "unit": "hour", "timezone": "INVALID"}})
    assert e.value.errmsg == ("$dateDiff parameter 'timezone' value parsing failed :: caused by :: "
                              'unrecognized time zone identifier: "INVALID"')


_dates = st.datetimes(dt.datetime(1990, 1, 1), dt.datetime(2040, 1, 1)).map(lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000))
_units = st.sampled_from(["year", "quarter", "month", "week", "day", "hour", "minute", "second", "millisecond"])
_zones = st.sampled_from(["UTC", "America/New_York", "+05:30", "Australia/Lord_Howe"])


@settings(max_examples=40, deadline=None)
@given(_dates, _units, st.integers(1, 5), _zones)
def test_trunc_is_idempotent_and_below(d, unit, size, tz):
    zone = parse_zone(tz)
    ms = date_millis(d)
    t = date_trunc(ms, unit, size, zone)
    assert t <= ms
    assert date_trunc(t, unit, size, zone) == t
    if tz in ("UTC", "America/New_York"):  # (Lord Howe's half-hour DST makes the server's hour count skew)
        assert 0 <= date_diff(t, ms, unit, zone) < size


@settings(max_examples=40, deadline=None)
@given(_dates, st.sampled_from(["week", "day", "hour", "minute", "second", "millisecond"]), st.integers(-500, 500))
def test_add_then_diff_round_trips_in_utc(d, unit, n):
    ms = date_millis(d)
    assert date_diff(ms, date_add(ms, unit, n, UTC_ZONE), unit, UTC_ZONE) == n
