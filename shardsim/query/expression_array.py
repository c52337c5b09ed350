"""Array expressions beyond the basic ones: `$sortArray` and `$zip`.

`$sortArray` sorts by BSON order under the collation (`sortBy: 1 | -1`) or, with a
sort pattern (`sortBy: {a: 1}`), like a `$sort` on documents (`query.sorting`; an
element that is not a document has every field missing).  The sort is stable.

`$zip` transposes `inputs` (arrays): shortest length unless `useLongestLength`, where
shorter inputs are padded with `defaults` (null without them).  A null or missing
input makes the result null.  Messages and codes: src/mongo/db/pipeline/expression.cpp
(ExpressionSortArray, ExpressionZip).
"""

from __future__ import annotations

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.collation import comparison_keys, expression_context
from mongosim.shardsim.query.expression_core import compile_node, nullish, register
from mongosim.shardsim.query.fmt import bson_str
from mongosim.shardsim.query.sorting import Reversed, parse_sort, sort_key_fn
from mongosim.shardsim.query.values import type_name


def _sort_by_key(sort_by):
    collator = expression_context.current()
    if type(sort_by) in (int, float) and sort_by in (1, -1):
        key = comparison_keys.sort_key_for(collator)
        return key if sort_by == 1 else (lambda v: Reversed(key(v)))
    if isinstance(sort_by, dict) and sort_by:
        try:
            parse_sort(sort_by)
        except MongoError:
            raise MongoError(2942505, f"$sortArray sortBy must be either 1, -1 or a sort pattern object, found: {bson_str(sort_by)}") from None
        doc_key = sort_key_fn(sort_by, collator)
        return lambda v: doc_key(v if type(v) is dict else {})
    raise MongoError(2942505, f"$sortArray sortBy must be either 1, -1 or a sort pattern object, found: {bson_str(sort_by)}")


@register("$sortArray")
def _sort_array(arg):
    if not isinstance(arg, dict):
        raise MongoError(2942500, f"$sortArray requires an object as an argument, found: {type_name(arg)}")
    for k in arg:
        if k not in ("input", "sortBy"):
            raise MongoError(2942501, f"$sortArray found an unknown argument: {k}")
    if "input" not in arg:
        raise MongoError(2942502, "$sortArray requires 'input' to be specified")
    if "sortBy" not in arg:
        raise MongoError(2942503, "$sortArray requires 'sortBy' to be specified")
    inp, key = compile_node(arg["input"]), _sort_by_key(arg["sortBy"])

    def f(vs):
        v = inp(vs)
        if nullish(v):
            return None
        if type(v) is not list:
            raise MongoError(2942504, f"The input argument to $sortArray must be an array, but was of type: {type_name(v)}")
        return sorted(v, key=key)

    return f


@register("$zip")
def _zip(arg):
    if not isinstance(arg, dict):
        raise MongoError(34460, f"$zip only supports an object as an argument, found {type_name(arg)}")
    for k in arg:
        if k not in ("inputs", "useLongestLength", "defaults"):
            raise MongoError(34464, f"$zip found an unknown argument: {k}")
    inputs = arg.get("inputs")
    if inputs is None:
        raise MongoError(34465, "$zip requires at least one input array")
    if type(inputs) is not list:
        raise MongoError(34461, f"inputs must be an array of expressions, found {type_name(inputs)}")
    longest = arg.get("useLongestLength", False)
    if type(longest) is not bool:
        raise MongoError(34463, f"useLongestLength must be a bool, found {type_name(longest)}")
    defaults = arg.get("defaults")
    if defaults is not None:
        if type(defaults) is not list:
            raise MongoError(34462, f"defaults must be an array of expressions, found {type_name(defaults)}")
        if not longest:
            raise MongoError(34466, "cannot specify defaults unless useLongestLength is true")
        if len(defaults) != len(inputs):
            raise MongoError(34467, "defaults and inputs must have the same length")
    if not inputs:
        raise MongoError(34465, "$zip requires at least one input array")
    ins = [compile_node(e) for e in inputs]
    defs = [compile_node(e) for e in defaults] if defaults is not None else None

    def f(vs):
        arrays = []
        for g in ins:
            v = g(vs)
            if nullish(v):
                return None
            if type(v) is not list:
                raise MongoError(34468, f"$zip found a non-array expression in input: {bson_str(v)}")
            arrays.append(v)
        pads = [None if nullish(v) else v for v in (d(vs) for d in defs)] if defs else [None] * len(arrays)
        n = max(map(len, arrays)) if longest else min(map(len, arrays))
        return [[a[i] if i < len(a) else pads[j] for j, a in enumerate(arrays)] for i in range(n)]

    return f
