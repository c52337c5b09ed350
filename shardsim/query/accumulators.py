"""Accumulators: the operators of `$group` (and `$bucket`, `$bucketAuto`, `$setWindowFields`).

An accumulator folds the values of a group's documents into one value
(src/mongo/db/pipeline/accumulator_*.cpp).  `parse_statement(field, spec, ...)`
parses one output field of a `$group` (`{total: {$sum: "$x"}}`) into a
`Statement`: its argument expression, evaluated per document, and a factory of
accumulator states (`add(value)`, `result()`).

The server's rules, each kept here:

- `$sum` adds the numbers and ignores the rest: int32 overflows to long, long to
  double; any double makes a double, any decimal a decimal (no numbers: 0).  The
  server keeps non-decimals in a double-double sum (DoubleDoubleSummation, kept
  here too: `summation.py`); ints are also kept exact for an int/long result.  `$avg` divides that sum by the
  count of numbers (null if none), a double unless a decimal was seen.
- `$min`/`$max` ignore null and missing (the collation orders strings); `$first`/
  `$last` keep a missing value as null; `$push`/`$addToSet` skip missing values.
- `$mergeObjects` ignores null/missing and refuses any other non-object (40400).
- `$stdDevPop`/`$stdDevSamp`: Welford's running variance over the numbers (null
  without them; the sample needs two).
- `$top`/`$bottom`/`$topN`/`$bottomN` (`{n, sortBy, output}`): the first/last `n`
  outputs in `sortBy` order; a tie keeps the value seen first; results in sort
  order; a missing output is null.  `$firstN`/`$lastN` (`{input, n}`) keep missing
  as null; `$maxN`/`$minN` skip null and missing, largest (smallest) first.  `n` is
  an expression of the group key, a positive integer (5787902/5787903/5787908).
- `$median`/`$percentile` (`method: "approximate"`, the only method 8.0 accepts):
  over the numeric inputs (as doubles), the discrete percentile — the value of rank
  ceil(p·n) — which is what the server's t-digest gives for the inputs it keeps
  exactly; nulls when there are no numbers.

Hand-written: the accumulators' type rules are MongoDB's own.
"""

from __future__ import annotations

import bisect
import math
from decimal import Decimal
from typing import Any, Callable

from bson import Code, Decimal128, Int64
from mongosim.oplog import _dec128
from mongosim.oplog.errors import MongoError
from mongosim.shardsim.javascript.engine import ScriptEngine
from mongosim.shardsim.query.collation import compare_for, hashable_for, sort_key_for
from mongosim.shardsim.query.expression_core import compile_expression
from mongosim.shardsim.query.fmt import bson_str
from mongosim.shardsim.query.idl_errors import wrong_type
from mongosim.shardsim.query.summation import DoubleDoubleSummation
from mongosim.shardsim.query.value_size import MAX_ADD_TO_SET_BYTES, MAX_PUSH_BYTES, approximate_size
from mongosim.shardsim.query.values import MISSING, is_number, type_name

__all__ = ["Statement", "parse_statement", "ACCUMULATORS", "Sum", "Avg", "percentile_of", "validate_n",
           "parse_percentile_spec", "PERCENTILE_SPEC_CODES", "to_double", "FirstLastN", "MinMaxN", "parse_n_args", "N_SPEC_CODES"]

_DEC = _dec128.context()


def to_double(v) -> float:
    return float(v.to_decimal()) if type(v) is Decimal128 else float(v)


# --- states ---------------------------------------------------------------------------


class Sum:
    """$sum's running total, widened as the server's AccumulatorSum does.

    Integers are kept exact (their int/long result); every non-decimal also goes into a
    DoubleDoubleSummation in arrival order, which gives the double result to the bit,
    overflow to ±Infinity and NaN included (src/mongo/util/summation.h)."""

    __slots__ = ("kind", "ints", "dd", "dec", "count")

    def __init__(self) -> None:
        self.kind = 16  # the widest type seen: 16 int, 18 long, 1 double, 19 decimal
        self.ints = 0
        self.dd = DoubleDoubleSummation()
        self.dec: Decimal | None = None
        self.count = 0

    def add(self, v) -> None:
        t = type(v)
        if t is int or t is Int64:
            if t is Int64 or not -(2**31) <= v < 2**31:
                if self.kind == 16:
                    self.kind = 18
            self.ints += int(v)
            self.dd.add_int(int(v))
        elif t is float:
            if self.kind in (16, 18):
                self.kind = 1
            self.dd.add_double(v)
        elif t is Decimal128:
            self.kind = 19
            d = v.to_decimal()
            self.dec = d if self.dec is None else _DEC.add(self.dec, d)
        else:
            return
        self.count += 1

    def non_decimal(self) -> float:
        """The ints and doubles summed, as a double."""
        return self.dd.get_double()

    def result(self):
        kind = self.kind
        if kind == 19:
            rest = self.dd.get_decimal(lambda x: _dec128.from_double(x, 34, _dec128.HALF_EVEN))
            return _dec128.to_decimal128(_DEC.add(self.dec, rest))
        if kind == 1:
            return self.non_decimal()
        total = self.ints
        if -(2**63) <= total < 2**63:
            if kind == 16 and -(2**31) <= total < 2**31:
                return total
            return Int64(total)
        return self.non_decimal()


class Avg(Sum):
    __slots__ = ()

    def result(self):
        if not self.count:
            return None
        if self.kind == 19:
            total = super().result().to_decimal()
            return _dec128.to_decimal128(_DEC.divide(total, Decimal(self.count)))
        return self.non_decimal() / self.count


class _Count:
    __slots__ = ("n",)

    def __init__(self) -> None:
        self.n = 0

    def add(self, v) -> None:
        self.n += 1

    def result(self):
        n = self.n
        return n if n < 2**31 else Int64(n)


class _MinMax:
    __slots__ = ("state", "compare", "sign")

    def __init__(self, sign: int, collator) -> None:
        self.state = MISSING
        self.compare = compare_for(collator)
        self.sign = sign  # -1: $min, 1: $max

    def add(self, v) -> None:
        if v is None or v is MISSING:
            return
        if self.state is MISSING or self.compare(v, self.state) * self.sign > 0:
            self.state = v

    def result(self):
        return None if self.state is MISSING else self.state


class _First:
    __slots__ = ("state", "seen")

    def __init__(self) -> None:
        self.state = None
        self.seen = False

    def add(self, v) -> None:
        if not self.seen:
            self.seen = True
            self.state = None if v is MISSING else v

    def result(self):
        return self.state


class _Last:
    __slots__ = ("state",)

    def __init__(self) -> None:
        self.state = None

    def add(self, v) -> None:
        self.state = None if v is MISSING else v

    def result(self):
        return self.state


_STATE_SIZE = 64  # sizeof(*this) of the state, its initial charge


class _Push:
    """AccumulatorPush: every value but missing, each charged its approximate size against
    internalQueryMaxPushBytes (ExceededMemoryLimit past it; $push cannot spill)."""

    __slots__ = ("items", "mem")

    def __init__(self) -> None:
        self.items: list = []
        self.mem = _STATE_SIZE

    def add(self, v) -> None:
        if v is not MISSING:
            self.mem += approximate_size(v)
            if self.mem > MAX_PUSH_BYTES:
                raise MongoError("ExceededMemoryLimit", "$push used too much memory and cannot spill to disk. "
                                                        f"Memory limit: {MAX_PUSH_BYTES} bytes")
            self.items.append(v)

    def result(self):
        return self.items


class _AddToSet:
    """AccumulatorAddToSet: each new distinct value is charged its approximate size against
    internalQueryMaxAddToSetBytes (ExceededMemoryLimit past it)."""

    __slots__ = ("items", "keys", "same", "mem")

    def __init__(self, collator) -> None:
        self.items: list = []
        self.keys: set = set()
        self.same = hashable_for(collator)
        self.mem = _STATE_SIZE

    def add(self, v) -> None:
        if v is MISSING:
            return
        k = self.same(v)
        if k not in self.keys:
            self.mem += approximate_size(v)
            if self.mem > MAX_ADD_TO_SET_BYTES:
                raise MongoError("ExceededMemoryLimit", "$addToSet used too much memory and cannot spill to disk. "
                                                        f"Used: {self.mem} bytes. Memory limit: {MAX_ADD_TO_SET_BYTES} bytes")
            self.keys.add(k)
            self.items.append(v)

    def result(self):
        return self.items


class _MergeObjects:
    __slots__ = ("out",)

    def __init__(self) -> None:
        self.out: dict = {}

    def add(self, v) -> None:
        if v is None or v is MISSING:
            return
        if not isinstance(v, dict):  # (a dict, or $$ROOT with its metadata)
            raise MongoError(40400, f"$mergeObjects requires object inputs, but input {bson_str(v)} is of type "
                                    f"{type_name(v)}")
        self.out.update(v)

    def result(self):
        return dict(self.out)


class StdDev:
    """Welford's running mean and sum of squared deviations (AccumulatorStdDev)."""

    __slots__ = ("samp", "count", "mean", "m2")

    def __init__(self, samp: bool) -> None:
        self.samp = samp
        self.count = 0
        self.mean = 0.0
        self.m2 = 0.0

    def add(self, v) -> None:
        if not is_number(v) or type(v) is bool:
            return
        x = to_double(v)
        self.count += 1
        delta = x - self.mean
        if delta != 0:
            self.mean += delta / self.count
            self.m2 += delta * (x - self.mean)

    def result(self):
        n = self.count - (1 if self.samp else 0)
        if n <= 0:
            return None
        return math.sqrt(self.m2 / n)


class _TopBottomN:
    """Keeps the first (top) or last (bottom) `n` (key, output) pairs in sort order; a tie keeps
    the pair seen first."""

    __slots__ = ("n", "top", "keys", "outs", "single")

    def __init__(self, n: int, top: bool, single: bool) -> None:
        self.n = n
        self.top = top
        self.single = single
        self.keys: list = []
        self.outs: list = []

    def add(self, pair) -> None:
        key, out = pair
        if out is MISSING:
            out = None
        keys = self.keys
        if len(keys) == self.n:
            if self.top:
                if not key < keys[-1]:
                    return
                keys.pop()
                self.outs.pop()
            else:
                if not keys[0] < key:
                    return
                keys.pop(0)
                self.outs.pop(0)
        i = bisect.bisect_right(keys, key)
        keys.insert(i, key)
        self.outs.insert(i, out)

    def result(self):
        if self.single:
            return self.outs[0] if self.outs else None
        return list(self.outs)


class FirstLastN:
    __slots__ = ("n", "last", "items")

    def __init__(self, n: int, last: bool) -> None:
        self.n = n
        self.last = last
        self.items: list = []

    def add(self, v) -> None:
        v = None if v is MISSING else v
        if len(self.items) == self.n:
            if not self.last:
                return
            self.items.pop(0)
        self.items.append(v)

    def result(self):
        return list(self.items)


class MinMaxN:
    __slots__ = ("n", "sign", "items", "key")

    def __init__(self, n: int, sign: int, collator) -> None:
        self.n = n
        self.sign = sign  # -1: $minN, 1: $maxN
        self.items: list = []  # (key, value), ascending
        self.key = sort_key_for(collator)

    def add(self, v) -> None:
        if v is None or v is MISSING:
            return
        k = self.key(v)
        items = self.items
        if len(items) == self.n:
            if self.sign > 0:
                if not items[0][0] < k:
                    return
                items.pop(0)
            else:
                if not k < items[-1][0]:
                    return
                items.pop()
        i = bisect.bisect_right([x[0] for x in items], k)
        items.insert(i, (k, v))

    def result(self):
        vals = [v for _k, v in self.items]
        return vals[::-1] if self.sign > 0 else vals


class _Percentile:
    __slots__ = ("ps", "values", "single")

    def __init__(self, ps: list[float], single: bool) -> None:
        self.ps = ps
        self.single = single
        self.values: list[float] = []

    def add(self, v) -> None:
        if is_number(v) and type(v) is not bool:
            self.values.append(to_double(v))

    def result(self):
        out = percentile_of(self.values, self.ps)
        return out[0] if self.single else out


def percentile_of(values: list[float], ps: list[float]) -> list:
    """The discrete percentiles of `values` (nulls when empty): the value of rank ceil(p·n)."""
    if not values:
        return [None] * len(ps)
    s = sorted(values)
    n = len(s)
    return [s[min(max(math.ceil(p * n) - 1, 0), n - 1)] for p in ps]


# --- statements -----------------------------------------------------------------------


class Statement:
    """One output field of a group: `arg(doc, variables)` feeds `new(key_doc, variables)`'s state."""

    __slots__ = ("field", "op", "arg", "factory", "n_expr")

    def __init__(self, field: str, op: str, arg: Callable | None, factory: Callable, n_expr: Callable | None = None):
        self.field = field
        self.op = op
        self.arg = arg
        self.factory = factory  # factory() or factory(n)
        self.n_expr = n_expr

    def new(self, key_doc: dict | None = None, variables: dict | None = None):
        if self.n_expr is None:
            return self.factory()
        return self.factory(validate_n(self.n_expr(key_doc or {}, variables)))


def validate_n(v) -> int:
    if not is_number(v) or type(v) is bool:
        raise MongoError(5787902, f"Value for 'n' must be of integral type, but found {bson_str(v) if v is not MISSING else 'missing'}")
    f = to_double(v)
    if f != f or f in (math.inf, -math.inf) or f != int(f):
        raise MongoError(5787903, f"Value for 'n' must be of integral type, but found {bson_str(v)}")
    n = int(f)
    if n <= 0:
        raise MongoError(5787908, f"'n' must be greater than 0, found {n}")
    return n


Compile = Callable[[Any], Callable]


def _simple(factory):
    def parse(field, op, arg, compile_expr, collator):
        return Statement(field, op, compile_expr(arg), factory)

    return parse


def _with_collator(make):
    def parse(field, op, arg, compile_expr, collator):
        return Statement(field, op, compile_expr(arg), lambda: make(collator))

    return parse


def _count(field, op, arg, compile_expr, collator):
    if arg != {}:
        raise MongoError(40049, "$count takes no arguments, i.e. $count:{}")
    return Statement(field, op, None, _Count)


# the code of "specification must be an object" for each {n, input} operator (its accumulator and
# expression forms share their parser: AccumulatorN::parseArgs)
N_SPEC_CODES = {"$firstN": 5787801, "$lastN": 5787801, "$maxN": 5787900, "$minN": 5787900}


def parse_n_args(op: str, arg, compile_expr):
    """(n, input) of `{n, input}`, each compiled by `compile_expr`, checked in the server's order."""
    if not isinstance(arg, dict):
        raise MongoError(N_SPEC_CODES[op], f"specification must be an object; found {op}: {bson_str(arg)}")
    n = inp = None
    for k, v in arg.items():
        if k == "input":
            inp = compile_expr(v)
        elif k == "n":
            n = compile_expr(v)
        else:
            raise MongoError(5787901, f"Unknown argument for 'n' operator: {k}")
    if n is None:
        raise MongoError(5787906, "Missing value for 'n'")
    if inp is None:
        raise MongoError(5787907, "Missing value for 'input'")
    return n, inp


def _first_last_n(field, op, arg, compile_expr, collator):
    n, inp = parse_n_args(op, arg, compile_expr)
    last = op == "$lastN"
    return Statement(field, op, inp, lambda k: FirstLastN(k, last), n)


def _min_max_n(field, op, arg, compile_expr, collator):
    n, inp = parse_n_args(op, arg, compile_expr)
    sign = 1 if op == "$maxN" else -1
    return Statement(field, op, inp, lambda k: MinMaxN(k, sign, collator), n)


def _top_bottom(field, op, arg, compile_expr, collator):
    from mongosim.shardsim.query.sorting import sort_key_fn

    single = op in ("$top", "$bottom")
    if not isinstance(arg, dict):
        raise MongoError(5788001, f"specification must be an object; found {op}: {bson_str(arg)}")
    n = output = sort_by = None
    has_output = False
    for k, v in arg.items():
        if k == "n" and not single:
            n = compile_expr(v)
        elif k == "output":
            output, has_output = v, True
        elif k == "sortBy":
            if not isinstance(v, dict):
                raise MongoError(10065, "invalid parameter: expected an object (sortBy)")
            sort_by = v
        else:
            raise MongoError(5788002, f"Unknown argument to {op} '{k}'")
    if not single and n is None:
        raise MongoError(5788003, "Missing value for 'n'")
    if not has_output:
        raise MongoError(5788004, "Missing value for 'output'")
    if sort_by is None:
        raise MongoError(5788005, "Missing value for 'sortBy'")
    key = sort_key_fn(sort_by, collator)
    out = compile_expr(output)
    top = op in ("$top", "$topN")

    def pair(doc, variables=None):
        return key(doc), out(doc, variables)

    if single:
        return Statement(field, op, pair, lambda: _TopBottomN(1, top, True))
    return Statement(field, op, pair, lambda k: _TopBottomN(k, top, False), n)


_PERCENTILE_FIELDS = {"$percentile": ("input", "p", "method"), "$median": ("input", "method")}


def parse_percentile_spec(op: str, arg, code: int) -> tuple[Any, list[float]]:
    """(the input expression, the percentiles) of a `$percentile` / `$median` specification, checked
    as its IDL struct and `parseP` check them."""
    if not isinstance(arg, dict):
        raise MongoError(code, f"specification must be an object; found {op}: {bson_str(arg)}")
    fields = _PERCENTILE_FIELDS[op]
    for k in arg:
        if k not in fields:
            raise MongoError("IDLUnknownField", f"BSON field '{op}.{k}' is an unknown field.")
    for k in fields:
        if k not in arg:
            raise MongoError("IDLFailedToParse", f"BSON field '{op}.{k}' is missing but a required field")
    method = arg["method"]
    if not isinstance(method, str):
        raise wrong_type(f"{op}.method", method, "string")
    if method != "approximate":
        raise MongoError("BadValue", "Currently only 'approximate' can be used as percentile 'method'.")
    if op == "$median":
        return arg["input"], [0.5]
    p = arg["p"]
    if not _constant(p):
        raise MongoError(7750300, "The $percentile 'p' field must be an array of constant values, but found value: "
                                  f"p: {bson_str(p)}.")
    pv = compile_expression(p)({})
    msg = "The $percentile 'p' field must be an array of numbers from [0.0, 1.0], but found: "
    if type(pv) is not list or not pv:
        raise MongoError(7750301, msg + bson_str(pv))
    ps = []
    for x in pv:
        if not is_number(x) or type(x) is bool:
            raise MongoError(7750302, msg + bson_str(x))
        f = to_double(x)
        if f < 0 or f > 1:
            raise MongoError(7750303, msg + bson_str(f))
        ps.append(f)
    return arg["input"], ps


def _constant(expr) -> bool:
    """Does `expr` fold to a constant (no field path, no variable: every `$` string under a `$literal`)?"""
    if isinstance(expr, str):
        return not expr.startswith("$")
    if isinstance(expr, list):
        return all(map(_constant, expr))
    if isinstance(expr, dict):
        if len(expr) == 1 and "$literal" in expr:
            return True
        return all(_constant(v) for v in expr.values())
    return True


# the code of "specification must be an object", accumulator and expression forms
PERCENTILE_SPEC_CODES = {("$percentile", "accumulator"): 7429703, ("$median", "accumulator"): 7436100,
                         ("$percentile", "expression"): 7436200, ("$median", "expression"): 7436201}


def _percentile(field, op, arg, compile_expr, collator):
    inp, ps = parse_percentile_spec(op, arg, PERCENTILE_SPEC_CODES[op, "accumulator"])
    single = op == "$median"
    return Statement(field, op, compile_expr(inp), lambda: _Percentile(ps, single))


class _JsAccumulator:
    """$accumulator's state for one group: init(...initArgs), then accumulate(state, ...args) per document,
    finalize(state) at the end (AccumulatorJs; the state crosses as BSON between calls, as the server's)."""

    __slots__ = ("spec", "state")

    def __init__(self, spec: _JsSpec, init_args) -> None:
        if not isinstance(init_args, list):
            raise MongoError(4544711, f"$accumulator initArgs must evaluate to an array: {_value_str(init_args)}")
        self.spec = spec
        eng = spec.engine()
        self.state = eng.call(eng.function(spec.init), init_args)

    def add(self, v) -> None:
        if not isinstance(v, list):
            raise MongoError(4544712, f"$accumulator accumulateArgs must evaluate to an array: {_value_str(v)}")
        eng = self.spec.engine()
        self.state = eng.call(eng.function(self.spec.accumulate), [self.state, *v])

    def result(self):
        if self.spec.finalize is None:
            return self.state
        eng = self.spec.engine()
        return eng.call(eng.function(self.spec.finalize), [self.state])


def _value_str(v) -> str:
    return "missing" if v is MISSING else bson_str(v)


class _JsSpec:
    """The parsed functions of an $accumulator and the script engine its groups share."""

    __slots__ = ("init", "accumulate", "merge", "finalize", "_engine")

    def __init__(self, init: str, accumulate: str, merge: str, finalize: str | None) -> None:
        self.init, self.accumulate, self.merge, self.finalize = init, accumulate, merge, finalize
        self._engine = None

    def engine(self):
        if self._engine is None:
            self._engine = ScriptEngine()
        return self._engine


class _JsStatement(Statement):
    """A Statement whose state starts from initArgs, evaluated once per group against `{_id: key}`."""

    __slots__ = ("init_args", "spec")

    def new(self, key_doc: dict | None = None, variables: dict | None = None):
        return _JsAccumulator(self.spec, self.init_args(key_doc or {}, variables))


def _js_function(name: str, v, compile_expr) -> str:
    """parseFunction: a constant string or Code (4544701 not constant, 4544702 another type)."""
    if isinstance(v, dict) and len(v) == 1 and "$literal" in v:
        v = v["$literal"]
    elif isinstance(v, dict) and v and next(iter(v)).startswith("$") or \
            isinstance(v, str) and v.startswith("$") and not isinstance(v, Code):
        raise MongoError(4544701, f"$accumulator '{name}' must be a constant expression")
    if not isinstance(v, str):
        raise MongoError(4544702, f"$accumulator '{name}' must be a String or Code")
    return str(v)


def _javascript(field, op, arg, compile_expr, collator):
    """$accumulator (AccumulatorJs::parse): init, accumulate, merge required; accumulateArgs required."""
    if not isinstance(arg, dict):
        raise MongoError(4544703, f"$accumulator expects an object as an argument; found: {type_name(arg)}")
    funcs: dict = {}
    init_args = accumulate_args = None
    for k, v in arg.items():
        if k in ("init", "accumulate", "merge", "finalize"):
            funcs[k] = _js_function(k, v, compile_expr)
        elif k == "initArgs":
            init_args = compile_expr(v)
        elif k == "accumulateArgs":
            accumulate_args = compile_expr(v)
        elif k == "lang":
            if not isinstance(v, str):
                raise MongoError(4544704, f"$accumulator lang must be a string; found: {type_name(v)}")
            if v != "js":
                raise MongoError(4544705, "$accumulator only supports lang: 'js'")
        else:
            raise MongoError(4544706, f"$accumulator got an unexpected field: {k}")
    for k, code in (("init", 4544707), ("accumulate", 4544708), ("merge", 4544709)):
        if not funcs.get(k):
            raise MongoError(code, f"$accumulator missing required argument '{k}'")
    if accumulate_args is None:
        raise MongoError(4544710, "$accumulator missing required argument 'accumulateArgs'")
    spec = _JsSpec(funcs["init"], funcs["accumulate"], funcs["merge"], funcs.get("finalize"))
    st = _JsStatement(field, op, accumulate_args, None)
    st.init_args = init_args if init_args is not None else (lambda doc, variables=None: [])
    st.spec = spec
    return st


ACCUMULATORS: dict[str, Callable] = {
    "$sum": _simple(Sum),
    "$avg": _simple(Avg),
    "$min": _with_collator(lambda c: _MinMax(-1, c)),
    "$max": _with_collator(lambda c: _MinMax(1, c)),
    "$first": _simple(_First),
    "$last": _simple(_Last),
    "$push": _simple(_Push),
    "$addToSet": _with_collator(_AddToSet),
    "$mergeObjects": _simple(_MergeObjects),
    "$stdDevPop": _simple(lambda: StdDev(False)),
    "$stdDevSamp": _simple(lambda: StdDev(True)),
    "$count": _count,
    "$top": _top_bottom,
    "$bottom": _top_bottom,
    "$topN": _top_bottom,
    "$bottomN": _top_bottom,
    "$firstN": _first_last_n,
    "$lastN": _first_last_n,
    "$maxN": _min_max_n,
    "$minN": _min_max_n,
    "$median": _percentile,
    "$percentile": _percentile,
    "$accumulator": _javascript,
}


def parse_statement(field: str, spec, compile_expr: Compile, collator=None) -> Statement:
    """Parse `field: {$op: arg}` of a $group (or $bucket/$bucketAuto output)."""
    if "." in field:
        raise MongoError(40235, f"The field name '{field}' cannot contain '.'")
    if field.startswith("$"):
        raise MongoError(40236, f"The field name '{field}' cannot be an operator name")
    if not isinstance(spec, dict):
        raise MongoError(40234, f"The field '{field}' must be an accumulator object")
    if len(spec) != 1:
        raise MongoError(40238, f"The field '{field}' must specify one accumulator")
    op, arg = next(iter(spec.items()))
    parser = ACCUMULATORS.get(op)
    if parser is None:
        raise MongoError(15952, f"unknown group operator '{op}'")
    return parser(field, op, arg, compile_expr, collator)
