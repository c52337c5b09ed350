"""Accumulators used as expressions: `$sum`, `$avg`, `$min`, `$max`, `$stdDevPop`,
`$stdDevSamp` outside `$group` (the server's ExpressionFromAccumulator); `$firstN`, `$lastN`,
`$maxN`, `$minN` over an array (ExpressionFromAccumulatorN) and `$median`, `$percentile`
(ExpressionFromAccumulatorQuantile), which run the `$group` accumulators' own states and
parsers (`accumulators.py`).

With one argument that evaluates to an array the accumulator runs over the array's
elements (`{$sum: "$scores"}`); with one non-array argument over that value alone;
with several arguments over the arguments (an array among several is one value, which
`$sum` ignores and `$min`/`$max` compare as an array).  The accumulators' rules
(src/mongo/db/pipeline/accumulator_sum.cpp, accumulator_avg.cpp, accumulator_min_max.cpp,
accumulator_std_dev.cpp):

* `$sum` adds the numbers and ignores everything else; 0 (an int) when there are none.
  The result keeps the widest type seen and widens on overflow (int -> long -> double).
* `$avg` is null without numbers; a double, or a decimal when a decimal was seen.
* `$min`/`$max` skip null and missing, compare by BSON order under the collation, and
  answer null when nothing was left.
* `$stdDevPop`/`$stdDevSamp` take numbers as doubles with Welford's running mean (the
  server's algorithm, so results agree to the bit); null without numbers (or with a
  single one for the sample deviation).
"""

from __future__ import annotations

import math
from decimal import Decimal

from bson import Decimal128
from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.accumulators import (
    PERCENTILE_SPEC_CODES, Avg, FirstLastN, MinMaxN, Sum, parse_n_args, parse_percentile_spec, percentile_of, to_double,
    validate_n,
)
from mongosim.shardsim.query.collation import comparison_keys, expression_context
from mongosim.shardsim.query.expression_core import compile_node, register
from mongosim.shardsim.query.expression_numeric import as_decimal, numeric_kind, numeric_result
from mongosim.shardsim.query.values import MISSING


def _inputs(arg):
    """Compile the arguments; return `values(vars)` yielding what the accumulator sees."""
    items = arg if isinstance(arg, list) else [arg]
    fs = [compile_node(a) for a in items]
    if len(fs) == 1:
        (g,) = fs

        def one(vs):
            v = g(vs)
            return v if type(v) is list else (v,)

        return one
    return lambda vs: [g(vs) for g in fs]


def _sum(values):
    """The `$group` accumulator's own state (accumulators.Sum) over `values`."""
    state = Sum()
    for v in values:
        state.add(v)
    return state


@register("$sum")
def _sum_op(arg):
    values = _inputs(arg)
    return lambda vs: _sum(values(vs)).result()


@register("$avg")
def _avg_op(arg):
    values = _inputs(arg)

    def f(vs):
        state = Avg()
        for v in values(vs):
            state.add(v)
        return state.result()

    return f


def _min_max(name, sign):
    def build(arg):
        values = _inputs(arg)
        cmp = comparison_keys.compare_for(expression_context.current())

        def f(vs):
            best = MISSING
            for v in values(vs):
                if v is None or v is MISSING:
                    continue
                if best is MISSING or cmp(v, best) * sign > 0:
                    best = v
            return None if best is MISSING else best

        return f

    return build


register("$min")(_min_max("$min", -1))
register("$max")(_min_max("$max", 1))


def _std_dev(sample):
    def build(arg):
        values = _inputs(arg)

        def f(vs):
            n, mean, m2 = 0, 0.0, 0.0
            for v in values(vs):
                k = numeric_kind(v)
                if not k:
                    continue
                x = float(v.to_decimal()) if k == 4 else float(v)
                n += 1
                delta = x - mean
                mean += delta / n
                m2 += delta * (x - mean)
            if n == 0 or (sample and n == 1):
                return None
            return math.sqrt(m2 / (n - 1 if sample else n))

        return f

    return build


register("$stdDevPop")(_std_dev(False))
register("$stdDevSamp")(_std_dev(True))


# --- the {n, input} accumulators over an array (ExpressionFromAccumulatorN) -----------------
#
# `{$maxN: {n, input}}` outside `$group`: `n` is evaluated against the document and checked as the
# accumulator checks it (5787902/5787903/5787908), then `input` must be an array (5788200 "Input
# must be an array": null and missing too) whose elements feed the accumulator's own state
# (accumulators.FirstLastN / MinMaxN), so both forms answer alike by construction.  `$topN` and
# `$bottomN` have no expression form in 8.0 (accumulator_multi.cpp registers them as accumulators
# only): they stay 168 Unrecognized expression.


def _n_operator(op, make_state):
    def build(arg):
        n, inp = parse_n_args(op, arg, compile_node)
        collator = expression_context.current()

        def f(vs):
            k = validate_n(n(vs))
            v = inp(vs)
            if type(v) is not list:
                raise MongoError(5788200, "Input must be an array")
            state = make_state(k, collator)
            for x in v:
                state.add(x)
            return state.result()

        return f

    return build


register("$firstN")(_n_operator("$firstN", lambda k, c: FirstLastN(k, False)))
register("$lastN")(_n_operator("$lastN", lambda k, c: FirstLastN(k, True)))
register("$maxN")(_n_operator("$maxN", lambda k, c: MinMaxN(k, 1, c)))
register("$minN")(_n_operator("$minN", lambda k, c: MinMaxN(k, -1, c)))


# --- $median / $percentile (ExpressionFromAccumulatorQuantile) ------------------------------
#
# The specification is parsed as the accumulator's (fields, `p` constant in [0, 1], method
# "approximate"); a number as input gives that number (a double) for every percentile, an array
# its numeric elements' discrete percentiles (the server uses its discrete algorithm, not a
# t-digest, for the expression: accumulators.percentile_of), anything else nulls.


def _quantile(op):
    def build(arg):
        inp_spec, ps = parse_percentile_spec(op, arg, PERCENTILE_SPEC_CODES[op, "expression"])
        inp = compile_node(inp_spec)
        single = op == "$median"

        def f(vs):
            v = inp(vs)
            if numeric_kind(v):
                out = [to_double(v)] * len(ps)
            elif type(v) is list:
                out = percentile_of([to_double(x) for x in v if numeric_kind(x)], ps)
            else:
                out = [None] * len(ps)
            return out[0] if single else out

        return f

    return build


register("$median")(_quantile("$median"))
register("$percentile")(_quantile("$percentile"))
