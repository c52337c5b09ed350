"""Trigonometric, logarithmic, bitwise and timestamp expressions.

* Trigonometry (`$sin` ... `$atanh`, `$atan2`, `$degreesToRadians`, `$radiansToDegrees`):
  a double result for int/long/double input, a decimal for decimal input; null for
  null or missing.  Out-of-domain input is error 50989 (`cannot apply $asin to 2,
  value must be in [-1,1]`), as the server's ExpressionBoundedTrigonometric checks.
* `$log [number, base]`: 28756/28757 for non-numbers, 28758 for a non-positive
  number, 28759 for a base that is not positive or is 1.
* `$bitAnd`/`$bitOr`/`$bitXor` (any number of ints/longs; an int unless a long takes
  part) and `$bitNot`: TypeMismatch for anything else.
* `$tsSecond`/`$tsIncrement`: a timestamp's parts as longs.
"""

from __future__ import annotations

import math
from decimal import Decimal

from bson import Decimal128, Int64, Timestamp
from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.expression_core import fixed_args, nullish, register, varargs
from mongosim.oplog import _dec128
from mongosim.shardsim.query.expression_numeric import numeric_kind, to_decimal128
from mongosim.shardsim.query.fmt import bson_str, query_error
from mongosim.shardsim.query.values import type_name

_INF = math.inf
_DEC = _dec128.context()

# name -> (function, domain (lo, hi, lo inclusive, hi inclusive) or None)
_TRIG = {
    "$sin": (math.sin, (-_INF, _INF, False, False)),
    "$cos": (math.cos, (-_INF, _INF, False, False)),
    "$tan": (math.tan, (-_INF, _INF, False, False)),
    "$asin": (math.asin, (-1.0, 1.0, True, True)),
    "$acos": (math.acos, (-1.0, 1.0, True, True)),
    "$atan": (math.atan, None),
    "$sinh": (math.sinh, None),
    "$cosh": (math.cosh, None),
    "$tanh": (math.tanh, None),
    "$asinh": (math.asinh, None),
    "$acosh": (math.acosh, (1.0, _INF, True, True)),
    "$atanh": (math.atanh, (-1.0, 1.0, True, True)),
    "$degreesToRadians": (math.radians, None),
    "$radiansToDegrees": (math.degrees, None),
}


def _as_float(v, kind) -> float:
    return float(v.to_decimal()) if kind == 4 else float(v)


def _fmt_bound(x):
    return "inf" if x == _INF else "-inf" if x == -_INF else repr(x).rstrip("0").rstrip(".") if isinstance(x, float) else str(x)


def _c_call(name, fn, x: float) -> float:
    """fn(x) as the C library answers it: overflow is ±Infinity (cosh: +), a domain error NaN."""
    try:
        return fn(x)
    except OverflowError:
        return _INF if name == "$cosh" else math.copysign(_INF, x)
    except ValueError:
        return math.nan


def _trig_op(name, fn, domain):
    def build(arg):
        (a,) = fixed_args(name, arg, 1)

        def f(vs):
            v = a(vs)
            if nullish(v):
                return None
            k = numeric_kind(v)
            if not k:
                raise MongoError(28765, f"{name} only supports numeric types, not {type_name(v)}")
            x = _as_float(v, k)
            if domain is not None and x == x:
                lo, hi, lo_in, hi_in = domain
                ok = (lo < x or (lo_in and x == lo)) and (x < hi or (hi_in and x == hi))
                if not ok:
                    lb, rb = "[" if lo_in else "(", "]" if hi_in else ")"
                    raise MongoError(50989, f"cannot apply {name} to {bson_str(v)}, value must be in "
                                            f"{lb}{_fmt_bound(lo)},{_fmt_bound(hi)}{rb}")
            r = _c_call(name, fn, x) if x == x else math.nan
            return Decimal128(Decimal(repr(r))) if k == 4 else r

        return f

    return build


for _name, (_fn, _domain) in _TRIG.items():
    register(_name)(_trig_op(_name, _fn, _domain))


@register("$atan2")
def _atan2(arg):
    a, b = fixed_args("$atan2", arg, 2)

    def f(vs):
        y, x = a(vs), b(vs)
        if nullish(y) or nullish(x):
            return None
        ky, kx = numeric_kind(y), numeric_kind(x)
        if not ky or not kx:
            raise MongoError(51044, f"$atan2 only supports numeric types, not {type_name(y)} and {type_name(x)}")
        r = math.atan2(_as_float(y, ky), _as_float(x, kx))
        return Decimal128(Decimal(repr(r))) if 4 in (ky, kx) else r

    return f


@register("$log")
def _log(arg):
    a, b = fixed_args("$log", arg, 2)

    def f(vs):
        x, base = a(vs), b(vs)
        if nullish(x) or nullish(base):
            return None
        kx, kb = numeric_kind(x), numeric_kind(base)
        if not kx:
            raise MongoError(28756, f"$log's argument must be numeric, not {type_name(x)}")
        if not kb:
            raise MongoError(28757, f"$log's base must be numeric, not {type_name(base)}")
        if 4 in (kx, kb):
            dx = x.to_decimal() if kx == 4 else Decimal(repr(float(x)) if kx == 3 else int(x))
            db = base.to_decimal() if kb == 4 else Decimal(repr(float(base)) if kb == 3 else int(base))
            if dx.is_nan() or not dx > 0:
                raise MongoError(28758, f"$log's argument must be a positive number, but is {bson_str(x)}")
            if db.is_nan() or not db > 0 or db == 1:
                raise MongoError(28759, f"$log's base must be a positive number not equal to 1, but is {bson_str(base)}")
            return to_decimal128(_DEC.divide(_DEC.ln(dx), _DEC.ln(db)))
        fx, fb = float(x), float(base)
        if not fx > 0:
            raise MongoError(28758, f"$log's argument must be a positive number, but is {bson_str(x)}")
        if not fb > 0 or fb == 1:
            raise MongoError(28759, f"$log's base must be a positive number not equal to 1, but is {bson_str(base)}")
        return math.log(fx) / math.log(fb)

    return f


def _bit_operand(name, v):
    if type(v) is int and -(2**31) <= v < 2**31:
        return v, False
    if type(v) is Int64 or type(v) is int:
        return int(v), True
    raise query_error("TypeMismatch", f"{name} only supports int and long operands.")


def _bitwise(name, op, unit):
    def build(arg):
        fs = varargs(arg)

        def f(vs):
            acc, wide = unit, False
            for g in fs:
                v = g(vs)
                if nullish(v):
                    return None
                n, w = _bit_operand(name, v)
                acc, wide = op(acc, n), wide or w
            return Int64(acc) if wide else acc

        return f

    return build


register("$bitAnd")(_bitwise("$bitAnd", lambda a, b: a & b, -1))
register("$bitOr")(_bitwise("$bitOr", lambda a, b: a | b, 0))
register("$bitXor")(_bitwise("$bitXor", lambda a, b: a ^ b, 0))


@register("$bitNot")
def _bit_not(arg):
    (a,) = fixed_args("$bitNot", arg, 1)

    def f(vs):
        v = a(vs)
        if nullish(v):
            return None
        n, wide = _bit_operand("$bitNot", v)
        return Int64(~n) if wide else ~n

    return f


def _ts_part(name, code, part):
    def build(arg):
        (a,) = fixed_args(name, arg, 1)

        def f(vs):
            v = a(vs)
            if nullish(v):
                return None
            if type(v) is not Timestamp:
                raise MongoError(code, f"Argument to {name} must be a timestamp, but is {type_name(v)}")
            return Int64(part(v))

        return f

    return build


register("$tsSecond")(_ts_part("$tsSecond", 5687301, lambda t: t.time))
register("$tsIncrement")(_ts_part("$tsIncrement", 5687302, lambda t: t.inc))
