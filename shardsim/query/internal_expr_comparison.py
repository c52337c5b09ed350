"""`$_internalExprEq`, `$_internalExprGt`, `$_internalExprGte`, `$_internalExprLt`, `$_internalExprLte`
(the server's InternalExprComparisonMatchExpression, expression_internal_expr_comparison.h).

The comparisons `$expr` rewrites to, and time-series bucket filters are made of: the value at the
path compared with the operand in the full BSON order (no type bracketing: `"a"` is greater than `5`),
strings under the query's collation.  An array anywhere on the path matches (the `$expr` the
expression stands for decides); a missing path does not.
"""

from __future__ import annotations

from typing import Any, Callable

from mongosim.shardsim.query.collation import comparison_keys, expression_context
from mongosim.shardsim.query.extensions_callback import register_path_operator
from mongosim.shardsim.query.values import MISSING

_OK: dict[str, Callable[[int], bool]] = {
    "$_internalExprEq": lambda c: c == 0,
    "$_internalExprGt": lambda c: c > 0,
    "$_internalExprGte": lambda c: c >= 0,
    "$_internalExprLt": lambda c: c < 0,
    "$_internalExprLte": lambda c: c <= 0,
}


def _compile(op: str, arg: Any) -> tuple[Callable[[Any], bool], bool]:
    ok = _OK[op]
    compare = comparison_keys.compare_for(expression_context.current())

    def test(v: Any) -> bool:
        if type(v) is list:
            return True
        if v is MISSING:
            return False
        return ok(compare(v, arg))

    return test, False


for _name in _OK:
    register_path_operator(_name, _compile)
