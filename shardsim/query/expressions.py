"""Aggregation expressions (`$expr`, `$project`, `$addFields`, `$group`, ...).

An expression is evaluated against a document and yields a value:

* `"$a.b"` – a field path on `$$CURRENT`; through arrays it *maps*
  (`{a: [{b: 1}, {b: 2}]}` gives `[1, 2]`) — unlike query paths.
* `"$$var"`, `"$$var.path"` – variables: ROOT, CURRENT, REMOVE (a missing
  value: a field set to it disappears), NOW, CLUSTER_TIME, DESCEND/PRUNE/KEEP
  ($redact), and those bound by `$let`, `$map`, `$filter`, `$reduce`.
* `{$op: args}` – an operator; `{a: <expr>, ...}` – an object built from
  expressions; `[...]` – an array; anything else is a constant.

"Missing" (a path that does not exist) is distinct from null: it sorts
below null, `$eq: ["$x", null]` is false for a missing `x`, and a field whose
value is missing is omitted from the object being built.  Most operators
return null when an argument is null or missing.

Expressions compile once into closures `f(vars) -> value`; `compile_expression`
returns `expr(doc, variables=None)`.  The compiler and the operator registry live
in `expression_core`; importing this module registers every operator family
(this module's general ones, then `expression_accumulator`, `expression_set`,
`expression_date`, ...).  Error codes follow the server
(src/mongo/db/pipeline/expression.cpp): e.g. 16554 `$add only supports
numeric or date types`, 16608 `can't $divide by zero`, 168
`Unrecognized expression '$foo'`.

Hand-written: no maintained Python library evaluates MongoDB aggregation
expressions (mongomock's implementation is test-only and partial).
"""

from __future__ import annotations

import datetime
import math
import random
import re
from decimal import Decimal
from typing import Any, Callable

from bson import Decimal128, Int64, ObjectId, Regex, Timestamp
from bson.datetime_ms import DatetimeMS
from mongosim.oplog import _dec128
from mongosim.oplog.bsonutil import encode
from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.buf_builder import StringBuilderSize
from mongosim.shardsim.query.document_metadata import meta_value, parse_meta
from mongosim.shardsim.query.collation import comparison_keys, expression_context
from mongosim.shardsim.query.expression_core import (  # noqa: F401  (re-exported)
    _DESCEND,
    _KEEP,
    _PRUNE,
    DESCEND,
    KEEP,
    OPS as _OPS,
    PRUNE,
    compile_expression,
    compile_node as _compile,
    evaluate,
    field_path_get,
    fixed_args as _args,
    nullish as _nullish,
    register as _op,
    to_bool,
    varargs as _varargs,
)
from mongosim.shardsim.query.expression_convert import to_string as _to_string
from mongosim.shardsim.query.expression_numeric import (
    as_decimal as _as_dec,
    numeric_kind as _kind,
    coerce_to_long as _coerce_to_long,
    int_to_double as _int_to_double,
    integral32 as _integral32,
    numeric_result as _num_result,
    to_decimal128 as _to_dec128,
)
from mongosim.shardsim.query.fmt import bson_str, query_error, value_str
from mongosim.shardsim.query.summation import DoubleDoubleSummation
from mongosim.shardsim.query.values import (
    MISSING,
    date_millis,
    is_number,
    type_name,
)

_DEC = _dec128.context()

__all__ = ["compile_expression", "to_bool", "evaluate", "field_path_get", "KEEP", "PRUNE", "DESCEND"]


@_op("$literal")
def _literal(arg):
    return lambda vs: arg


@_op("$rand")
def _rand(arg):
    """A double in [0, 1), drawn at each evaluation (ExpressionRandom)."""
    if arg != {}:
        raise MongoError(3040501, "$rand does not currently accept arguments")
    return lambda vs: random.random()


@_op("$meta")
def _meta(arg):
    """The document's metadata (`shardsim.query.document_metadata`): its text score, its distance..."""
    name = parse_meta(arg)
    return lambda vs: meta_value(vs["ROOT"], name)


# --- comparison ------------------------------------------------------------------


def _cmp_factory(name, test):
    def build(arg):
        a, b = _args(name, arg, 2)
        cmp = comparison_keys.compare_for(expression_context.current())  # the command's collation
        return lambda vs: test(cmp(a(vs), b(vs)))

    return build


for _n, _t in (
    ("$eq", lambda c: c == 0),
    ("$ne", lambda c: c != 0),
    ("$gt", lambda c: c > 0),
    ("$gte", lambda c: c >= 0),
    ("$lt", lambda c: c < 0),
    ("$lte", lambda c: c <= 0),
):
    _OPS[_n] = _cmp_factory(_n, _t)


@_op("$cmp")
def _cmp(arg):
    a, b = _args("$cmp", arg, 2)
    cmp = comparison_keys.compare_for(expression_context.current())
    return lambda vs: cmp(a(vs), b(vs))


# --- boolean ---------------------------------------------------------------------


@_op("$and")
def _and(arg):
    fs = _varargs(arg)
    return lambda vs: all(to_bool(f(vs)) for f in fs)


@_op("$or")
def _or(arg):
    fs = _varargs(arg)
    return lambda vs: any(to_bool(f(vs)) for f in fs)


@_op("$not")
def _not(arg):
    (a,) = _args("$not", arg, 1)
    return lambda vs: not to_bool(a(vs))


# --- conditionals ----------------------------------------------------------------


@_op("$cond")
def _cond(arg):
    if isinstance(arg, dict):
        for k in arg:
            if k not in ("if", "then", "else"):
                raise MongoError(17083, f"Unrecognized parameter to $cond: {k}")
        for k in ("if", "then", "else"):
            if k not in arg:
                raise MongoError(17080 + ("if", "then", "else").index(k), f"Missing '{k}' parameter to $cond")
        c, t, e = _compile(arg["if"]), _compile(arg["then"]), _compile(arg["else"])
    else:
        c, t, e = _args("$cond", arg, 3)
    return lambda vs: t(vs) if to_bool(c(vs)) else e(vs)


@_op("$ifNull")
def _if_null(arg):
    if not isinstance(arg, list) or len(arg) < 2:
        raise MongoError(1257300, "$ifNull needs at least two arguments, had: " + str(len(arg) if isinstance(arg, list) else 1))
    fs = [_compile(a) for a in arg]

    def f(vs):
        for g in fs[:-1]:
            v = g(vs)
            if v is not None and v is not MISSING:
                return v
        return fs[-1](vs)

    return f


@_op("$switch")
def _switch(arg):
    if not isinstance(arg, dict):
        raise MongoError(40060, f"$switch requires an object as an argument, found: {type_name(arg)}")
    branches = []
    for br in arg.get("branches", []):
        if not isinstance(br, dict) or "case" not in br or "then" not in br:
            raise MongoError(40064, "$switch requires each branch have a 'case' expression")
        branches.append((_compile(br["case"]), _compile(br["then"])))
    if not branches:
        raise MongoError(40068, "$switch requires at least one branch.")
    default = _compile(arg["default"]) if "default" in arg else None

    def f(vs):
        for c, t in branches:
            if to_bool(c(vs)):
                return t(vs)
        if default is None:
            raise MongoError(40066, "$switch could not find a matching branch for an input, and no default was specified.")
        return default(vs)

    return f


# --- arithmetic ------------------------------------------------------------------


@_op("$add")
def _add(arg):
    fs = _varargs(arg)

    def f(vs):
        vals = [g(vs) for g in fs]
        total_kind = 1
        date = None
        for v in vals:
            if _nullish(v):
                return None
            if isinstance(v, datetime.datetime):
                if date is not None:
                    raise MongoError(16612, "only one date allowed in an $add expression")
                date = v
                continue
            k = _kind(v)
            if k == 0:
                raise MongoError(16554, f"$add only supports numeric or date types, not {type_name(v)}")
            total_kind = max(total_kind, k)
        nums = [v for v in vals if not isinstance(v, datetime.datetime)]
        if total_kind == 4:
            r = Decimal(0)
            for v in nums:  # (in the decimal128 context: Infinity - Infinity is NaN, not an exception)
                r = _DEC.add(r, _as_dec(v))
        elif total_kind == 3:  # (ExpressionAdd sums non-decimals with DoubleDoubleSummation)
            dd = DoubleDoubleSummation()
            for v in nums:
                if type(v) is float:
                    dd.add_double(v)
                else:
                    dd.add_int(int(v))
            r = dd.get_double()
        else:
            r = sum(int(v) for v in nums)
        if date is not None:
            return _date_plus(date, r, total_kind, "date overflow in $add")
        return _num_result(r, total_kind)

    return f


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _millis_date(ms: int):
    """A date from milliseconds since the epoch: a datetime, or a DatetimeMS beyond year 9999."""
    try:
        return datetime.datetime(1970, 1, 1) + datetime.timedelta(milliseconds=ms)
    except OverflowError:
        return DatetimeMS(ms)


def _date_plus(date, r, kind, message):
    """Date + number, the number's kind deciding (ExpressionAdd's AddState, evaluateSubtract):
    an integer or a double (rounded half away from zero, llround) must keep the milliseconds in
    int64, else Overflow `message`; a decimal is not checked by $add (Decimal128::toLong answers
    the smallest long for what it cannot convert) and is by $subtract."""
    if kind == 4:
        d = r if isinstance(r, Decimal) else _as_dec(r)
        add = int(d.to_integral_value(rounding="ROUND_HALF_EVEN")) if d.is_finite() else None
        if message == "date overflow in $add":
            ms = date_millis(date) + add if add is not None else _INT64_MIN
            return _millis_date(ms if _INT64_MIN <= ms <= _INT64_MAX else _INT64_MIN)
        if add is None:
            raise MongoError("Overflow", message)
    elif kind == 3:
        if not math.isfinite(r) or not (-(2.0**63) <= r < 2.0**63):
            raise MongoError("Overflow", message)
        add = int(math.copysign(math.floor(abs(r) + 0.5), r))
    else:
        add = int(r)
    ms = date_millis(date) + add
    if not _INT64_MIN <= ms <= _INT64_MAX:
        raise MongoError("Overflow", message)
    return _millis_date(ms)


@_op("$subtract")
def _subtract(arg):
    a, b = _args("$subtract", arg, 2)

    def f(vs):
        x, y = a(vs), b(vs)
        if _nullish(x) or _nullish(y):
            return None
        if isinstance(x, datetime.datetime):
            if isinstance(y, datetime.datetime):
                return Int64(date_millis(x) - date_millis(y))
            ky = _kind(y)
            if ky:
                return _date_plus(x, -y if ky == 3 else -_as_dec(y) if ky == 4 else -int(y), ky, "date overflow")
        kx, ky = _kind(x), _kind(y)
        if not kx or not ky:
            raise MongoError(16556, f"cant $subtract a {type_name(y)} from a {type_name(x)}")
        k = max(kx, ky)
        if k == 4:
            return _num_result(_DEC.subtract(_as_dec(x), _as_dec(y)), 4)
        if k == 3:
            return float(x) - float(y)
        return _num_result(int(x) - int(y), k)

    return f


@_op("$multiply")
def _multiply(arg):
    fs = _varargs(arg)

    def f(vs):
        vals = [g(vs) for g in fs]
        k = 1
        for v in vals:
            if _nullish(v):
                return None
            kv = _kind(v)
            if not kv:
                raise MongoError(16555, f"$multiply only supports numeric types, not {type_name(v)}")
            k = max(k, kv)
        if k == 4:
            r = Decimal(1)
            for v in vals:
                r = _DEC.multiply(r, _as_dec(v))
            return _num_result(r, 4)
        if k == 3:
            r = 1.0
            for v in vals:
                r *= float(v)
            return r
        r = 1
        for v in vals:
            r *= int(v)
        return _num_result(r, k)

    return f


@_op("$divide")
def _divide(arg):
    a, b = _args("$divide", arg, 2)

    def f(vs):
        x, y = a(vs), b(vs)
        if _nullish(x) or _nullish(y):
            return None
        kx, ky = _kind(x), _kind(y)
        if not kx or not ky:
            raise MongoError(16609, f"$divide only supports numeric types, not {type_name(x)} and {type_name(y)}")
        if (ky == 4 and y.to_decimal() == 0) or (ky != 4 and float(y) == 0):
            raise MongoError(16608, "can't $divide by zero")
        if kx == 4 or ky == 4:
            return _to_dec128(_DEC.divide(_as_dec(x), _as_dec(y)))
        return float(x) / float(y)

    return f


@_op("$mod")
def _mod(arg):
    a, b = _args("$mod", arg, 2)

    def f(vs):
        x, y = a(vs), b(vs)
        if _nullish(x) or _nullish(y):
            return None
        kx, ky = _kind(x), _kind(y)
        if not kx or not ky:
            raise MongoError(16611, f"$mod only supports numeric types, not {type_name(x)} and {type_name(y)}")
        if (ky == 4 and y.to_decimal() == 0) or (ky != 4 and float(y) == 0):
            raise MongoError(16610, "can't $mod by zero")
        k = max(kx, ky)
        if k == 4:
            return _to_dec128(_DEC.remainder(_as_dec(x), _as_dec(y)))
        if k == 3:
            fx, fy = float(x), float(y)
            if not math.isfinite(fx) or fy != fy:
                return math.nan  # (C's fmod; Python raises)
            return math.fmod(fx, fy)
        r = abs(int(x)) % abs(int(y))
        return _num_result(-r if int(x) < 0 else r, k)

    return f


def _unary_num(name, fn, *, keep_int=False):
    def build(arg):
        (a,) = _args(name, arg, 1)

        def f(vs):
            x = a(vs)
            if _nullish(x):
                return None
            k = _kind(x)
            if not k:
                raise MongoError(28765, f"{name} only supports numeric types, not {type_name(x)}")
            if keep_int and k in (1, 2):
                return fn(x)
            if k == 4:
                return _to_dec128(fn(x.to_decimal()))
            return fn(float(x))

        return f

    return build


def _abs(x):
    """ExpressionAbs: an int's absolute value may widen to a long; the smallest long has none (28680)."""
    if isinstance(x, int):
        if int(x) == _INT64_MIN:
            raise MongoError(28680, "can't take $abs of long long min")
        return _num_result(abs(int(x)), _kind(x))
    return abs(x)


_OPS["$abs"] = _unary_num("$abs", _abs, keep_int=True)
_OPS["$ceil"] = _unary_num("$ceil", lambda x: x if isinstance(x, int) else float(math.ceil(x)) if math.isfinite(x) else x, keep_int=True)
_OPS["$floor"] = _unary_num("$floor", lambda x: x if isinstance(x, int) else float(math.floor(x)) if math.isfinite(x) else x, keep_int=True)
def _exp(x):
    """std::exp / Decimal128::exponential: overflow gives Infinity, not an error."""
    if isinstance(x, Decimal):
        return _DEC.exp(x)
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


def _log_like(name, code, fn):
    """$ln/$log10 (ExpressionLn, ExpressionLog10): a positive argument or NaN, else `code`."""
    def g(x):
        if isinstance(x, Decimal):
            if x.is_nan() or x > 0:
                return _DEC.ln(x) if name == "$ln" else _DEC.log10(x)
            x = float(x)
        if not (x > 0 or x != x):
            raise MongoError(code, f"{name}'s argument must be a positive number, but is {x:g}")  # (str::stream << double)
        return fn(x) if x == x and x != math.inf else x

    return g


def _sqrt(x):
    """ExpressionSqrt: 28714 for a negative argument; NaN passes through."""
    if x != x:
        return x
    if x < 0:
        raise MongoError(28714, "$sqrt's argument must be greater than or equal to 0")
    if isinstance(x, Decimal):
        return _DEC.sqrt(x)
    return math.sqrt(x) if x == x else x


_OPS["$sqrt"] = _unary_num("$sqrt", _sqrt)
_OPS["$exp"] = _unary_num("$exp", _exp)
_OPS["$ln"] = _unary_num("$ln", _log_like("$ln", 28766, math.log))
_OPS["$log10"] = _unary_num("$log10", _log_like("$log10", 28761, math.log10))


def _round_like(name, mode):
    """ExpressionRound/ExpressionTrunc (evaluateRoundOrTrunc in expression.cpp).

    The precision is coerced to a long (16004, 31109), then must be a whole 32-bit number
    (51082) in [-20, 100] (51083).  A double is taken
    as a 34-digit decimal and quantized to 10^-place; a decimal is quantized as it is; an
    int/long only changes for a negative place (51080 when the result leaves int64).
    Decimal128::quantize keeps the value (at 34 digits) when the quantum is more than 33
    digits below it, so `{$round: [1e300, 2]}` is 1e300; infinities and NaN stay.
    """
    rounding = "ROUND_HALF_EVEN" if mode == "round" else "ROUND_DOWN"

    def quantize(d: Decimal, place: int) -> Decimal:
        if not d.is_finite():
            return d
        if d and d.adjusted() + place > 33:
            return _dec128.normalize(d)
        return _dec128.context(rounding).quantize(d, Decimal(1).scaleb(-place))

    def build(arg):
        fs = _args(name, arg, 1, 2)

        def f(vs):
            x = fs[0](vs)
            if _nullish(x):
                return None
            k = _kind(x)
            if not k:
                raise MongoError(51081, f"{name} only supports numeric types, not {type_name(x)}")
            place = 0
            if len(fs) > 1:
                pv = fs[1](vs)
                if _nullish(pv):
                    return None
                place = _coerce_to_long(pv)  # (16004 for a non-number, 31109 out of int64)
                if _integral32(pv) is None:
                    raise MongoError(51082, f"precision argument to  {name} must be a integral value")
                if not -20 <= place <= 100:
                    raise MongoError(51083, f"cannot apply {name} with precision value {place} value must be in [-20, 100]")
            if k == 4:
                return Decimal128(quantize(x.to_decimal(), place))
            if k == 3:
                if not math.isfinite(x):
                    return x
                return float(quantize(_dec128.from_double(x, 34, _dec128.HALF_EVEN), place))
            if place >= 0:
                return x
            r = int(quantize(Decimal(int(x)), place))
            if not _INT64_MIN <= r <= _INT64_MAX:
                raise MongoError(51080, f"invalid conversion from Decimal128 result in {name} resulting from "
                                        f"arguments: [{int(x)}, {place}]")
            return Int64(r) if k == 2 or r > 2**31 - 1 else r

        return f

    return build


_OPS["$round"] = _round_like("$round", "round")
_OPS["$trunc"] = _round_like("$trunc", "trunc")


# Per exponent 0..63, the bases whose power fits a long (ExpressionPow's representableAsLong):
# the largest b with b**e <= 2**63 - 1 and the smallest with b**e >= -2**63.
def _pow_base_limits():
    out = [(_INT64_MIN, _INT64_MAX), (_INT64_MIN, _INT64_MAX)]
    for e in range(2, 64):
        hi = int(round(_INT64_MAX ** (1.0 / e)))
        while hi ** e > _INT64_MAX:
            hi -= 1
        while (hi + 1) ** e <= _INT64_MAX:
            hi += 1
        if e % 2:
            lo = -hi
            while (lo - 1) ** e >= _INT64_MIN:
                lo -= 1
        else:
            lo = -hi
        out.append((lo, hi))
    return out


_POW_LIMITS = _pow_base_limits()


def _c_pow(x: float, y: float) -> float:
    """std::pow: overflow is ±Infinity, a negative base with a fractional exponent NaN."""
    try:
        r = x ** y
    except OverflowError:
        neg = x < 0 and y == int(y) and int(y) % 2 == 1
        return -math.inf if neg else math.inf
    except ZeroDivisionError:  # (0.0 ** negative; refused before, kept for -0.0 edge cases)
        return math.inf
    return math.nan if type(r) is complex else r


@_op("$pow")
def _pow(arg):
    """ExpressionPow: a decimal if either is a decimal, a double if either is a double (std::pow);
    two integers stay a long (an int if both are ints and it fits) when the power fits int64
    (bases -1, 0, 1 always; others by exponent 0..63 and the base limits), else a double."""
    a, b = _args("$pow", arg, 2)

    def f(vs):
        x, y = a(vs), b(vs)
        if _nullish(x) or _nullish(y):
            return None
        kx, ky = _kind(x), _kind(y)
        if not kx:
            raise MongoError(28762, f"$pow's base must be numeric, not {type_name(x)}")
        if not ky:
            raise MongoError(28763, f"$pow's exponent must be numeric, not {type_name(y)}")
        k = max(kx, ky)
        if k == 4:
            dx, dy = _as_dec(x), _as_dec(y)
            if dx.is_zero() and dy < 0:
                raise MongoError(28764, "$pow cannot take a base of 0 and a negative exponent")
            return Decimal128(_dec128.normalize(_DEC.power(dx, dy)) if dx.is_finite() or dy.is_finite() else _DEC.power(dx, dy))
        fx, fy = float(x), float(y)
        if fx == 0 and fy < 0:
            raise MongoError(28764, "$pow cannot take a base of 0 and a negative exponent")
        if k == 3:
            return _c_pow(fx, fy)
        bx, ey = int(x), int(y)

        def fmt(r):
            return Int64(r) if k == 2 else (r if -(2**31) <= r < 2**31 else Int64(r))

        if bx in (0, 1):
            return fmt(1 if ey == 0 or bx == 1 else 0)
        if bx == -1:
            return fmt(1 if ey % 2 == 0 else -1)
        if ey > 63 or ey < 0:
            return _c_pow(fx, fy)
        lo, hi = _POW_LIMITS[ey]
        if not lo <= bx <= hi:
            return _c_pow(fx, fy)
        return fmt(bx ** ey)

    return f


# --- strings ---------------------------------------------------------------------


@_op("$concat")
def _concat(arg):
    fs = _varargs(arg)

    def f(vs):
        out = []
        size = StringBuilderSize()  # (the server's StringBuilder stops at 64 MiB: 13548)
        for g in fs:
            v = g(vs)
            if _nullish(v):
                return None
            if type(v) is not str:
                raise MongoError(16702, f"$concat only supports strings, not {type_name(v)}")
            size.append(v)
            out.append(v)
        return "".join(out)

    return f


def _coerce_str(name, v, code=16007):
    if _nullish(v):
        return ""
    if type(v) is str:
        return v
    if is_number(v):
        return _to_string(v)
    if isinstance(v, datetime.datetime):
        return _to_string(v)
    raise MongoError(code, f"can't convert from BSON type {type_name(v)} to String")


def _str_unary(name, fn):
    def build(arg):
        (a,) = _args(name, arg, 1)
        return lambda vs: fn(_coerce_str(name, a(vs)))

    return build


_OPS["$toLower"] = _str_unary("$toLower", lambda s: s.lower() if s.isascii() else "".join(c.lower() if c.isascii() else c for c in s))
_OPS["$toUpper"] = _str_unary("$toUpper", lambda s: s.upper() if s.isascii() else "".join(c.upper() if c.isascii() else c for c in s))


@_op("$strLenBytes")
def _strlen_bytes(arg):
    (a,) = _args("$strLenBytes", arg, 1)

    def f(vs):
        v = a(vs)
        if type(v) is not str:
            raise MongoError(34473, f"$strLenBytes requires a string argument, found: {type_name(v)}")
        return len(v.encode("utf-8"))

    return f


@_op("$strLenCP")
def _strlen_cp(arg):
    (a,) = _args("$strLenCP", arg, 1)

    def f(vs):
        v = a(vs)
        if type(v) is not str:
            raise MongoError(34471, f"$strLenCP requires a string argument, found: {type_name(v)}")
        return len(v)

    return f


def _substr_build(name, by_bytes):
    def build(arg):
        s, i, n = _args(name, arg, 3)

        def f(vs):
            st = _coerce_str(name, s(vs))
            start, cnt = i(vs), n(vs)
            if not by_bytes:  # (ExpressionSubstrCP: 32-bit integral values, 34450..34453)
                for v, what, c_num, c_int in ((start, "starting index", 34450, 34451), (cnt, "length", 34452, 34453)):
                    if not is_number(v):
                        raise MongoError(c_num, f"{name}: {what} must be a numeric type (is BSON type {type_name(v)})")
                    if _integral32(v) is None:
                        raise MongoError(c_int, f"{name}: {what} cannot be represented as a 32-bit integral value: {value_str(v)}")
            if not is_number(start):
                raise MongoError(16034, f"{name}:  starting index must be a numeric type (is BSON type {type_name(start)})")
            if not is_number(cnt):
                raise MongoError(16035, f"{name}:  length must be a numeric type (is BSON type {type_name(cnt)})")
            start, cnt = _coerce_to_long(start), _coerce_to_long(cnt)
            if by_bytes:
                b = st.encode("utf-8")
                if start < 0 or start >= len(b):
                    return ""
                end = len(b) if cnt < 0 else start + cnt
                try:
                    return b[start:end].decode("utf-8")
                except UnicodeDecodeError:
                    raise MongoError(28656, f"{name}:  Invalid range, starting index is a UTF-8 continuation byte.") from None
            if start < 0:
                raise MongoError(34455, f"{name}: starting index must be non-negative (got: {start})")
            if cnt < 0:
                raise MongoError(34456, f"{name}: length must be a nonnegative integer.")
            return st[start:start + cnt]

        return f

    return build


_OPS["$substr"] = _substr_build("$substr", True)
_OPS["$substrBytes"] = _substr_build("$substrBytes", True)
_OPS["$substrCP"] = _substr_build("$substrCP", False)


@_op("$split")
def _split(arg):
    a, b = _args("$split", arg, 2)

    def f(vs):
        s, d = a(vs), b(vs)
        if _nullish(s):
            return None
        if type(s) is not str:
            raise MongoError(40085, f"$split requires an expression that evaluates to a string as a first argument, found: {type_name(s)}")
        if type(d) is not str:
            raise MongoError(40086, f"$split requires an expression that evaluates to a string as a second argument, found: {type_name(d)}")
        if d == "":
            raise MongoError(40087, "$split requires a non-empty separator")
        return s.split(d)

    return f


@_op("$strcasecmp")
def _strcasecmp(arg):
    a, b = _args("$strcasecmp", arg, 2)

    def f(vs):
        x = _coerce_str("$strcasecmp", a(vs)).upper()
        y = _coerce_str("$strcasecmp", b(vs)).upper()
        return (x > y) - (x < y)

    return f


def _trim_build(name, left, right):
    def build(arg):
        if not isinstance(arg, dict) or "input" not in arg:
            raise MongoError(50695, f"{name} requires an 'input' parameter")
        inp = _compile(arg["input"])
        chars = _compile(arg["chars"]) if "chars" in arg else None

        def f(vs):
            s = inp(vs)
            if _nullish(s):
                return None
            if type(s) is not str:
                raise MongoError(50699, f"{name} requires its input to be a string, got {bson_str(s)} (of type {type_name(s)}) instead.")
            c = chars(vs) if chars else None
            if c is None:
                c = " \t\n\v\f\r\x00\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
            if left and right:
                return s.strip(c)
            return s.lstrip(c) if left else s.rstrip(c)

        return f

    return build


_OPS["$trim"] = _trim_build("$trim", True, True)
_OPS["$ltrim"] = _trim_build("$ltrim", True, False)
_OPS["$rtrim"] = _trim_build("$rtrim", False, True)


def _index_arg(name, v, what):
    """uassertIfNotIntegralAndNonNegative: a whole 32-bit number (40096), not negative (40097)."""
    n = _integral32(v)
    if n is None:  # (the server's message has no space after the name)
        raise MongoError(40096, f"{name}requires an integral {what}, found a value of type: {type_name(v)}, "
                                f"with value: {value_str(v)}")
    if n < 0:
        raise MongoError(40097, f"{name} requires a nonnegative {what}, found: {value_str(v)}")
    return n


def _index_of_build(name, by_bytes):
    def build(arg):
        fs = _args(name, arg, 2, 4)

        def f(vs):
            s, sub = fs[0](vs), fs[1](vs)
            if _nullish(s):
                return None
            if type(s) is not str:
                raise MongoError(40091, f"{name} requires a string as the first argument, found: {type_name(s)}")
            if type(sub) is not str:
                raise MongoError(40092, f"{name} requires a string as the second argument, found: {type_name(sub)}")
            start = _index_arg(name, fs[2](vs), "starting index") if len(fs) > 2 else 0
            end = _index_arg(name, fs[3](vs), "ending index") if len(fs) > 3 else None
            if by_bytes:
                b, sb = s.encode(), sub.encode()
                return b.find(sb, start, end if end is not None else len(b))
            return s.find(sub, start, end if end is not None else len(s))

        return f

    return build


_OPS["$indexOfBytes"] = _index_of_build("$indexOfBytes", True)
_OPS["$indexOfCP"] = _index_of_build("$indexOfCP", False)


# --- arrays ----------------------------------------------------------------------


@_op("$in")
def _in(arg):
    a, b = _args("$in", arg, 2)
    key = comparison_keys.sort_key_for(expression_context.current())

    def f(vs):
        x, arr = a(vs), b(vs)
        if type(arr) is not list:
            raise MongoError(40081, f"$in requires an array as a second argument, found: {type_name(arr)}")
        k = key(x)
        return any(key(e) == k for e in arr)

    return f


@_op("$size")
def _size(arg):
    (a,) = _args("$size", arg, 1)

    def f(vs):
        v = a(vs)
        if type(v) is not list:
            raise MongoError(17124, f"The argument to $size must be an array. Type of the argument was: {type_name(v)}")
        return len(v)

    return f


@_op("$arrayElemAt")
def _array_elem_at(arg):
    a, b = _args("$arrayElemAt", arg, 2)

    def f(vs):
        arr, idx = a(vs), b(vs)
        if _nullish(arr) or _nullish(idx):
            return None
        if type(arr) is not list:
            raise MongoError(28689, f"$arrayElemAt's first argument must be an array, but is {type_name(arr)}")
        if not is_number(idx):
            raise MongoError(28690, f"$arrayElemAt's second argument must be a numeric value, but is {type_name(idx)}")
        i = _integral32(idx)
        if i is None:
            raise MongoError(28691, f"$arrayElemAt's second argument must be representable as a 32-bit integer: {value_str(idx)}")
        if i < 0:
            i += len(arr)
        return arr[i] if 0 <= i < len(arr) else MISSING

    return f


def _first_last(name, last):
    def build(arg):
        (a,) = _args(name, arg, 1)

        def f(vs):
            arr = a(vs)
            if _nullish(arr):
                return None
            if type(arr) is not list:
                raise MongoError(28689, f"{name}'s argument must be an array, but is {type_name(arr)}")
            if not arr:
                return MISSING
            return arr[-1] if last else arr[0]

        return f

    return build


_OPS["$first"] = _first_last("$first", False)
_OPS["$last"] = _first_last("$last", True)


@_op("$concatArrays")
def _concat_arrays(arg):
    fs = _varargs(arg)

    def f(vs):
        out = []
        for g in fs:
            v = g(vs)
            if _nullish(v):
                return None
            if type(v) is not list:
                raise MongoError(28664, f"$concatArrays only supports arrays, not {type_name(v)}")
            out.extend(v)
        return out

    return f


@_op("$isArray")
def _is_array(arg):
    (a,) = _args("$isArray", arg, 1)
    return lambda vs: type(a(vs)) is list


@_op("$reverseArray")
def _reverse_array(arg):
    (a,) = _args("$reverseArray", arg, 1)

    def f(vs):
        v = a(vs)
        if _nullish(v):
            return None
        if type(v) is not list:
            raise MongoError(34435, f"The argument to $reverseArray must be an array, but was of type: {type_name(v)}")
        return v[::-1]

    return f


def _slice_arg(v, which, c_num, c_int):
    """ExpressionSlice's position/count: null stays null; a number that is whole and fits 32 bits."""
    if _nullish(v):
        return None
    if not is_number(v):
        raise MongoError(c_num, f"{which} argument to $slice must be a numeric value, but is of type: {type_name(v)}")
    n = _integral32(v)
    if n is None:
        raise MongoError(c_int, f"{which} argument to $slice can't be represented as a 32-bit integer: {value_str(v)}")
    return n


@_op("$slice")
def _slice(arg):
    fs = _args("$slice", arg, 2, 3)

    def f(vs):
        arr = fs[0](vs)
        if _nullish(arr):
            return None
        if type(arr) is not list:
            raise MongoError(28724, f"First argument to $slice must be an array, but is of type: {type_name(arr)}")
        if len(fs) == 2:
            n = _slice_arg(fs[1](vs), "Second", 28725, 28726)
            if n is None:
                return None
            return arr[:n] if n >= 0 else arr[max(len(arr) + n, 0):]
        pos, n = _slice_arg(fs[1](vs), "Second", 28725, 28726), _slice_arg(fs[2](vs), "Third", 28727, 28728)
        if pos is None or n is None:
            return None
        if n <= 0:
            raise MongoError(28729, f"Third argument to $slice must be positive: {n}")
        if pos < 0:
            pos = max(len(arr) + pos, 0)
        return arr[pos:pos + n]

    return f


def _bind(spec, key, default):
    return spec.get(key, default)


@_op("$map")
def _map(arg):
    if not isinstance(arg, dict) or "input" not in arg or "in" not in arg:
        raise MongoError(16882, "Missing 'input' parameter to $map")
    inp, body = _compile(arg["input"]), _compile(arg["in"])
    name = arg.get("as", "this")

    def f(vs):
        arr = inp(vs)
        if _nullish(arr):
            return None
        if type(arr) is not list:
            raise MongoError(16883, f"input to $map must be an array not {type_name(arr)}")
        out = []
        inner = dict(vs)
        for e in arr:
            inner[name] = e
            v = body(inner)
            out.append(None if v is MISSING else v)
        return out

    return f


def _filter_limit(v):
    """ExpressionFilter's limit: null is none; else a whole 32-bit number (327391), positive (327392)."""
    if _nullish(v):
        return None
    n = _integral32(v)
    if n is None:
        raise MongoError(327391, f"$filter: limit must be represented as a 32-bit integral value: {value_str(v)}")
    if n < 1:
        raise MongoError(327392, f"$filter: limit must be greater than 0: {n}")
    return n


@_op("$filter")
def _filter(arg):
    if not isinstance(arg, dict) or "input" not in arg or "cond" not in arg:
        raise MongoError(28648, "Missing 'input' parameter to $filter")
    inp, cond = _compile(arg["input"]), _compile(arg["cond"])
    name = arg.get("as", "this")
    limit = _compile(arg["limit"]) if "limit" in arg else None

    def f(vs):
        arr = inp(vs)
        if _nullish(arr):
            return None
        if type(arr) is not list:
            raise MongoError(28651, f"input to $filter must be an array not {type_name(arr)}")
        lim = _filter_limit(limit(vs)) if limit else None
        out = []
        inner = dict(vs)
        for e in arr:
            inner[name] = e
            if to_bool(cond(inner)):
                out.append(e)
                if lim is not None and len(out) >= lim:
                    break
        return out

    return f


@_op("$reduce")
def _reduce(arg):
    if not isinstance(arg, dict) or not {"input", "initialValue", "in"} <= set(arg):
        raise MongoError(40076, "$reduce requires 'input', 'initialValue' and 'in'")
    inp, init, body = _compile(arg["input"]), _compile(arg["initialValue"]), _compile(arg["in"])

    def f(vs):
        arr = inp(vs)
        if _nullish(arr):
            return None
        if type(arr) is not list:
            raise MongoError(40080, f"$reduce requires that 'input' be an array, found: {bson_str(arr)}")
        acc = init(vs)
        inner = dict(vs)
        for e in arr:
            inner["this"] = e
            inner["value"] = acc
            acc = body(inner)
        return acc

    return f


MAX_RANGE_BYTES = 64 * 1024 * 1024  # internalQueryMaxRangeBytes
_VALUE_SIZE, _VECTOR_SIZE = 16, 24  # sizeof(Value), sizeof(std::vector<Value>)


@_op("$range")
def _range(arg):
    """ExpressionRange: start, end and step are numbers representable as 32-bit ints (34443..34448);
    the array would take `24 + length * 16` bytes, which must stay below internalQueryMaxRangeBytes
    (64 MiB) or the expression fails with ExceededMemoryLimit before building anything."""
    fs = _args("$range", arg, 2, 3)
    what = (("starting", 34443, 34444), ("ending", 34445, 34446), ("step", 34447, 34448))

    def f(vs):
        ints = []
        for g, (label, c_num, c_int) in zip(fs, what):
            v = g(vs)
            if not is_number(v):
                sep = ":" if label == "step" else ": "
                raise MongoError(c_num, f"$range requires a numeric {label} value, found value of type{sep}{type_name(v)}")
            d = _as_dec(v)
            if not d.is_finite() or d != d.to_integral_value() or not -(2**31) <= d < 2**31:
                article = "a" if label == "step" else "an" if label == "ending" else "a"
                raise MongoError(c_int, f"$range requires {article} {label} value that can be represented as a "
                                        f"32-bit integer, found value: {value_str(v)}")
            ints.append(int(d))
        step = ints[2] if len(ints) > 2 else 1
        if step == 0:
            raise MongoError(34449, "$range requires a non-zero step value")
        start, end = ints[0], ints[1]
        steps = int((end - start) / step)  # (C++ division truncates toward zero)
        length = 1 + steps if steps >= 0 else 0
        mem = _VECTOR_SIZE + length * _VALUE_SIZE
        if not mem < MAX_RANGE_BYTES:
            raise MongoError("ExceededMemoryLimit", f"$range would use too much memory ({mem} bytes) and cannot "
                                                    f"spill to disk. Memory limit: {MAX_RANGE_BYTES} bytes")
        return list(range(start, end, step))

    return f


@_op("$indexOfArray")
def _index_of_array(arg):
    fs = _args("$indexOfArray", arg, 2, 4)
    key = comparison_keys.sort_key_for(expression_context.current())

    def f(vs):
        arr, x = fs[0](vs), fs[1](vs)
        if _nullish(arr):
            return None
        if type(arr) is not list:
            raise MongoError(40090, f"$indexOfArray requires an array as a first argument, found: {type_name(arr)}")
        start = _index_arg("$indexOfArray", fs[2](vs), "starting index") if len(fs) > 2 else 0
        end = _index_arg("$indexOfArray", fs[3](vs), "ending index") if len(fs) > 3 else len(arr)
        k = key(x)
        for i in range(start, min(end, len(arr))):
            if key(arr[i]) == k:
                return i
        return -1

    return f


@_op("$arrayToObject")
def _array_to_object(arg):
    (a,) = _args("$arrayToObject", arg, 1)

    def f(vs):
        arr = a(vs)
        if _nullish(arr):
            return None
        if type(arr) is not list:
            raise MongoError(40386, f"$arrayToObject requires an array input, found: {type_name(arr)}")
        out = {}
        for e in arr:
            if type(e) is dict:
                if set(e) != {"k", "v"}:
                    raise MongoError(40392, "$arrayToObject requires an object keys of 'k' and 'v'")
                out[e["k"]] = e["v"]
            elif type(e) is list and len(e) == 2:
                out[e[0]] = e[1]
            else:
                raise MongoError(40398, "Unrecognised input type format for $arrayToObject")
        return out

    return f


@_op("$objectToArray")
def _object_to_array(arg):
    (a,) = _args("$objectToArray", arg, 1)

    def f(vs):
        o = a(vs)
        if _nullish(o):
            return None
        if not isinstance(o, dict):  # (a dict, or $$ROOT with its metadata)
            raise MongoError(40390, f"$objectToArray requires a document input, found: {type_name(o)}")
        return [{"k": k, "v": v} for k, v in o.items()]

    return f


# --- objects ---------------------------------------------------------------------


@_op("$mergeObjects")
def _merge_objects(arg):
    fs = _varargs(arg)

    def f(vs):
        out = {}
        for g in fs:
            v = g(vs)
            if _nullish(v):
                continue
            if not isinstance(v, dict):  # (a dict, or $$ROOT with its metadata)
                raise MongoError(40400, f"$mergeObjects requires object inputs, but input {bson_str(v)} is of type {type_name(v)}")
            out.update(v)
        return out

    return f


def _field_arg(name, arg):
    if isinstance(arg, str) and not arg.startswith("$"):
        return {"field": arg, "input": "$$CURRENT"}
    if not isinstance(arg, dict) or "field" not in arg:
        raise MongoError(3041702 if name == "$getField" else 4161102, f"{name} requires 'field' to be specified")
    return arg


@_op("$getField")
def _get_field(arg):
    arg = _field_arg("$getField", arg)
    field = _compile(arg["field"])
    inp = _compile(arg.get("input", "$$CURRENT"))

    def f(vs):
        name = field(vs)
        if type(name) is not str:
            raise MongoError(3041704, f"$getField requires 'field' to evaluate to type String, but got {type_name(name)}")
        o = inp(vs)
        if _nullish(o):
            return None if o is None else MISSING
        if not isinstance(o, dict):
            return MISSING
        return o.get(name, MISSING)

    return f


@_op("$setField")
def _set_field(arg):
    if not isinstance(arg, dict) or not {"field", "input", "value"} <= set(arg):
        raise MongoError(4161102, "$setField requires 'field', 'input' and 'value' to be specified")
    field, inp, val = _compile(arg["field"]), _compile(arg["input"]), _compile(arg["value"])

    def f(vs):
        name = field(vs)
        o = inp(vs)
        if _nullish(o):
            return None
        if not isinstance(o, dict):
            raise MongoError(4161105, f"$setField requires 'input' to evaluate to type Object")
        out = dict(o)
        v = val(vs)
        if v is MISSING:
            out.pop(name, None)
        else:
            out[name] = v
        return out

    return f


@_op("$unsetField")
def _unset_field(arg):
    if not isinstance(arg, dict):
        raise MongoError(4161102, "$unsetField requires 'field' and 'input'")
    return _set_field({"field": arg.get("field"), "input": arg.get("input"), "value": "$$REMOVE"})


@_op("$let")
def _let(arg):
    if not isinstance(arg, dict) or "vars" not in arg or "in" not in arg:
        raise MongoError(16712, "Missing 'vars' parameter to $let")
    defs = [(k, _compile(v)) for k, v in arg["vars"].items()]
    body = _compile(arg["in"])

    def f(vs):
        inner = dict(vs)
        for k, g in defs:
            inner[k] = g(vs)
        return body(inner)

    return f


# --- types and conversions -------------------------------------------------------


@_op("$type")
def _type(arg):
    (a,) = _args("$type", arg, 1)
    return lambda vs: type_name(a(vs))


@_op("$binarySize")
def _binary_size(arg):
    (a,) = _args("$binarySize", arg, 1)

    def f(vs):
        v = a(vs)
        if _nullish(v):
            return None
        if type(v) is str:
            return len(v.encode("utf-8"))
        if isinstance(v, bytes):  # (bson.Binary is a bytes)
            return len(v)
        raise MongoError(51276, f"$binarySize requires a string or BinData argument, found: {type_name(v)}")

    return f


@_op("$bsonSize")
def _bson_size(arg):
    (a,) = _args("$bsonSize", arg, 1)

    def f(vs):
        v = a(vs)
        if _nullish(v):
            return None
        if not isinstance(v, dict):  # (a dict, or $$ROOT with its metadata)
            raise MongoError(31393, f"$bsonSize requires a document input, found: {type_name(v)}")
        return len(encode(v))

    return f


@_op("$isNumber")
def _is_number(arg):
    (a,) = _args("$isNumber", arg, 1)
    return lambda vs: is_number(a(vs))


@_op("$toHashedIndexKey")
def _not_supported(arg):  # pragma: no cover
    raise MongoError("NotImplemented", "$toHashedIndexKey is not supported by mongosim")


# --- the other operator families register themselves on import -------------------

from mongosim.shardsim.query import (  # noqa: E402,F401  (registration)
    expression_accumulator,
    expression_array,
    expression_date,
    expression_function,
    expression_math,
    expression_regex,
    expression_set,
)
