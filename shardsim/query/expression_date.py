"""Date expressions: the part extractors (`$year` ... `$isoWeek`, with a timezone),
`$dateToString`, `$dateFromString`, `$dateToParts`, `$dateFromParts`, `$dateAdd`,
`$dateSubtract`, `$dateDiff` and `$dateTrunc`.

A BSON date is milliseconds since the Unix epoch (here a naive UTC `datetime`).  A
timezone is an Olson name (`"America/New_York"`, through the stdlib `zoneinfo` and the
system's tz database) or a UTC offset (`"+05:30"`, `"+0530"`, `"-03"`); local fields
are computed in it.  The algorithms follow the server's date_time_support.cpp:

* `$dateAdd` of days or larger units works on the local calendar (the time of day
  stays, a month end clamps: Jan 31 + 1 month = Feb 28/29); of hours or smaller it
  adds an absolute duration.
* `$dateDiff` counts unit boundaries crossed in the timezone: years/quarters/months/days
  by local calendar fields, weeks by days shifted to `startOfWeek` (default Sunday),
  hours/minutes/seconds by local fields corrected by the change of UTC offset.
* `$dateTrunc` bins from the reference point 2000-01-01T00:00 local (for weeks the
  first `startOfWeek` day on or after it): hours and smaller on the millisecond axis,
  larger units by the unit distance from the reference point, rounded down to
  `binSize`, added back with `$dateAdd`'s rules.

Hand-written: Python's `datetime` has no BSON-date arithmetic with these rules
(timelib's), and `strftime` differs from the server's format letters (%L, %G, %u...).
"""

from __future__ import annotations

import calendar
import datetime
import re
import zoneinfo

from bson import Decimal128, Int64, ObjectId, Timestamp
from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.expression_core import compile_node, fixed_args, nullish, register
from mongosim.shardsim.query.fmt import bson_str, query_error
from mongosim.shardsim.query.values import date_millis, type_name

_EPOCH = datetime.datetime(1970, 1, 1)
_UTC = datetime.timezone.utc
_DAY_MS = 86_400_000


def _from_millis(ms: int) -> datetime.datetime:
    return _EPOCH + datetime.timedelta(milliseconds=ms)


# --- timezones --------------------------------------------------------------------


class Zone:
    """A timezone: UTC, a fixed offset, or an Olson zone."""

    __slots__ = ("name", "fixed", "zone")

    def __init__(self, name, fixed: int | None, zone=None):
        self.name, self.fixed, self.zone = name, fixed, zone

    def offset(self, ms: int) -> int:
        """The UTC offset (seconds east) in force at instant `ms`."""
        if self.zone is None:
            return self.fixed
        return int(_from_millis(ms).replace(tzinfo=_UTC).astimezone(self.zone).utcoffset().total_seconds())

    def local(self, ms: int) -> datetime.datetime:
        """The local wall-clock time (naive) of instant `ms`."""
        return _from_millis(ms + self.offset(ms) * 1000)

    def to_millis(self, local: datetime.datetime) -> int:
        """The instant of a local wall-clock time (the earlier one when ambiguous)."""
        ms = date_millis(local)
        if self.zone is None:
            return ms - self.fixed * 1000
        off = local.replace(tzinfo=self.zone).utcoffset().total_seconds()
        return ms - int(off) * 1000


UTC_ZONE = Zone("UTC", 0)
_OFFSET = re.compile(r"^([+-])(\d{2})(?::?(\d{2}))?$")


def parse_zone(v, op: str | None = None) -> Zone:
    """A timezone argument: 40517 if not a string, 40485 if not a zone (with the
    `{op} parameter 'timezone' value parsing failed` context where the server adds it)."""
    try:
        if type(v) is not str:
            raise MongoError(40517, f"timezone must evaluate to a string, found {type_name(v)}")
        m = _OFFSET.match(v)
        if m:
            secs = int(m.group(2)) * 3600 + int(m.group(3) or 0) * 60
            return Zone(v, -secs if m.group(1) == "-" else secs)
        if v in ("UTC", "GMT", "Z"):
            return UTC_ZONE
        try:
            return Zone(v, None, zoneinfo.ZoneInfo(v))
        except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
            raise MongoError(40485, f'unrecognized time zone identifier: "{v}"') from None
    except MongoError as e:
        if op is None:
            raise
        raise MongoError(e.code, f"{op} parameter 'timezone' value parsing failed :: caused by :: {e.errmsg}") from None


def _as_date_millis(v):
    """A date, Timestamp or ObjectId as epoch milliseconds; None if not convertible."""
    if isinstance(v, datetime.datetime):
        return date_millis(v)
    if type(v) is Timestamp:
        return v.time * 1000
    if type(v) is ObjectId:
        return int(v.generation_time.timestamp()) * 1000
    return None


def _date_arg(v) -> int:
    ms = _as_date_millis(v)
    if ms is None:
        raise MongoError(16006, f"can't convert from BSON type {type_name(v)} to Date")
    return ms


# --- calendar helpers -----------------------------------------------------------------


def _iso_weekday(d) -> int:
    return d.isoweekday()


def _week(d) -> int:
    """%U: weeks starting on Sunday; days before the year's first Sunday are week 0."""
    yday = d.timetuple().tm_yday - 1
    wday = d.isoweekday() % 7
    return (yday + 7 - wday) // 7


_PARTS = {
    "$year": lambda d: d.year,
    "$month": lambda d: d.month,
    "$dayOfMonth": lambda d: d.day,
    "$hour": lambda d: d.hour,
    "$minute": lambda d: d.minute,
    "$second": lambda d: d.second,
    "$millisecond": lambda d: d.microsecond // 1000,
    "$dayOfWeek": lambda d: d.isoweekday() % 7 + 1,
    "$dayOfYear": lambda d: d.timetuple().tm_yday,
    "$week": _week,
    "$isoWeek": lambda d: d.isocalendar()[1],
    "$isoWeekYear": lambda d: Int64(d.isocalendar()[0]),
    "$isoDayOfWeek": _iso_weekday,
}


def _date_part(name, fn):
    def build(arg):
        tz = None
        if isinstance(arg, dict) and arg and not next(iter(arg)).startswith("$"):
            for k in arg:
                if k not in ("date", "timezone"):
                    raise MongoError(40535, f'unrecognized option to {name}: "{k}"')
            if "date" not in arg:
                raise MongoError(40539, f"missing 'date' argument to {name}, provided: {bson_str(arg)}")
            date = compile_node(arg["date"])
            tz = compile_node(arg["timezone"]) if "timezone" in arg else None
        elif isinstance(arg, list):
            if len(arg) != 1:
                raise MongoError(40536, f"{name} accepts exactly one argument if given an array, but was given {len(arg)}")
            date = compile_node(arg[0])
        else:
            date = compile_node(arg)

        def f(vs):
            v = date(vs)
            if nullish(v):
                return None
            zone = UTC_ZONE
            if tz is not None:
                z = tz(vs)
                if nullish(z):
                    return None
                zone = parse_zone(z)
            return fn(zone.local(_date_arg(v)))

        return f

    return build


for _name, _fn in _PARTS.items():
    register(_name)(_date_part(_name, _fn))


# --- $dateToString ----------------------------------------------------------------------

_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
           "October", "November", "December"]
_FORMAT_LETTERS = set("dGHjLmMSuUVwYzZbB%")


def _validate_format(fmt: str):
    i = 0
    while i < len(fmt):
        if fmt[i] == "%":
            if i + 1 >= len(fmt):
                raise MongoError(18535, "Unmatched '%' at end of format string")
            if fmt[i + 1] not in _FORMAT_LETTERS:
                raise MongoError(18536, f"Invalid format character '%{fmt[i + 1]}' in format string")
            i += 2
        else:
            i += 1


def _year4(y: int) -> str:
    if not 0 <= y <= 9999:
        raise MongoError(18537, f"Could not convert date to string: date component was outside the supported range of 0-9999: {y}")
    return f"{y:04d}"


def format_date(fmt: str, ms: int, zone: Zone) -> str:
    """Render instant `ms` in `zone` with the server's format letters."""
    _validate_format(fmt)
    d = zone.local(ms)
    off = zone.offset(ms)
    out = []
    i = 0
    while i < len(fmt):
        c = fmt[i]
        if c != "%":
            out.append(c)
            i += 1
            continue
        k = fmt[i + 1]
        i += 2
        if k == "%":
            out.append("%")
        elif k == "Y":
            out.append(_year4(d.year))
        elif k == "G":
            out.append(_year4(d.isocalendar()[0]))
        elif k == "m":
            out.append(f"{d.month:02d}")
        elif k == "d":
            out.append(f"{d.day:02d}")
        elif k == "H":
            out.append(f"{d.hour:02d}")
        elif k == "M":
            out.append(f"{d.minute:02d}")
        elif k == "S":
            out.append(f"{d.second:02d}")
        elif k == "L":
            out.append(f"{d.microsecond // 1000:03d}")
        elif k == "j":
            out.append(f"{d.timetuple().tm_yday:03d}")
        elif k == "w":
            out.append(str(d.isoweekday() % 7 + 1))
        elif k == "u":
            out.append(str(d.isoweekday()))
        elif k == "U":
            out.append(f"{_week(d):02d}")
        elif k == "V":
            out.append(f"{d.isocalendar()[1]:02d}")
        elif k == "z":
            sign = "+" if off >= 0 else "-"
            a = abs(off) // 60
            out.append(f"{sign}{a // 60:02d}{a % 60:02d}")
        elif k == "Z":
            out.append(f"{'+' if off >= 0 else '-'}{abs(off) // 60:03d}")
        elif k == "b":
            out.append(_MONTHS[d.month - 1][:3])
        elif k == "B":
            out.append(_MONTHS[d.month - 1])
    return "".join(out)


def _object_arg(name, arg, allowed, code_obj, code_unknown, obj_msg=None):
    if not isinstance(arg, dict):
        raise MongoError(code_obj, obj_msg or f"{name} only supports an object as its argument")
    for k in arg:
        if k not in allowed:
            raise MongoError(code_unknown, f"Unrecognized argument to {name}: {k}")
    return {k: compile_node(v) for k, v in arg.items()}


_NULL = object()  # an argument evaluated to null or missing: the operator answers null


def _zone_arg(a, vs, default=UTC_ZONE):
    """The evaluated `timezone` argument as a Zone (`default` without one), or _NULL."""
    if "timezone" not in a:
        return default
    z = a["timezone"](vs)
    return _NULL if nullish(z) else parse_zone(z)


def _format_arg(a, vs, op, code, default):
    """The evaluated `format` argument (`default` without one), or _NULL."""
    if "format" not in a:
        return default
    fmt = a["format"](vs)
    if nullish(fmt):
        return _NULL
    if type(fmt) is not str:
        raise MongoError(code, f"{op} requires that 'format' be a string, found: {type_name(fmt)} with value {bson_str(fmt)}")
    return fmt


@register("$dateToString")
def _date_to_string(arg):
    a = _object_arg("$dateToString", arg, ("date", "format", "timezone", "onNull"), 18629, 18534)
    if "date" not in a:
        raise MongoError(18628, "Missing 'date' parameter to $dateToString")
    if isinstance(arg.get("format"), str):
        _validate_format(arg["format"])
    default_fmt = "%Y-%m-%dT%H:%M:%S.%L" if "timezone" in a else "%Y-%m-%dT%H:%M:%S.%LZ"

    def f(vs):
        date = a["date"](vs)
        fmt = _format_arg(a, vs, "$dateToString", 18533, default_fmt)
        zone = _NULL if fmt is _NULL else _zone_arg(a, vs)
        if zone is _NULL:
            return None
        if nullish(date):
            return a["onNull"](vs) if "onNull" in a else None
        return format_date(fmt, _date_arg(date), zone)

    return f


# --- $dateFromString ----------------------------------------------------------------------

_ISO = re.compile(
    r"^\s*(?P<Y>[+-]?\d{4,})-(?P<m>\d{1,2})-(?P<d>\d{1,2})"
    r"(?:[T ](?P<H>\d{1,2})(?::(?P<M>\d{2})(?::(?P<S>\d{2})(?:\.(?P<L>\d+))?)?)?)?"
    r"\s*(?P<tz>Z|UTC|GMT|[+-]\d{2}(?::?\d{2})?|[A-Za-z_]+/[A-Za-z_/+-]+)?\s*$"
)
_ISO_DATE_SLASH = re.compile(r"^\s*(?P<Y>\d{4})/(?P<m>\d{1,2})/(?P<d>\d{1,2})(?:[T ](?P<H>\d{1,2}):(?P<M>\d{2})(?::(?P<S>\d{2})(?:\.(?P<L>\d+))?)?)?\s*(?P<tz>Z)?\s*$")
_TOKEN = {
    "Y": r"(?P<Y>\d{4})", "G": r"(?P<G>\d{4})", "m": r"(?P<m>\d{1,2})", "d": r"(?P<d>\d{1,2})",
    "H": r"(?P<H>\d{1,2})", "M": r"(?P<M>\d{1,2})", "S": r"(?P<S>\d{1,2})", "L": r"(?P<L>\d{1,3})",
    "j": r"(?P<j>\d{1,3})", "u": r"(?P<u>\d)", "V": r"(?P<V>\d{1,2})", "w": r"(?P<w>\d)", "U": r"(?P<U>\d{1,2})",
    "z": r"(?P<tz>[+-]\d{2}:?\d{2}|Z)", "Z": r"(?P<tzmin>[+-]\d{1,4})",
    "b": r"(?P<b>[A-Za-z]{3})", "B": r"(?P<B>[A-Za-z]+)",
}


def _format_regex(fmt: str) -> re.Pattern:
    _validate_format(fmt)
    out, i = [], 0
    while i < len(fmt):
        if fmt[i] == "%":
            k = fmt[i + 1]
            out.append("%" if k == "%" else _TOKEN[k])
            i += 2
        else:
            out.append(re.escape(fmt[i]))
            i += 1
    return re.compile("^" + "".join(out) + "$")


def _parse_fail(s: str, why: str):
    return query_error("ConversionFailure", f"Error parsing date string '{s}'; {why}")


def _parse_date_string(s: str, fmt: str | None):
    """(local datetime, Zone found in the string or None)."""
    m = (_format_regex(fmt) if fmt is not None else _ISO).match(s)
    if m is None and fmt is None:
        m = _ISO_DATE_SLASH.match(s)
    if m is None:
        raise _parse_fail(s, "0: Unexpected data found.")
    g = {k: v for k, v in m.groupdict().items() if v is not None}
    zone = None
    if "tz" in g:
        t = g["tz"]
        zone = UTC_ZONE if t in ("Z", "UTC", "GMT") else parse_zone(t)
    elif "tzmin" in g:
        zone = Zone(g["tzmin"], int(g["tzmin"]) * 60)
    try:
        if "G" in g or "V" in g:
            base = datetime.date.fromisocalendar(int(g.get("G", 1970)), int(g.get("V", 1)), int(g.get("u", 1)))
        elif "j" in g:
            base = datetime.date(int(g.get("Y", 1970)), 1, 1) + datetime.timedelta(days=int(g["j"]) - 1)
        else:
            month = int(g["m"]) if "m" in g else None
            for key in ("b", "B"):
                if key in g:
                    names = [n[:3].lower() if key == "b" else n.lower() for n in _MONTHS]
                    if g[key].lower() not in names:
                        raise ValueError("month name")
                    month = names.index(g[key].lower()) + 1
            base = datetime.date(int(g.get("Y", 1970)), month or 1, int(g.get("d", 1)))
        ms = int((g.get("L", "0") + "00")[:3])
        local = datetime.datetime(base.year, base.month, base.day, int(g.get("H", 0)), int(g.get("M", 0)),
                                  int(g.get("S", 0)), ms * 1000)
    except ValueError:
        raise _parse_fail(s, "The parsed date was invalid") from None
    return local, zone


@register("$dateFromString")
def _date_from_string(arg):
    a = _object_arg("$dateFromString", arg, ("dateString", "format", "timezone", "onError", "onNull"), 40540, 40541,
                    f"$dateFromString only supports an object as an argument, found: {type_name(arg)}")
    if "dateString" not in a:
        raise MongoError(40542, "Missing 'dateString' parameter to $dateFromString")
    if isinstance(arg.get("format"), str):
        _validate_format(arg["format"])

    def f(vs):
        s = a["dateString"](vs)
        fmt = _format_arg(a, vs, "$dateFromString", 40684, None)
        zone = _NULL if fmt is _NULL else _zone_arg(a, vs, None)
        if zone is _NULL:
            return None
        if nullish(s):
            return a["onNull"](vs) if "onNull" in a else None
        try:
            if type(s) is not str:
                raise query_error("ConversionFailure", f"$dateFromString requires that 'dateString' be a string, found: {type_name(s)} with value {bson_str(s)}")
            local, in_string = _parse_date_string(s, fmt)
            if in_string is not None and zone is not None:
                raise query_error("ConversionFailure", f"you cannot pass in a date/time string with time zone information ('{in_string.name}') together with a timezone argument")
            return _from_millis((in_string or zone or UTC_ZONE).to_millis(local))
        except MongoError as e:
            if "onError" in a and e.code_name == "ConversionFailure":
                return a["onError"](vs)
            raise

    return f


# --- $dateToParts / $dateFromParts ----------------------------------------------------------------


@register("$dateToParts")
def _date_to_parts(arg):
    a = _object_arg("$dateToParts", arg, ("date", "timezone", "iso8601"), 40524, 40520)
    if "date" not in a:
        raise MongoError(40522, "Missing 'date' parameter to $dateToParts")

    def f(vs):
        date = a["date"](vs)
        zone = _zone_arg(a, vs)
        if zone is _NULL:
            return None
        iso = False
        if "iso8601" in a:
            iso = a["iso8601"](vs)
            if nullish(iso):
                return None
            if type(iso) is not bool:
                raise MongoError(40521, f"iso8601 must evaluate to a bool, found {type_name(iso)}")
        if nullish(date):
            return None
        d = zone.local(_date_arg(date))
        if iso:
            y, w, wd = d.isocalendar()
            head = {"isoWeekYear": y, "isoWeek": w, "isoDayOfWeek": wd}
        else:
            head = {"year": d.year, "month": d.month, "day": d.day}
        return {**head, "hour": d.hour, "minute": d.minute, "second": d.second, "millisecond": d.microsecond // 1000}

    return f


_NATURAL = ("year", "month", "day")
_ISO_PARTS = ("isoWeekYear", "isoWeek", "isoDayOfWeek")
_TIME = ("hour", "minute", "second", "millisecond")


def _int_part(name, v, lo=-32768, hi=32767):
    if type(v) is bool or type(v) not in (int, Int64, float, Decimal128):
        raise MongoError(40515, f"'{name}' must evaluate to an integer, found {type_name(v)} with value {bson_str(v)}")
    x = v.to_decimal() if type(v) is Decimal128 else v
    whole = x.is_finite() and x == x.to_integral_value() if type(v) is Decimal128 else x == x and x not in (
        float("inf"), float("-inf")) and x == int(x)
    if not whole or not -(2**63) <= x < 2**63:  # (Value::integral64Bit)
        raise MongoError(40515, f"'{name}' must evaluate to an integer, found {type_name(v)} with value {bson_str(v)}")
    n = int(x)
    if name in ("year", "isoWeekYear"):
        if not 1 <= n <= 9999:
            raise MongoError(40523 if name == "year" else 31095,
                             f"'{name}' must evaluate to an integer in the range 1 to 9999, found {n}")
    elif not lo <= n <= hi:
        raise MongoError(31034, f"'{name}' must evaluate to a value in the range [-32768, 32767]; value {n} is not in range")
    return n


@register("$dateFromParts")
def _date_from_parts(arg):
    a = _object_arg("$dateFromParts", arg, (*_NATURAL, *_ISO_PARTS, *_TIME, "timezone"), 40519, 40518)
    natural, iso = "year" in a, "isoWeekYear" in a
    if not natural and not iso:
        raise MongoError(40516, "$dateFromParts requires either 'year' or 'isoWeekYear' to be present")
    if (natural and any(k in a for k in _ISO_PARTS)) or (iso and any(k in a for k in _NATURAL)):
        raise MongoError(40489, "$dateFromParts does not allow mixing natural dates with ISO dates")
    names = (_NATURAL if natural else _ISO_PARTS) + _TIME
    defaults = {"month": 1, "day": 1, "isoWeek": 1, "isoDayOfWeek": 1}

    def f(vs):
        vals = {}
        for k in names:
            if k in a:
                v = a[k](vs)
                if nullish(v):
                    return None
                vals[k] = _int_part(k, v)
            else:
                vals[k] = defaults.get(k, 0)
        zone = _zone_arg(a, vs)
        if zone is _NULL:
            return None
        try:
            if natural:
                months = vals["year"] * 12 + vals["month"] - 1
                base = datetime.datetime(months // 12, months % 12 + 1, 1) + datetime.timedelta(days=vals["day"] - 1)
            else:
                base = datetime.datetime.combine(datetime.date.fromisocalendar(vals["isoWeekYear"], 1, 1), datetime.time()) \
                    + datetime.timedelta(weeks=vals["isoWeek"] - 1, days=vals["isoDayOfWeek"] - 1)
            local = base + datetime.timedelta(hours=vals["hour"], minutes=vals["minute"], seconds=vals["second"],
                                              milliseconds=vals["millisecond"])
        except (ValueError, OverflowError):
            raise query_error("BadValue", "$dateFromParts: the date is out of the supported range") from None
        return _from_millis(zone.to_millis(local))

    return f


# --- units: $dateAdd, $dateSubtract, $dateDiff, $dateTrunc -------------------------------------

_UNITS = ("year", "quarter", "month", "week", "day", "hour", "minute", "second", "millisecond")
_FIXED_MS = {"hour": 3_600_000, "minute": 60_000, "second": 1000, "millisecond": 1}
_DAYS = {"monday": 1, "mon": 1, "tuesday": 2, "tue": 2, "wednesday": 3, "wed": 3, "thursday": 4, "thu": 4,
         "friday": 5, "fri": 5, "saturday": 6, "sat": 6, "sunday": 7, "sun": 7}


def _unit(v, op):
    if type(v) is not str:
        raise MongoError(5439013, f"{op} requires 'unit' to be a string, but got {type_name(v)}")
    if v not in _UNITS:
        raise MongoError(5439014, f"{op} parameter 'unit' value cannot be recognized as a time unit: {v}")
    return v


def _day_of_week(v, op):
    if type(v) is not str:
        raise MongoError(5439015, f"{op} requires 'startOfWeek' to be a string, but got {type_name(v)}")
    d = _DAYS.get(v.lower())
    if d is None:
        raise MongoError(5439016, f"{op} parameter 'startOfWeek' value cannot be recognized as a day of a week: {v}")
    return d


def _add_months(local: datetime.datetime, months: int) -> datetime.datetime:
    total = local.year * 12 + local.month - 1 + months
    y, m = total // 12, total % 12 + 1
    day = min(local.day, calendar.monthrange(y, m)[1])
    return local.replace(year=y, month=m, day=day)


def date_add(ms: int, unit: str, amount: int, zone: Zone) -> int:
    """`ms` plus `amount` `unit`s in `zone` (the server's dateAdd)."""
    if unit in _FIXED_MS:
        return ms + amount * _FIXED_MS[unit]
    local = zone.local(ms)
    try:
        if unit in ("year", "quarter", "month"):
            local = _add_months(local, amount * {"year": 12, "quarter": 3, "month": 1}[unit])
        else:
            local = local + datetime.timedelta(days=amount * (7 if unit == "week" else 1))
    except (ValueError, OverflowError):
        raise MongoError(5166406, "dateAdd overflowed") from None
    return zone.to_millis(local)


def _trunc_div(a: int, b: int) -> int:
    """C++ integer division (toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _days_between(a: datetime.datetime, b: datetime.datetime) -> int:
    return b.toordinal() - a.toordinal()


def date_diff(start: int, end: int, unit: str, zone: Zone, start_of_week: int = 7) -> int:
    """Unit boundaries crossed from `start` to `end` in `zone` (the server's dateDiff)."""
    if unit == "millisecond":
        return end - start
    s, e = zone.local(start), zone.local(end)
    if unit == "year":
        return e.year - s.year
    if unit == "quarter":
        return (e.month - 1) // 3 - (s.month - 1) // 3 + (e.year - s.year) * 4
    if unit == "month":
        return e.month - s.month + (e.year - s.year) * 12
    days = _days_between(s, e)
    if unit == "day":
        return days
    if unit == "week":
        def dow(d):
            return (d.isoweekday() - start_of_week + 7) % 7

        return _trunc_div(days + dow(s) - dow(e), 7)
    zs, ze = zone.offset(start), zone.offset(end)
    hours = e.hour - s.hour + days * 24
    if unit == "hour":
        return hours + _trunc_div(zs - ze, 3600)
    minutes = e.minute - s.minute + hours * 60
    if unit == "minute":
        return minutes + _trunc_div(zs - ze, 60)
    return e.second - s.second + minutes * 60 + (zs - ze)


_REFERENCE_MS = 946_684_800_000  # 2000-01-01T00:00:00Z, a Saturday


def date_trunc(ms: int, unit: str, bin_size: int, zone: Zone, start_of_week: int = 7) -> int:
    """The lower bound of the `bin_size`-`unit` bin holding `ms` (the server's truncateDate)."""
    ref = _REFERENCE_MS - zone.offset(_REFERENCE_MS) * 1000
    if unit in _FIXED_MS:
        width = bin_size * _FIXED_MS[unit]
        return ms - (ms - ref) % width
    if bin_size > 100_000_000_000:
        raise MongoError(5439006, "dateTrunc unsupported binSize value")
    if unit == "week":
        ref_dow = (6 - start_of_week + 7) % 7
        ref += ((7 - ref_dow) % 7) * _DAY_MS
    distance = date_diff(ref, ms, unit, zone, start_of_week)
    return date_add(ref, unit, distance - distance % bin_size, zone)


def _integral(v):
    """An integral number as an int, else None (doubles and decimals with integral values count)."""
    t = type(v)
    if t is int or t is Int64:
        return int(v)
    if t is float and v == v and v not in (float("inf"), float("-inf")) and v == int(v):
        return int(v)
    if t is Decimal128:
        d = v.to_decimal()
        if d.is_finite() and d == int(d):
            return int(d)
    return None


def _date_arith(name, sign):
    def build(arg):
        if not isinstance(arg, dict):
            raise MongoError(5166400, f"{name} expects an object as its argument")
        a = _object_arg(name, arg, ("startDate", "unit", "amount", "timezone"), 5166400, 5166401)
        if not {"startDate", "unit", "amount"} <= set(a):
            raise MongoError(5166402, f"{name} requires startDate, unit, and amount to be present")

        def f(vs):
            start, unit, amount = a["startDate"](vs), a["unit"](vs), a["amount"](vs)
            tz = a["timezone"](vs) if "timezone" in a else "UTC"
            if nullish(start) or nullish(unit) or nullish(amount) or nullish(tz):
                return None
            ms = _as_date_millis(start)
            if ms is None:
                raise MongoError(5166403, f"{name} requires startDate to be convertible to a date")
            u = _unit(unit, name)
            n = _integral(amount)
            if n is None:
                raise MongoError(5166405, f"{name} expects integer amount of time units")
            zone = parse_zone(tz, name)
            try:
                return _from_millis(date_add(ms, u, sign * n, zone))
            except (ValueError, OverflowError):
                raise MongoError(5166406, "dateAdd overflowed") from None

        return f

    return build


register("$dateAdd")(_date_arith("$dateAdd", 1))
register("$dateSubtract")(_date_arith("$dateSubtract", -1))


@register("$dateDiff")
def _date_diff_op(arg):
    a = _object_arg("$dateDiff", arg, ("startDate", "endDate", "unit", "timezone", "startOfWeek"), 5166301, 5166302)
    for k, code in (("startDate", 5166303), ("endDate", 5166304), ("unit", 5166305)):
        if k not in a:
            raise MongoError(code, f"Missing '{k}' parameter to $dateDiff")

    def f(vs):
        start, end, unit = a["startDate"](vs), a["endDate"](vs), a["unit"](vs)
        tz = a["timezone"](vs) if "timezone" in a else "UTC"
        sow = a["startOfWeek"](vs) if "startOfWeek" in a and unit == "week" else "sunday"
        if any(nullish(x) for x in (start, end, unit, tz, sow)):
            return None
        ms = {}
        for k, v in (("startDate", start), ("endDate", end)):
            ms[k] = _as_date_millis(v)
            if ms[k] is None:
                raise MongoError(5166307, f"$dateDiff requires '{k}' to be a date, but got {type_name(v)}")
        u = _unit(unit, "$dateDiff")
        zone = parse_zone(tz, "$dateDiff")
        return Int64(date_diff(ms["startDate"], ms["endDate"], u, zone, _day_of_week(sow, "$dateDiff")))

    return f


@register("$dateTrunc")
def _date_trunc_op(arg):
    a = _object_arg("$dateTrunc", arg, ("date", "unit", "binSize", "timezone", "startOfWeek"), 5439007, 5439008)
    if "date" not in a:
        raise MongoError(5439009, "Missing 'date' parameter to $dateTrunc")
    if "unit" not in a:
        raise MongoError(5439010, "Missing 'unit' parameter to $dateTrunc")

    def f(vs):
        date, unit = a["date"](vs), a["unit"](vs)
        size = a["binSize"](vs) if "binSize" in a else 1
        tz = a["timezone"](vs) if "timezone" in a else "UTC"
        sow = a["startOfWeek"](vs) if "startOfWeek" in a and unit == "week" else "sunday"
        if any(nullish(x) for x in (date, unit, size, tz, sow)):
            return None
        ms = _as_date_millis(date)
        if ms is None:
            raise MongoError(5439012, f"$dateTrunc requires 'date' to be a date, but got {type_name(date)}")
        u = _unit(unit, "$dateTrunc")
        n = _integral(size)
        if n is None:
            raise MongoError(5439017, f"$dateTrunc requires 'binSize' to be a 64-bit integer, but got value '{bson_str(size)}' of type {type_name(size)}")
        if n <= 0:
            raise MongoError(5439018, f"$dateTrunc requires 'binSize' to be greater than 0, but got value {n}")
        zone = parse_zone(tz, "$dateTrunc")
        return _from_millis(date_trunc(ms, u, n, zone, _day_of_week(sow, "$dateTrunc")))

    return f
