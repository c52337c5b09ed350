"""Window functions: the output operators of `$setWindowFields` (window_function_expression.h/.cpp).

`parse_window_function(field, spec, sort_by, ctx)` reads one output field's specification
(`{$sum: "$x", window: {documents: [-1, 1]}}`) as window_function::Expression::parse does and
returns a `WindowFunction`: `compute(docs, keys, variables) -> [value per document]` over one
partition (documents in sortBy order; `keys`: their sortBy values, for range windows).

The kinds, each with the server's argument checks (FailedToParse messages, and the codes
5371601-5371603, 605001, 5490710 the server gives):

- accumulators over a window (`$sum $avg $min $max $push $addToSet $stdDevPop $stdDevSamp
  $covariancePop $covarianceSamp $count` and the n-ary `$minN $maxN $firstN $lastN $topN $bottomN
  $top $bottom`, `$median $percentile`, `$integral`): the accumulator folds the values of the
  window's documents (accumulators.py's states; the window function's own for covariance and
  integral).  Empty windows give the accumulator's empty value ($sum 0, $push [], others null).
  A window whose first document stays put while its last only grows (left-unbounded windows)
  keeps one state and adds to it, as the server's non-removable executors do; any other window
  is folded afresh for each document (the server removes values from a removable state: same
  results; `$addToSet` then lists its set in value order, the server's ordered multiset);
- endpoint functions: `$first`/`$last` (the value at the window's first/last document, null when
  empty), `$shift` (the document `by` positions away, else `default`), `$derivative` (rise over run
  between the window's endpoints);
- running functions over the partition so far: `$rank`, `$denseRank`, `$documentNumber` (by the
  sortBy value), `$locf`, `$expMovingAvg` (N or alpha), and `$linearFill` (between the nearest
  non-null neighbours).
"""

from __future__ import annotations

import datetime
import math
from decimal import Decimal
from typing import Any, Callable

from bson import Decimal128, Int64
from mongosim.oplog import _dec128
from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.accumulators import ACCUMULATORS, Sum, parse_percentile_spec, percentile_of, to_double
from mongosim.shardsim.query.collation import sort_key_for
from mongosim.shardsim.query.expression_numeric import as_decimal
from mongosim.shardsim.query.expressions import compile_expression, field_path_get
from mongosim.shardsim.query.fmt import bson_str
from mongosim.shardsim.query.sorting import sort_key_values
from mongosim.shardsim.query.values import MISSING, compare, is_number, type_name
from mongosim.shardsim.query.variables import constant_value
from mongosim.shardsim.query.window_bounds import (
    DEFAULT_BOUNDS,
    LEFT_UNBOUNDED_TO_CURRENT,
    WindowBounds,
    endpoints,
    parse_bounds,
    parse_time_unit,
)

__all__ = ["WindowFunction", "parse_window_function", "WINDOW_FUNCTIONS", "arith"]

_DEC = _dec128.context()
_ARITH: dict[str, Callable] = {}


_TYPE_ERRORS = frozenset({16554, 16556, 16555, 16609, 16612})


def arith(op: str, a, b):
    """`{op: [a, b]}` with the expression's own type rules ($add, $subtract, $multiply, $divide).  A type
    error is TypeMismatch, as the server's ExpressionAdd::apply & co. return it to the window functions."""
    f = _ARITH.get(op)
    if f is None:
        f = _ARITH[op] = compile_expression({op: ["$$a", "$$b"]})
    try:
        return f({}, {"a": a, "b": b})
    except MongoError as e:
        if e.code in _TYPE_ERRORS:
            raise MongoError("TypeMismatch", e.errmsg) from None
        raise


def _serialize_input(e: Any) -> Any:
    """An input expression in explain form (a constant as `{$const: v}`)."""
    if isinstance(e, str) and e.startswith("$"):
        return e
    if isinstance(e, (dict, list)):
        return e
    return {"$const": e}


class WindowFunction:
    """One output field: its operator, bounds and how to compute a partition's values."""

    name: str
    bounds: WindowBounds = DEFAULT_BOUNDS

    def compute(self, docs: list, keys: list | None, variables: dict | None) -> list:
        raise NotImplementedError

    def serialize(self) -> dict:
        raise NotImplementedError


# --- accumulators over windows ------------------------------------------------------------


class _Covariance:
    """WindowFunctionCovariance: pairs [x, y] of numbers (others ignored)."""

    __slots__ = ("samp", "pairs")

    def __init__(self, samp: bool) -> None:
        self.samp = samp
        self.pairs: list = []

    def add(self, v) -> None:
        if type(v) is list and len(v) == 2 and all(is_number(x) and type(x) is not bool for x in v):
            self.pairs.append(v)

    def result(self):
        decimal = any(type(x) is Decimal128 for p in self.pairs for x in p)
        finite = [p for p in self.pairs if all(math.isfinite(to_double(x)) for x in p)]
        odd = [p for p in self.pairs if p not in finite]
        if odd:
            nan = any(to_double(x) != to_double(x) for p in odd for x in p)
            signs = {math.copysign(1, to_double(x)) for p in odd for x in p if math.isinf(to_double(x))}
            if nan or len(signs) > 1:
                return Decimal128("NaN") if decimal else math.nan
            inf = signs.pop() > 0
            return Decimal128("Infinity" if inf else "-Infinity") if decimal else (math.inf if inf else -math.inf)
        n = len(finite)
        if n == 1 and not self.samp:
            return 0.0
        adjusted = n - 1 if self.samp else n
        if adjusted <= 0:
            return None
        if decimal:
            xs = [as_decimal(p[0]) for p in finite]
            ys = [as_decimal(p[1]) for p in finite]
            mx = sum(xs, Decimal(0)) / n
            my = sum(ys, Decimal(0)) / n
            c = sum(((x - mx) * (y - my) for x, y in zip(xs, ys)), Decimal(0))
            return Decimal128(_DEC.divide(c, Decimal(adjusted)))
        xs = [to_double(p[0]) for p in finite]
        ys = [to_double(p[1]) for p in finite]
        mx = math.fsum(xs) / n
        my = math.fsum(ys) / n
        return math.fsum((x - mx) * (y - my) for x, y in zip(xs, ys)) / adjusted


class _Integral:
    """WindowFunctionIntegral: the trapezoidal rule over [sortBy value, input] points."""

    __slots__ = ("unit_ms", "points")

    def __init__(self, unit_ms: int | None) -> None:
        self.unit_ms = unit_ms
        self.points: list = []

    def add(self, v) -> None:
        x, y = v
        ok = is_number(y) and (is_number(x) or isinstance(x, datetime.datetime))
        if not ok:
            raise MongoError(5423900, "The input value of $integral window function must be a vector of 2 value, the "
                                      "first value must be numeric or date type and the second must be numeric.")
        if self.unit_ms is not None and not isinstance(x, datetime.datetime):
            raise MongoError(5423901, "$integral with 'outputUnit' expects the sortBy field to be a Date")
        if self.unit_ms is None and not is_number(x):
            raise MongoError(5423902, "$integral (with no 'outputUnit') expects the sortBy field to be numeric")
        self.points.append((x, y))

    def result(self):
        pts = self.points
        if not pts:
            return None
        if any(is_number(c) and to_double(c) != to_double(c) for p in pts for c in p):
            return math.nan
        total = Sum()
        for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
            part = arith("$divide", arith("$multiply", arith("$add", y1, y0), arith("$subtract", x1, x0)), 2.0)
            total.add(part)
        r = total.result()
        if self.unit_ms is not None:
            r = arith("$divide", r, self.unit_ms)
        return r


class _AccumulatorFunction(WindowFunction):
    """An accumulator over each document's window (removable or not, the same values)."""

    def __init__(self, name: str, input_expr: Any, arg: Callable, factory: Callable, bounds: WindowBounds,
                 empty: Any, ordered_set: bool = False, serialized: dict | None = None, collator=None) -> None:
        self.name = name
        self.input_expr = input_expr
        self.arg = arg
        self.factory = factory
        self.bounds = bounds
        self.empty = empty
        self.ordered_set = ordered_set  # $addToSet over a removable window lists its set in value order
        self.serialized = serialized
        self.collator = collator

    def compute(self, docs, keys, variables):
        n = len(docs)
        vals = [self.arg(d, variables) for d in docs]
        out = []
        state = None
        span = None
        removable = not self.bounds.left_unbounded
        for i in range(n):
            w = endpoints(self.bounds, i, n, keys)
            if w is None:
                out.append(self._empty())
                continue
            first, last = w
            if state is not None and span[0] == first and span[1] <= last:
                for j in range(span[1] + 1, last + 1):
                    state.add(vals[j])
            else:
                state = self.factory()
                for j in range(first, last + 1):
                    state.add(vals[j])
            span = (first, last)
            r = state.result()
            if type(r) is list:
                r = list(r)
                if self.ordered_set and removable:
                    r.sort(key=sort_key_for(self.collator))
            out.append(None if r is MISSING else r)
        return out

    def _empty(self):
        e = self.empty
        return list(e) if type(e) is list else e

    def serialize(self):
        if self.serialized is not None:
            return {**self.serialized, "window": self.bounds.serialize()}
        return {self.name: _serialize_input(self.input_expr), "window": self.bounds.serialize()}


def _function_args(spec: dict, sort_by, no_window_in: str | None = None):
    """(the function's argument, its bounds) for `{$name: arg, window: {...}}`; `no_window_in`: the
    function takes no window ($locf, $linearFill: ExpressionFromLeftUnboundedWindowFunction)."""
    arg = MISSING
    bounds = None
    has_window = False
    for k, v in spec.items():
        if k == "window":
            has_window = True
            if no_window_in is None:
                bounds = parse_bounds(v, sort_by)
        elif k in WINDOW_FUNCTIONS:
            if arg is not MISSING:
                raise MongoError("FailedToParse", "Cannot specify two functions in window function spec")
            arg = v
        else:
            raise MongoError("FailedToParse", _generic_unknown(k))
    if has_window and no_window_in is not None:
        raise MongoError("FailedToParse", f"'window' field is not allowed in {no_window_in}")
    return arg, bounds


def _generic_unknown(k: str) -> str:
    return f"Window function found an unknown argument: {k}"


_EMPTY = {"$sum": 0, "$push": [], "$addToSet": [], "$concatArrays": [], "$minN": [], "$maxN": [], "$firstN": [],
          "$lastN": [], "$topN": [], "$bottomN": []}


def _removable(name: str):
    def parse(spec, sort_by, ctx):
        arg, bounds = _function_args(spec, sort_by)
        st = ACCUMULATORS[name]("x", name, arg, ctx.compile, ctx.collator)
        return _AccumulatorFunction(name, arg, st.arg, st.factory, bounds or DEFAULT_BOUNDS, _EMPTY.get(name),
                                    ordered_set=name == "$addToSet", collator=ctx.collator)

    return parse


def _count(spec, sort_by, ctx):
    bounds = None
    seen = False
    for k, v in spec.items():
        if k == "window":
            bounds = parse_bounds(v, sort_by)
        elif k in WINDOW_FUNCTIONS:
            if seen:
                raise MongoError("FailedToParse", "Cannot specify multiple functions in window function spec")
            if v != {}:
                raise MongoError("FailedToParse", "$count only accepts an empty object as input")
            seen = True
        else:
            raise MongoError("FailedToParse", _generic_unknown(k))
    one = lambda doc, variables=None: 1  # noqa: E731  ($count is {$sum: 1})
    return _AccumulatorFunction("$sum", 1, one, Sum, bounds or DEFAULT_BOUNDS, 0)


def _covariance(name: str):
    def parse(spec, sort_by, ctx):
        arg, bounds = _function_args(spec, sort_by)
        f = ctx.compile(arg)
        samp = name == "$covarianceSamp"
        return _AccumulatorFunction(name, arg, f, lambda: _Covariance(samp), bounds or DEFAULT_BOUNDS, None)

    return parse


def _n_function(name: str):
    """$minN $maxN $firstN $lastN $topN $bottomN $top $bottom (ExpressionN): n is evaluated once, without
    a document."""

    def parse(spec, sort_by, ctx):
        arg = MISSING
        bounds = None
        for k, v in spec.items():
            if k == name:
                if arg is not MISSING:
                    raise MongoError("FailedToParse", f"saw multiple specifications for '{name}' expression")
                arg = v
            elif k == "window":
                if bounds is not None:
                    raise MongoError("FailedToParse", f"saw multiple 'window' fields in '{name}' expression")
                bounds = parse_bounds(v, sort_by)
            else:
                raise MongoError("FailedToParse", f"{name} got unexpected argument: {k}")
        st = ACCUMULATORS[name]("x", name, arg, ctx.compile, ctx.collator)

        def factory():
            return st.new({}, ctx.variables)  # (n read without a document: a constant, or a variable)

        return _AccumulatorFunction(name, arg, st.arg, factory, bounds or DEFAULT_BOUNDS, _EMPTY.get(name),
                                    serialized={name: arg})

    return parse


def _quantile(name: str):
    def parse(spec, sort_by, ctx):
        arg = MISSING
        bounds = None
        for k, v in spec.items():
            if k == name:
                arg = v
            elif k == "window":
                bounds = parse_bounds(v, sort_by)
            else:
                raise MongoError("FailedToParse", f"{name} got unexpected argument: {k}")
        inp, ps = parse_percentile_spec(name, arg, 7429703)
        f = ctx.compile(inp)
        single = name == "$median"

        class _Q:
            __slots__ = ("values",)

            def __init__(self):
                self.values = []

            def add(self, v):
                if is_number(v) and type(v) is not bool:
                    self.values.append(to_double(v))

            def result(self):
                r = percentile_of(self.values, ps)
                return r[0] if single else r

        empty = None if single else [None] * len(ps)
        return _AccumulatorFunction(name, inp, f, _Q, bounds or DEFAULT_BOUNDS, empty, serialized={name: arg})

    return parse


# --- $integral / $derivative ---------------------------------------------------------------

_UNIT_MS = {"week": 604_800_000, "day": 86_400_000, "hour": 3_600_000, "minute": 60_000, "second": 1000,
            "millisecond": 1}


def _validate_unit_sort(sort_by, name: str) -> None:
    if not sort_by:
        raise MongoError("FailedToParse", f"{name} requires a sortBy")
    if len(sort_by) != 1:
        raise MongoError("FailedToParse", f"{name} requires a non-compound sortBy")
    if sort_by[0][1] == 0:
        raise MongoError("FailedToParse", f"{name} requires a non-expression sortBy")


def _unit_args(spec: dict, name: str, sort_by):
    _validate_unit_sort(sort_by, name)
    bounds = None
    args = MISSING
    for k, v in spec.items():
        if k == "window":
            if bounds is not None and name == "$integral":
                raise MongoError("FailedToParse", "There can be only one 'window' field for $integral")
            bounds = parse_bounds(v, sort_by)
        elif k == name:
            args = v
        else:
            raise MongoError("FailedToParse", f"{name} got unexpected argument: {k}")
    if not isinstance(args, dict):
        raise MongoError("FailedToParse", f"{name} expects an object, but got a {type_name(args)}: "
                                          f"{name}: {bson_str(args)}")
    inp = MISSING
    unit = None
    for k, v in args.items():
        if k == "input":
            inp = v
        elif k == "unit":
            if not isinstance(v, str):
                raise MongoError("FailedToParse", f"unit' must be a string, but got {type_name(v)}")
            unit = parse_time_unit(v)
            if unit in ("year", "quarter", "month"):
                raise MongoError(5490710, "unit must be 'week' or smaller")
        else:
            raise MongoError("FailedToParse", f"{name} got unexpected argument: {k}")
    if inp is MISSING:
        raise MongoError("FailedToParse", f"{name} requires an 'input' expression")
    return inp, unit, bounds


def _serialize_unit(name: str, inp, unit, bounds: WindowBounds) -> dict:
    inner: dict = {"input": _serialize_input(inp)}
    if unit is not None:
        inner["unit"] = unit
    return {name: inner, "window": bounds.serialize()}


def _integral(spec, sort_by, ctx):
    inp, unit, bounds = _unit_args(spec, "$integral", sort_by)
    f = ctx.compile(inp)
    path = sort_by[0][0]
    parts = tuple(path.split("."))
    unit_ms = _UNIT_MS[unit] if unit else None

    def pair(doc, variables=None):
        return field_path_get(doc, parts), f(doc, variables)

    fn = _AccumulatorFunction("$integral", inp, pair, lambda: _Integral(unit_ms), bounds or DEFAULT_BOUNDS, None)
    fn.serialize = lambda: _serialize_unit("$integral", inp, unit, fn.bounds)  # type: ignore[method-assign]
    return fn


class _Derivative(WindowFunction):
    name = "$derivative"

    def __init__(self, inp, f, unit, bounds, sort_path) -> None:
        self.inp, self.f, self.unit, self.bounds = inp, f, unit, bounds
        self.parts = tuple(sort_path.split("."))

    def compute(self, docs, keys, variables):
        out = []
        n = len(docs)
        for i in range(n):
            w = endpoints(self.bounds, i, n, keys)
            if w is None:
                out.append(None)
                continue
            left, right = docs[w[0]], docs[w[1]]
            lt, rt = field_path_get(left, self.parts), field_path_get(right, self.parts)
            if self.unit is not None:
                if not (isinstance(lt, datetime.datetime) and isinstance(rt, datetime.datetime)):
                    raise MongoError(5624900, "$derivative with 'unit' expects the sortBy field to be a Date")
            else:
                if isinstance(lt, datetime.datetime) or isinstance(rt, datetime.datetime):
                    raise MongoError(5624901, "$derivative where the sortBy is a Date requires an 'unit'")
                if not (is_number(lt) and is_number(rt)):
                    raise MongoError(5624902, "$derivative (with no 'unit') expects the sortBy field to be numeric")
            run = arith("$subtract", rt, lt)
            rise = arith("$subtract", self.f(right, variables), self.f(left, variables))
            if rise is None:
                raise MongoError(5624903, "$derivative input must not be null or missing")
            if (type(run) is Decimal128 and run.to_decimal() == 0) or (type(run) is not Decimal128 and run == 0):
                out.append(None)
                continue
            r = arith("$divide", rise, run)
            if self.unit is not None:
                r = arith("$multiply", r, _UNIT_MS[self.unit])
            out.append(r)
        return out

    def serialize(self):
        return _serialize_unit("$derivative", self.inp, self.unit, self.bounds)


def _derivative(spec, sort_by, ctx):
    inp, unit, bounds = _unit_args(spec, "$derivative", sort_by)
    if bounds is None:
        raise MongoError("FailedToParse", "$derivative requires explicit window bounds")
    return _Derivative(inp, ctx.compile(inp), unit, bounds, sort_by[0][0])


# --- $first / $last / $shift -------------------------------------------------------------------


class _Endpoint(WindowFunction):
    def __init__(self, name: str, inp, f, bounds: WindowBounds, last: bool) -> None:
        self.name, self.inp, self.f, self.bounds, self.last = name, inp, f, bounds, last

    def compute(self, docs, keys, variables):
        out = []
        n = len(docs)
        for i in range(n):
            w = endpoints(self.bounds, i, n, keys)
            v = MISSING if w is None else self.f(docs[w[1] if self.last else w[0]], variables)
            out.append(None if v is MISSING else v)  # (an empty window or a missing value: null)
        return out

    def serialize(self):
        return {self.name: _serialize_input(self.inp), "window": self.bounds.serialize()}


def _first_last(name: str):
    def parse(spec, sort_by, ctx):
        bounds = None
        inp = MISSING
        for k, v in spec.items():
            if k == "window":
                if bounds is not None:
                    raise MongoError("FailedToParse", f"saw multiple 'window' fields in '{name}' expression")
                bounds = parse_bounds(v, sort_by)
            elif k == name:
                inp = v
            else:
                raise MongoError("FailedToParse", f"{name} got unexpected argument: {k}")
        return _Endpoint(name, inp, ctx.compile(inp), bounds or DEFAULT_BOUNDS, name == "$last")

    return parse


class _Shift(WindowFunction):
    name = "$shift"

    def __init__(self, out_expr, f, by: int, default) -> None:
        self.out_expr, self.f, self.by, self.default = out_expr, f, by, default
        self.bounds = WindowBounds("documents", by, by)

    def compute(self, docs, keys, variables):
        n = len(docs)
        out = []
        for i in range(n):
            v = self.f(docs[i + self.by], variables) if 0 <= i + self.by < n else MISSING
            out.append(self.default if v is MISSING else v)  # (shift.js: a missing value gives the default)
        return out

    def serialize(self):
        return {"$shift": {"by": self.by, "output": _serialize_input(self.out_expr), "default": self.default}}


def _shift(spec, sort_by, ctx):
    args = MISSING
    for k, v in spec.items():
        if k == "window":
            raise MongoError("FailedToParse", "$shift does not accept a 'window' field")
        if k in WINDOW_FUNCTIONS:
            if args is not MISSING:
                raise MongoError("FailedToParse", "Cannot specify multiple functions in window function spec")
            if not isinstance(v, dict):
                raise MongoError("FailedToParse", "Argument to $shift must be an object")
            args = v
        else:
            raise MongoError("FailedToParse", _generic_unknown(k))
    out_expr = MISSING
    default = None
    by = None
    for k, v in args.items():
        if k == "output":
            out_expr = v
        elif k == "default":
            d = constant_value(v)
            if d is MISSING:
                raise MongoError("FailedToParse", "'$shift:default' expression must yield a constant value.")
            default = d
        elif k == "by":
            ok = is_number(v) and type(v) is not bool and math.isfinite(to_double(v)) \
                and to_double(v) == int(to_double(v)) and -(2**31) <= to_double(v) < 2**31
            if not ok:
                raise MongoError("FailedToParse", f"'$shift:by' field must be an integer, but found  by: {bson_str(v)}")
            by = int(to_double(v))
        else:
            raise MongoError("FailedToParse", "Unknown argument in $shift")
    if out_expr is MISSING:
        raise MongoError("FailedToParse", "$shift requires an 'output' expression.")
    if by is None:
        raise MongoError("FailedToParse", "$shift requires 'by' as an integer value.")
    if not sort_by:
        raise MongoError("FailedToParse", "'$shift' requires a sortBy")
    return _Shift(out_expr, ctx.compile(out_expr), by, default)


# --- rank-style and running functions ----------------------------------------------------------


class _Rank(WindowFunction):
    bounds = LEFT_UNBOUNDED_TO_CURRENT

    def __init__(self, name: str, path: str, direction: int, collator) -> None:
        self.name, self.path, self.direction, self.collator = name, path, direction, collator

    def compute(self, docs, keys, variables):
        key = sort_key_for(self.collator)
        ranks = []
        last = MISSING
        rank = dense = 0
        for i, d in enumerate(docs):
            k = key(sort_key_values(d, {self.path: self.direction}, self.collator)[0])
            if self.name == "$documentNumber":
                rank = i + 1
            elif last is MISSING or k != last:
                rank = i + 1
                dense += 1
                last = k
            ranks.append(rank if self.name != "$denseRank" else dense)
        return [r if r < 2**31 else Int64(r) for r in ranks]

    def serialize(self):
        return {self.name: {}}


def _rank(name: str):
    def parse(spec, sort_by, ctx):
        if len(spec) != 1:
            raise MongoError(5371601, "Rank style window functions take no other arguments")
        v = spec[name]
        if not (isinstance(v, dict) and not v):
            raise MongoError(5371603, f"{name} must be specified with '{{}}' as the value")
        if not sort_by or len(sort_by) != 1:
            raise MongoError(5371602, f"{name} must be specified with a top level sortBy expression with exactly one "
                                      "element")
        return _Rank(name, sort_by[0][0], sort_by[0][1] or 1, ctx.collator)

    return parse


class _Locf(WindowFunction):
    name = "$locf"
    bounds = LEFT_UNBOUNDED_TO_CURRENT

    def __init__(self, inp, f) -> None:
        self.inp, self.f = inp, f

    def compute(self, docs, keys, variables):
        out = []
        last = None
        for d in docs:
            v = self.f(d, variables)
            if v is not None and v is not MISSING:
                last = v
            out.append(last)
        return out

    def serialize(self):
        return {"$locf": _serialize_input(self.inp)}


def _locf(spec, sort_by, ctx):
    inp, _ = _function_args(spec, sort_by, "$locf")
    return _Locf(inp, ctx.compile(inp))


class _LinearFill(WindowFunction):
    name = "$linearFill"

    def __init__(self, inp, f, sort_path: str) -> None:
        self.inp, self.f = inp, f
        self.parts = tuple(sort_path.split("."))

    def compute(self, docs, keys, variables):
        ys = [self.f(d, variables) for d in docs]
        xs = [field_path_get(d, self.parts) for d in docs]
        out = []
        last_x = MISSING
        prev = None  # (x1, y1): the last non-null point
        for i, (x, y) in enumerate(zip(xs, ys)):
            nullish = y is None or y is MISSING
            if not (nullish or (is_number(y) and type(y) is not bool)):
                raise MongoError("TypeMismatch", f"Value to be filled must be numeric or nullish, but found "
                                                 f"{type_name(y)}")
            is_date = isinstance(x, datetime.datetime)
            if not (is_date or (is_number(x) and type(x) is not bool)):
                raise MongoError("TypeMismatch", f"Value of the sortBy field must be numeric or a date, but found "
                                                 f"{'missing' if x is MISSING else type_name(x)}")
            if last_x is not MISSING and compare(x, last_x) == 0:
                raise MongoError(6050106, "There can be no repeated values in the sort field")
            if last_x is not MISSING and isinstance(last_x, datetime.datetime) != is_date:
                raise MongoError("TypeMismatch", f"Conflicting sort value types, previously received type "
                                                 f"{type_name(last_x)}, but found {type_name(x)}")
            last_x = x
            if not nullish:
                prev = (x, y)
                out.append(y)
                continue
            nxt = next(((xs[j], ys[j]) for j in range(i + 1, len(docs))
                        if ys[j] is not None and ys[j] is not MISSING and xs[j] is not None and xs[j] is not MISSING),
                       None)
            if prev is None or nxt is None:
                out.append(None)
                continue
            (x1, y1), (x2, y2) = prev, nxt
            slope = arith("$divide", arith("$subtract", y2, y1), arith("$subtract", x2, x1))
            out.append(arith("$add", y1, arith("$multiply", arith("$subtract", x, x1), slope)))
        return out

    def serialize(self):
        return {"$linearFill": _serialize_input(self.inp)}


def _linear_fill(spec, sort_by, ctx):
    inp, _ = _function_args(spec, sort_by, "$linearFill")
    if not sort_by or len(sort_by) != 1:
        raise MongoError(605001, "$linearFill must be specified with a top level sortBy expression with exactly one "
                                 "element")
    return _LinearFill(inp, ctx.compile(inp), sort_by[0][0])


class _ExpMovingAvg(WindowFunction):
    name = "$expMovingAvg"
    bounds = LEFT_UNBOUNDED_TO_CURRENT

    def __init__(self, inp, f, n: int | None, alpha: Decimal) -> None:
        self.inp, self.f, self.n, self.alpha = inp, f, n, alpha

    def compute(self, docs, keys, variables):
        out = []
        cur = None
        decimal = False
        one_minus = _DEC.subtract(Decimal(1), self.alpha)
        for d in docs:
            v = self.f(d, variables)
            if is_number(v) and type(v) is not bool:
                decimal = decimal or type(v) is Decimal128
                x = as_decimal(v)
                cur = x if cur is None else _DEC.add(_DEC.multiply(x, self.alpha), _DEC.multiply(cur, one_minus))
            if cur is None:
                out.append(None)
            else:
                out.append(Decimal128(cur) if decimal else float(cur))
        return out

    def serialize(self):
        inner: dict = {"N": self.n} if self.n is not None else {"alpha": float(self.alpha)}
        inner["input"] = _serialize_input(self.inp)
        return {"$expMovingAvg": inner}


def _exp_moving_avg(spec, sort_by, ctx):
    sub = spec.get("$expMovingAvg")
    if len(spec) != 1 or not isinstance(sub, dict):
        raise MongoError("FailedToParse", "$expMovingAvg must have exactly one argument that is an object")
    if len(sub) != 2 or "input" not in sub:
        raise MongoError("FailedToParse", "$expMovingAvg sub object must have exactly two fields: An 'input' field, "
                                          "and either an 'N' field or an 'alpha' field")
    if not sort_by:
        raise MongoError("FailedToParse", "$expMovingAvg requires an explicit 'sortBy'")
    f = ctx.compile(sub["input"])
    if "N" in sub:
        nv = sub["N"]
        if not is_number(nv) or type(nv) is bool:
            raise MongoError("FailedToParse", f"'N' field must be an integer, but found type {type_name(nv)}")
        d = to_double(nv)
        if d != math.floor(d):
            raise MongoError("FailedToParse", f"'N' field must be an integer, but found  N: {bson_str(nv)}. To use a "
                                              "non-integer, use the 'alpha' argument instead")
        n = int(d)
        if n <= 0:
            raise MongoError("FailedToParse", f"'N' must be greater than zero. Got {n}")
        alpha = _DEC.divide(Decimal(2), Decimal(n + 1))
        return _ExpMovingAvg(sub["input"], f, n, alpha)
    if "alpha" in sub:
        av = sub["alpha"]
        if not is_number(av) or type(av) is bool:
            raise MongoError("FailedToParse", "'alpha' must be a number")
        a = as_decimal(av)
        if not (a > 0 and a < 1):
            raise MongoError("FailedToParse", f"'alpha' must be between 0 and 1 (exclusive), found alpha: "
                                              f"{bson_str(av)}")
        return _ExpMovingAvg(sub["input"], f, None, a)
    raise MongoError("FailedToParse", "Got unrecognized field in $expMovingAvg$expMovingAvg sub object must have "
                                      "exactly two fields: An 'input' field, and either an 'N' field or an 'alpha' "
                                      "field")


WINDOW_FUNCTIONS: dict[str, Callable] = {
    **{n: _removable(n) for n in ("$sum", "$avg", "$min", "$max", "$push", "$addToSet", "$stdDevPop",
                                  "$stdDevSamp")},
    "$count": _count,
    "$covariancePop": _covariance("$covariancePop"),
    "$covarianceSamp": _covariance("$covarianceSamp"),
    **{n: _n_function(n) for n in ("$minN", "$maxN", "$firstN", "$lastN", "$topN", "$bottomN", "$top", "$bottom")},
    "$median": _quantile("$median"),
    "$percentile": _quantile("$percentile"),
    "$integral": _integral,
    "$derivative": _derivative,
    "$first": _first_last("$first"),
    "$last": _first_last("$last"),
    "$shift": _shift,
    "$rank": _rank("$rank"),
    "$denseRank": _rank("$denseRank"),
    "$documentNumber": _rank("$documentNumber"),
    "$locf": _locf,
    "$linearFill": _linear_fill,
    "$expMovingAvg": _exp_moving_avg,
}


def parse_window_function(field: str, spec: Any, sort_by: list | None, ctx) -> WindowFunction:
    """One `output` field (window_function::Expression::parse): the first `$`-prefixed key names the
    function.  `ctx`: `.compile(expr)`, `.collator`, `.variables`."""
    if not isinstance(spec, dict):
        raise MongoError("FailedToParse", f"The field '{field}' must be an object")
    for k in spec:
        if k.startswith("$"):
            parser = WINDOW_FUNCTIONS.get(k)
            if parser is None:
                raise MongoError("FailedToParse", f"Unrecognized window function, {k}")
            return parser(spec, sort_by, ctx)
    first = next(iter(spec), "")
    raise MongoError("FailedToParse", "Expected a $-prefixed window function" + (f", {first}" if first else ""))
