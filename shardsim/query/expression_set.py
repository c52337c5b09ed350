"""Set expressions: `$setUnion`, `$setIntersection`, `$setDifference`, `$setEquals`,
`$setIsSubset`, `$anyElementTrue`, `$allElementsTrue`.

Arrays are taken as sets: duplicates collapse and equality is BSON equality under the
command's collation (`1 == 1.0`, `"a" == "A"` under a strength-2 collation).  The
server (src/mongo/db/pipeline/expression*.cpp, `evaluate(const ExpressionSet...)`)
builds ordered value sets, so `$setUnion` and `$setIntersection` answer their
elements in BSON sort order; `$setDifference` keeps the first array's order, dropping
duplicates.  A null or missing operand makes `$setUnion`, `$setIntersection` and
`$setDifference` null; `$setEquals` and `$setIsSubset` refuse it like any non-array.
"""

from __future__ import annotations

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.collation import comparison_keys, expression_context
from mongosim.shardsim.query.expression_core import compile_node, fixed_args, nullish, register, to_bool, varargs
from mongosim.shardsim.query.values import type_name


def _key():
    """The BSON-equality (and order) key under the collation in force while compiling."""
    return comparison_keys.sort_key_for(expression_context.current())


def _ordered_set(values, key) -> dict:
    out: dict = {}
    for v in values:
        out.setdefault(key(v), v)
    return out


def _sorted_values(s: dict) -> list:
    return [s[k] for k in sorted(s)]


@register("$setUnion")
def _set_union(arg):
    fs, key = varargs(arg), _key()

    def f(vs):
        union: dict = {}
        for g in fs:
            v = g(vs)
            if nullish(v):
                return None
            if type(v) is not list:
                raise MongoError(17043, f"All operands of $setUnion must be arrays. One argument is of type: {type_name(v)}")
            for e in v:
                union.setdefault(key(e), e)
        return _sorted_values(union)

    return f


@register("$setIntersection")
def _set_intersection(arg):
    fs, key = varargs(arg), _key()

    def f(vs):
        current = None
        for g in fs:
            v = g(vs)
            if nullish(v):
                return None
            if type(v) is not list:
                raise MongoError(17047, f"All operands of $setIntersection must be arrays. One argument is of type: {type_name(v)}")
            if current is None:
                current = _ordered_set(v, key)
            elif current:
                other = {key(e) for e in v}
                current = {k: e for k, e in current.items() if k in other}
        return _sorted_values(current or {})

    return f


@register("$setDifference")
def _set_difference(arg):
    a, b = fixed_args("$setDifference", arg, 2)
    key = _key()

    def f(vs):
        lhs, rhs = a(vs), b(vs)
        if nullish(lhs) or nullish(rhs):
            return None
        if type(lhs) is not list:
            raise MongoError(17048, f"both operands of $setDifference must be arrays. First argument is of type: {type_name(lhs)}")
        if type(rhs) is not list:
            raise MongoError(17049, f"both operands of $setDifference must be arrays. Second argument is of type: {type_name(rhs)}")
        seen = {key(e) for e in rhs}  # (serves both to filter rhs's elements and to drop duplicates)
        out = []
        for e in lhs:
            k = key(e)
            if k not in seen:
                seen.add(k)
                out.append(e)
        return out

    return f


@register("$setEquals")
def _set_equals(arg):
    items = arg if isinstance(arg, list) else [arg]
    if len(items) < 2:
        raise MongoError(17045, f"$setEquals needs at least two arguments had: {len(items)}")
    fs, key = [compile_node(a) for a in items], _key()

    def f(vs):
        first = None
        for i, g in enumerate(fs):
            v = g(vs)
            if type(v) is not list:
                raise MongoError(17044, f"All operands of $setEquals must be arrays. {i + 1}-th argument is of type: {type_name(v)}")
            s = {key(e) for e in v}
            if first is None:
                first = s
            elif s != first:
                return False
        return True

    return f


@register("$setIsSubset")
def _set_is_subset(arg):
    a, b = fixed_args("$setIsSubset", arg, 2)
    key = _key()

    def f(vs):
        lhs = a(vs)
        if type(lhs) is not list:
            raise MongoError(17046, f"both operands of $setIsSubset must be arrays. First argument is of type: {type_name(lhs)}")
        rhs = b(vs)
        if type(rhs) is not list:
            raise MongoError(17042, f"both operands of $setIsSubset must be arrays. Second argument is of type: {type_name(rhs)}")
        full = {key(e) for e in rhs}
        return all(key(e) in full for e in lhs)

    return f


def _elements_true(name, code, test):
    def build(arg):
        (a,) = fixed_args(name, arg, 1)

        def f(vs):
            v = a(vs)
            if type(v) is not list:
                raise MongoError(code, f"{name}'s argument must be an array, but is {type_name(v)}")
            return test(to_bool(e) for e in v)

        return f

    return build


register("$anyElementTrue")(_elements_true("$anyElementTrue", 17041, any))
register("$allElementsTrue")(_elements_true("$allElementsTrue", 17040, all))
