"""Query filters: `Matcher(filter).matches(doc)`.

A filter is a conjunction of `path: condition` pairs plus logical operators
(`$and`, `$or`, `$nor`, `$expr`).  The rules a learner must know:

* **Path traversal.**  `a.b` looks up `a`; if `a` is an array, `b` is looked
  up in every *object* element (scalars are skipped, nested arrays are not
  entered); a numeric component (`a.1`) also selects that array position.  A
  path through a scalar (`{a: 5}`, path `a.b`) yields "missing".
* **Leaf arrays.**  At the end of the path an array is tested element by
  element and then as a whole: `{a: 1}` matches `{a: [1, 2]}`, `{a: [1, 2]}`
  matches it too.  `$size` and `$elemMatch` see only the whole array.
* **Null.**  `{a: null}` matches a null value *and* a missing field.
* **Type bracketing.**  `$gt/$gte/$lt/$lte` compare only values of the same
  canonical type (numbers with numbers, strings with strings); NaN equals
  NaN and is neither greater nor less than anything.
* **Negations** (`$ne`, `$nin`, `$not`, `$nor`) negate the whole path test,
  so `{a: {$ne: 1}}` rejects `{a: [1, 2]}`.

The positional operator (`$` in updates and projections) needs the index of
the array element that satisfied the filter: `Matcher.match_position(doc)`
returns it (the offset in the outermost array traversed, as the server's
MatchDetails::elemMatchKey).

Filters are compiled once into closures; `{_id: x}` and other top-level
equalities compile to a single dict lookup and one comparison.

Hand-written because mongomock (the test oracle) is not a library for
production use and diverges from the server in documented places (see
tests/query/test_divergences.py); the semantics follow the server's
`src/mongo/db/matcher/` (expression_leaf.cpp, path.cpp, expression_parser.cpp).
"""

from __future__ import annotations

import math
import re
from typing import Any, Callable

from bson import DBRef, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex
from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.collation import comparison_keys, expression_context
from mongosim.shardsim.query.extensions_callback import PATH_OPERATORS, parse_text
from mongosim.shardsim.query.regex import compile_regex, regex_from
from mongosim.shardsim.query.values import (
    MISSING,
    R_MAXKEY,
    R_MINKEY,
    R_NUM,
    TYPE_ALIASES,
    canonical_rank,
    dbref_doc,
    regex_flags,
    sort_key,
    type_number,
)

__all__ = ["Matcher", "compile_filter", "regex_from", "LOGICAL_OPS"]

LOGICAL_OPS = frozenset({"$and", "$or", "$nor"})
_TOP_LEVEL_OK = frozenset({"$and", "$or", "$nor", "$expr", "$comment", "$alwaysTrue", "$alwaysFalse", "$where", "$text", "$jsonSchema", "$sampleRate"})
_NUMT = frozenset({int, float, Int64})

Pred = Callable[[Any, Any], bool]  # (doc, details|None) -> bool

# Top-level operators compiled by modules of their own (`$jsonSchema`: shardsim.json_schema registers here).
TOP_LEVEL_EXTENSIONS: dict[str, Callable[[Any], Pred]] = {}


class Matcher:
    """A compiled filter.  Construction validates (raising MongoError like the server)."""

    __slots__ = ("filter", "_fn", "matches")

    def __init__(self, filter: dict | None, variables: dict | None = None, collator=None):
        """`collator`: the command's collation (None: the one in force while compiling, by default simple)."""
        self.filter = filter or {}
        if not isinstance(self.filter, dict):
            raise MongoError("TypeMismatch", "Expected a filter to be an object")
        if collator is None:
            self._fn = compile_filter(self.filter, variables=variables)
        else:
            with expression_context.compiling(collator):
                self._fn = compile_filter(self.filter, variables=variables)
        fn = self._fn
        self.matches: Callable[[dict], bool] = lambda doc: fn(doc, None)

    def shown_as(self, filter: dict) -> "Matcher":
        """This compiled filter, shown (explain's stages, `parsedQuery`) as `filter`, an optimized form of
        the same predicate (`or_to_in`)."""
        twin = object.__new__(Matcher)
        twin.filter, twin._fn, twin.matches = filter, self._fn, self.matches
        return twin

    def match_position(self, doc) -> tuple[bool, int | None]:
        """(matched, index of the array element that matched or None)."""
        details = [None]
        ok = self._fn(doc, details)
        return ok, details[0] if ok else None

    def __repr__(self) -> str:
        return f"Matcher({self.filter!r})"


# ---------------------------------------------------------------------------------
# compilation


def compile_filter(flt: dict, *, top: bool = True, variables: dict | None = None) -> Pred:
    """`variables`: the command's variables, which `$expr` may use (checked when compiled)."""
    preds: list[Pred] = []
    for key, val in flt.items():
        if key.startswith("$"):
            preds.append(_compile_top_op(key, val, variables))
        else:
            preds.append(_compile_path(key, val))
    if not preds:
        return _true
    if len(preds) == 1:
        return preds[0]
    return _and(preds)


def _true(doc, details):
    return True


def _false(doc, details):
    return False


def _and(preds: list[Pred]) -> Pred:
    preds = tuple(preds)

    def f(doc, details):
        for p in preds:
            if not p(doc, details):
                return False
        return True

    return f


def _or(preds: list[Pred]) -> Pred:
    preds = tuple(preds)

    def f(doc, details):
        for p in preds:
            if p(doc, details):
                return True
        return False

    return f


def _not(pred: Pred) -> Pred:
    return lambda doc, details: not pred(doc, None)


def _compile_top_op(key: str, val, variables: dict | None = None) -> Pred:
    if key in LOGICAL_OPS:
        if not isinstance(val, list) or not val:
            raise MongoError("BadValue", f"{key} must be a nonempty array")
        subs = []
        for item in val:
            if not isinstance(item, dict):
                raise MongoError("BadValue", "$or/$and/$nor entries need to be full objects")
            subs.append(compile_filter(item, top=False, variables=variables))
        if key == "$and":
            return _and(subs)
        if key == "$or":
            return _or(subs)
        inner = _or(subs)
        return lambda doc, details: not inner(doc, None)
    if key == "$expr":
        from mongosim.shardsim.query.expressions import compile_expression, to_bool

        expr = compile_expression(val)
        if variables is None:
            return lambda doc, details: to_bool(expr(doc))
        from mongosim.shardsim.query.variables import check_references

        check_references(val, variables)
        return lambda doc, details: to_bool(expr(doc, variables))
    if key == "$comment":
        return _true
    if key == "$text":
        parse_text(val)
        return _true  # (the text plan finds and checks the documents: shardsim/fts/text_stages.py)
    if key == "$alwaysTrue":
        return _true
    if key == "$alwaysFalse":
        return _false
    if key in TOP_LEVEL_EXTENSIONS:
        return TOP_LEVEL_EXTENSIONS[key](val)
    if key in _TOP_LEVEL_OK:
        raise MongoError("NotImplemented", f"{key} is not supported by mongosim")
    raise MongoError(
        "BadValue",
        f"unknown top level operator: {key}. If you have a field name that starts with a '$' symbol, "
        "consider using $getField or $setField.",
    )


def _is_operator_doc(val) -> bool:
    """isExpressionDocument: the first field is $-prefixed and not a DBRef field."""
    if type(val) is not dict or not val:
        return False
    first = next(iter(val))
    return first.startswith("$") and first not in ("$ref", "$id", "$db")


def _compile_path(path: str, val) -> Pred:
    if _is_operator_doc(val):
        return _compile_ops(path, val)
    if isinstance(val, (Regex, re.Pattern)):
        return _leaf(path, _regex_test(regex_from(val)), expand=True)
    return _leaf(path, _eq_test(val), expand=True)


def _compile_ops(path: str, ops: dict) -> Pred:
    preds: list[Pred] = []
    regex_src = ops.get("$regex", MISSING)
    options = ops.get("$options", MISSING)
    if options is not MISSING and regex_src is MISSING:
        raise MongoError("BadValue", "$options needs a $regex")
    for op, arg in ops.items():
        if op == "$options":
            continue
        if op == "$regex":
            preds.append(_leaf(path, _regex_test(_parse_regex(arg, options)), expand=True))
            continue
        if op == "$all":
            preds.append(_compile_all(path, arg))
            continue
        if op == "$not":
            preds.append(_compile_not(path, arg))
            continue
        preds.append(_compile_op(path, op, arg))
    if len(preds) == 1:
        return preds[0]
    return _and(preds)


def _compile_not(path: str, arg) -> Pred:
    if isinstance(arg, (Regex, re.Pattern)):
        inner = _leaf(path, _regex_test(regex_from(arg)), expand=True)
    elif isinstance(arg, dict):
        if not arg:
            raise MongoError("BadValue", "$not cannot be empty")
        if not _is_operator_doc(arg):
            raise MongoError("BadValue", f"unknown operator: {next(iter(arg))}")
        inner = _compile_ops(path, arg)
    else:
        raise MongoError("BadValue", "$not needs a regex or a document")
    return lambda doc, details: not inner(doc, None)


def _op_test(op: str, arg, ops: dict):
    """(test(value)->bool, expand_leaf_arrays, negated, is_elem_match) of one operator."""
    if op == "$eq":
        return _eq_test(arg, literal_regex=True), True, False, False
    if op == "$ne":
        return _eq_test(arg, literal_regex=True), True, True, False
    if op in _CMP:
        return _cmp_test(op, arg), True, False, False
    if op == "$in":
        if not isinstance(arg, list):
            raise MongoError("BadValue", "$in needs an array")
        return _in_test(arg), True, False, False
    if op == "$nin":
        if not isinstance(arg, list):
            raise MongoError("BadValue", "$nin needs an array")
        return _in_test(arg), True, True, False
    if op == "$exists":
        return (lambda v: v is not MISSING), False, not truthy_arg(arg), False
    if op == "$type":
        return _type_test(arg), True, False, False
    if op == "$size":
        return _size_test(arg), False, False, False
    if op == "$mod":
        return _mod_test(arg), True, False, False
    if op == "$elemMatch":
        return _elem_match_test(arg), False, False, True
    if op in _BITS:
        return _bits_test(op, arg), True, False, False
    if op == "$regex":
        return _regex_test(_parse_regex(arg, ops.get("$options", MISSING))), True, False, False
    ext = PATH_OPERATORS.get(op)
    if ext is not None:
        test, expand = ext(op, arg)
        return test, expand, False, False
    if op in ("$near", "$nearSphere", "$geoWithin", "$geoIntersects", "$within", "$text"):
        raise MongoError("NotImplemented", f"{op} is not supported by mongosim")
    raise MongoError("BadValue", f"unknown operator: {op}")


def _compile_op(path: str, op: str, arg) -> Pred:
    if op == "$all":
        return _compile_all(path, arg)
    test, expand, negated, em = _op_test(op, arg, {})
    inner = _leaf(path, test, expand=expand, elem_match=em)
    if negated:
        return lambda doc, details: not inner(doc, None)
    return inner


def _value_test(ops: dict) -> Callable[[Any], bool]:
    """The operators of a value-form $elemMatch applied to one element (no array expansion)."""
    tests = []
    for op, arg in ops.items():
        if op == "$options":
            continue
        if op == "$not":
            if isinstance(arg, (Regex, re.Pattern)):
                inner = _regex_test(regex_from(arg))
            elif isinstance(arg, dict) and arg:
                inner = _value_test(arg)
            else:
                raise MongoError("BadValue", "$not needs a regex or a document")
            tests.append(lambda v, inner=inner: not inner(v))
            continue
        if op == "$all":
            items = [_eq_test(i) for i in (arg if isinstance(arg, list) else [])]
            tests.append(lambda v, items=items: bool(items) and all(t(v) for t in items))
            continue
        test, _expand, negated, _em = _op_test(op, arg, ops)
        if negated:
            tests.append(lambda v, test=test: not test(v))
        else:
            tests.append(test)
    return lambda v: all(t(v) for t in tests)


def truthy_arg(arg) -> bool:
    """An `$exists`-style boolean argument: null, false and zero are false; anything else is true."""
    if arg is None or arg is MISSING:
        return False
    if isinstance(arg, bool):
        return arg
    if isinstance(arg, (int, float)):
        return arg != 0
    if isinstance(arg, Decimal128):
        return arg.to_decimal() != 0
    return True


# ---------------------------------------------------------------------------------
# path traversal


def _leaf(path: str, test: Callable[[Any], bool], *, expand: bool, elem_match: bool = False) -> Pred:
    parts = tuple(path.split("."))
    if any(p == "" for p in parts):
        raise MongoError("BadValue", f"FieldPath field names may not be empty strings.")
    if len(parts) == 1:
        p = parts[0]
        if elem_match:

            def f1(doc, details):
                v = doc.get(p, MISSING)
                if type(v) is not list:
                    return False
                if details is None:
                    return test(v)
                return test(v, details)

            return f1
        if expand:

            def f(doc, details):
                v = doc.get(p, MISSING)
                if type(v) is list:
                    for k, e in enumerate(v):
                        if test(e):
                            if details is not None:
                                details[0] = k
                            return True
                return test(v)

            return f

        def g(doc, details):
            return test(doc.get(p, MISSING))

        return g

    n = len(parts)

    def general(doc, details):
        for v, pos in _walk(doc, parts, 0, n, expand, None):
            if elem_match:
                if type(v) is list:
                    d = [None] if details is not None else None
                    ok = test(v, d) if d is not None else test(v)
                    if ok:
                        if details is not None:
                            details[0] = pos if pos is not None else d[0]
                        return True
                continue
            if test(v):
                if details is not None and pos is not None:
                    details[0] = pos
                return True
        return False

    return general


def _walk(container, parts, i, n, expand, pos):
    """Yield (value, array offset) for parts[i:] looked up in the document `container`.

    A transcription of the server's BSONElementIterator (src/mongo/db/matcher/path.cpp):
    getFieldDottedOrArray descends through documents and stops at the first array;
    a scalar before the end of the path yields "missing".
    """
    x = container.get(parts[i], MISSING)
    j = i + 1
    while j < n and (type(x) is dict or type(x) is DBRef):
        x = (x if type(x) is dict else dbref_doc(x)).get(parts[j], MISSING)  # (a DBRef is {$ref, $id, ...})
        j += 1
    if type(x) is list:
        yield from _iter_array(x, parts, j, n, expand, pos)
    elif j == n:
        yield x, pos
    else:
        yield MISSING, pos


def _iter_array(arr, parts, j, n, expand, pos):
    """The IN_ARRAY state: `arr` was reached with parts[j:] still to go."""
    if j == n:
        if expand:
            for k, e in enumerate(arr):
                yield e, (k if pos is None else pos)
        yield arr, pos
        return
    nxt = parts[j]
    numeric = nxt.isdigit() and nxt.isascii()
    for k, e in enumerate(arr):
        te = type(e)
        if te is DBRef:
            e, te = dbref_doc(e), dict
        if te is dict:
            # implicit traversal: the outermost array offset wins
            yield from _walk(e, parts, j, n, expand, k if pos is None else pos)
            if numeric and str(k) == nxt:
                # then the explicit offset (not an implicit traversal: offset not overridden)
                if j + 1 == n:
                    yield e, pos
                else:
                    yield from _walk(e, parts, j + 1, n, expand, pos)
        elif numeric and str(k) == nxt:
            if j + 1 == n:
                yield e, pos  # the element itself, not expanded
            elif te is list:
                yield from _iter_array(e, parts, j + 1, n, expand, pos)


def walk_values(doc, path: str, expand: bool = True):
    """All values a query would test at `path` (public for projection/sort helpers)."""
    parts = tuple(path.split("."))
    return [v for v, _ in _walk(doc, parts, 0, len(parts), expand, None)]


# ---------------------------------------------------------------------------------
# leaf tests


def _safe_key(v):
    try:
        return sort_key(v)
    except TypeError:
        return None


def _eq_test(value, literal_regex: bool = False) -> Callable[[Any], bool]:
    t = type(value)
    collator = expression_context.current()
    if collator is not None and (t is str or t is dict or t is list):
        return _collated_eq_test(value, collator)
    if value is None:
        return lambda v: v is None or v is MISSING
    if t is str:
        return lambda v: v == value and type(v) is str
    if t is bool:
        return lambda v: v is value
    if t in _NUMT:
        if value != value:
            return lambda v: (type(v) is float and v != v) or (type(v) is Decimal128 and v.to_decimal().is_nan())
        key = sort_key(value)

        def num_eq(v):
            tv = type(v)
            if tv in _NUMT:
                return v == value
            if tv is Decimal128:
                return sort_key(v) == key
            return False

        return num_eq
    if t is ObjectId:
        return lambda v: type(v) is ObjectId and v == value
    if t is MinKey or t is MaxKey:
        return lambda v: type(v) is t
    key = sort_key(value)
    return lambda v: v is not MISSING and _safe_key(v) == key


def _collated_eq_test(value, collator) -> Callable[[Any], bool]:
    """Equality with a string (or an object or array holding strings) under a collation."""
    ckey = comparison_keys.sort_key_for(collator)
    key = ckey(value)
    if type(value) is str:
        k = key[1]
        ck = collator.comparison_key
        return lambda v: type(v) is str and ck(v) == k

    def test(v):
        if v is MISSING:
            return False
        try:
            return ckey(v) == key
        except TypeError:
            return False

    return test


_CMP = {"$gt", "$gte", "$lt", "$lte"}


def _cmp_test(op: str, value) -> Callable[[Any], bool]:
    if isinstance(value, (Regex, re.Pattern)) and op in _CMP:
        pass
    rank = canonical_rank(value)
    key = sort_key(value)
    inclusive = op in ("$gte", "$lte")
    if value is None:
        if inclusive:
            return lambda v: v is None or v is MISSING
        return lambda v: False
    if rank == R_MINKEY or rank == R_MAXKEY:
        # MinKey/MaxKey compare across types by canonical rank.
        def mm(v):
            # different canonical types (missing included): only the rank of the bound matters
            r = canonical_rank(v)
            c = (r > rank) - (r < rank)
            return _cmp_ok(op, c)

        return mm
    if rank == R_NUM:
        nan = key == (R_NUM, 0)

        def numcmp(v):
            tv = type(v)
            if tv is int or tv is float or tv is Int64:
                if v != v:
                    return nan and inclusive
                if nan:
                    return False
                c = (v > value) - (v < value) if tv is not float or not isinstance(value, Decimal128) else None
                if c is None:
                    kv = sort_key(v)
                    c = (kv > key) - (kv < key)
                return _cmp_ok(op, c)
            if tv is Decimal128:
                kv = sort_key(v)
                if kv == (R_NUM, 0):
                    return nan and inclusive
                if nan:
                    return False
                return _cmp_ok(op, (kv > key) - (kv < key))
            return False

        if type(value) is Decimal128:

            def deccmp(v):
                kv = _safe_key(v)
                if kv is None or kv[0] != R_NUM:
                    return False
                vn = kv == (R_NUM, 0)
                if vn or nan:
                    return vn and nan and inclusive
                return _cmp_ok(op, (kv > key) - (kv < key))

            return deccmp
        return numcmp

    safe_key = _safe_key
    collator = expression_context.current()
    if collator is not None:
        ckey = comparison_keys.sort_key_for(collator)
        key = ckey(value)

        def safe_key(v):
            try:
                return ckey(v)
            except TypeError:
                return None

    def gen(v):
        if v is MISSING:
            return False
        kv = safe_key(v)
        if kv is None or kv[0] != rank:
            return False
        return _cmp_ok(op, (kv > key) - (kv < key))

    return gen


def _cmp_ok(op: str, c: int) -> bool:
    if op == "$gt":
        return c > 0
    if op == "$gte":
        return c >= 0
    if op == "$lt":
        return c < 0
    return c <= 0


def _in_test(values: list) -> Callable[[Any], bool]:
    keys = set()
    regexes = []
    has_null = False
    collator = expression_context.current()
    key_of = sort_key if collator is None else comparison_keys.sort_key_for(collator)
    safe_key = _safe_key
    if collator is not None:
        def safe_key(v):
            try:
                return key_of(v)
            except TypeError:
                return None
    for v in values:
        if isinstance(v, (Regex, re.Pattern)):
            regexes.append(_regex_test(regex_from(v)))
        elif isinstance(v, dict) and v and next(iter(v)).startswith("$"):
            raise MongoError("BadValue", "cannot nest $ under $in")
        else:
            if v is None:
                has_null = True
            keys.add(key_of(v))

    def test(v):
        if v is MISSING:
            return has_null
        k = safe_key(v)
        if k in keys:
            return True
        for r in regexes:
            if r(v):
                return True
        return False

    return test


def _type_test(arg) -> Callable[[Any], bool]:
    args = arg if isinstance(arg, list) else [arg]
    if not args:
        raise MongoError("FailedToParse", "$type must match at least one type")
    codes = set()
    number = False
    for a in args:
        if isinstance(a, str):
            if a == "number":
                number = True
                continue
            if a not in TYPE_ALIASES:
                raise MongoError("BadValue", f"Unknown type name alias: {a}")
            codes.add(TYPE_ALIASES[a])
        elif isinstance(a, (int, float, Int64, Decimal128)) and not isinstance(a, bool):
            f = float(a.to_decimal()) if isinstance(a, Decimal128) else float(a)
            if f != int(f):
                raise MongoError("BadValue", f"Invalid numerical type code: {a}")
            code = int(f)
            if code not in set(TYPE_ALIASES.values()):
                raise MongoError("BadValue", f"Invalid numerical type code: {a}")
            codes.add(code)
        else:
            raise MongoError("TypeMismatch", "type must be represented as a number or a string")

    def test(v):
        if v is MISSING:
            return False
        try:
            c = type_number(v)
        except TypeError:
            return False
        if number and c in (1, 16, 18, 19):
            return True
        return c in codes

    return test


def _size_test(arg) -> Callable[[Any], bool]:
    # expression_parser.cpp: "$size needs a number", "$size must be a whole number",
    # "$size must be representable as a 32-bit integer", "$size may not be negative"
    if isinstance(arg, bool) or not isinstance(arg, (int, float, Int64, Decimal128)):
        raise MongoError("BadValue", "$size needs a number")
    if isinstance(arg, Decimal128):
        raise MongoError("BadValue", "$size needs a number")
    f = float(arg)
    if f != f or f in (math.inf, -math.inf) or f != math.floor(f):
        raise MongoError("BadValue", "$size must be a whole number")
    if isinstance(arg, (int, Int64)) and not isinstance(arg, float) and not (-(2**31) <= int(arg) < 2**31):
        raise MongoError("BadValue", "$size must be representable as a 32-bit integer")
    n = int(f)
    if n < 0:
        raise MongoError("BadValue", "$size may not be negative")
    return lambda v: type(v) is list and len(v) == n


def _to_long_trunc(x) -> int | None:
    if isinstance(x, Decimal128):
        x = x.to_decimal()
        if x.is_nan() or x.is_infinite():
            return None
        return int(x)
    if isinstance(x, float):
        if x != x or x in (math.inf, -math.inf):
            return None
        return int(x)
    return int(x)


def _mod_test(arg) -> Callable[[Any], bool]:
    if not isinstance(arg, list):
        raise MongoError("BadValue", "malformed mod, needs to be an array")
    if len(arg) < 2:
        raise MongoError("BadValue", "malformed mod, not enough elements")
    if len(arg) > 2:
        raise MongoError("BadValue", "malformed mod, too many elements")
    d, r = arg
    for what, x in (("divisor", d), ("remainder", r)):
        if isinstance(x, bool) or not isinstance(x, (int, float, Int64, Decimal128)):
            raise MongoError("BadValue", f"malformed mod, {what} not a number")
        if _to_long_trunc(x) is None:
            raise MongoError("BadValue", f"malformed mod, {what} value is invalid :: caused by :: Unable to coerce NaN/Inf to integral type")
    dv = _to_long_trunc(d)
    rv = _to_long_trunc(r)
    if dv == 0:
        raise MongoError("BadValue", "divisor cannot be 0")

    def test(v):
        if isinstance(v, bool) or not isinstance(v, (int, float, Int64, Decimal128)):
            return False
        x = _to_long_trunc(v)
        if x is None:
            return False
        m = abs(x) % abs(dv)
        if x < 0:
            m = -m
        return m == rv

    return test


_BITS = {"$bitsAllSet", "$bitsAnySet", "$bitsAllClear", "$bitsAnyClear"}


def _bits_test(op: str, arg) -> Callable[[Any], bool]:
    if isinstance(arg, list):
        mask = 0
        for b in arg:
            mask |= 1 << int(b)
    elif isinstance(arg, (int, float, Int64)) and not isinstance(arg, bool):
        mask = int(arg)
    else:
        raise MongoError("BadValue", f"{op} takes an Array, a number, or a BinData but received: {arg!r}")

    def test(v):
        if isinstance(v, bool):
            return False
        if isinstance(v, float):
            if v != v or v != int(v):
                return False
            v = int(v)
        if not isinstance(v, int):
            if isinstance(v, bytes):
                v = int.from_bytes(bytes(v), "little")
            else:
                return False
        v &= (1 << 64) - 1
        if op == "$bitsAllSet":
            return v & mask == mask
        if op == "$bitsAnySet":
            return v & mask != 0
        if op == "$bitsAllClear":
            return v & mask == 0
        return v & mask != mask

    return test


def _where_inside(flt: dict) -> bool:
    for k, v in flt.items():
        if k == "$where":
            return True
        if k in LOGICAL_OPS and isinstance(v, list) and any(isinstance(x, dict) and _where_inside(x) for x in v):
            return True
    return False


def _elem_match_test(arg):
    if not isinstance(arg, dict):
        raise MongoError("BadValue", "$elemMatch needs an Object")
    first = next(iter(arg), "")
    if first.startswith("$") and first not in _TOP_LEVEL_OK:
        elem_ok = _value_test(arg)
    else:
        if _where_inside(arg):  # (parsed at the sub-document level)
            raise MongoError("BadValue", "$where can only be applied to the top-level document")
        sub = compile_filter(arg, top=False)

        def elem_ok(e):
            return isinstance(e, dict) and sub(e, None)

    def test(v, details=None):
        if type(v) is not list:
            return False
        for k, e in enumerate(v):
            if elem_ok(e):
                if details is not None:
                    details[0] = k
                return True
        return False

    return test


def _compile_all(path: str, arg) -> Pred:
    if not isinstance(arg, list):
        raise MongoError("BadValue", "$all needs an array")
    if not arg:
        return _false
    preds = []
    for item in arg:
        if isinstance(item, dict) and item and next(iter(item)) == "$elemMatch":
            preds.append(_leaf(path, _elem_match_test(item["$elemMatch"]), expand=False, elem_match=True))
        elif isinstance(item, dict) and item and next(iter(item)).startswith("$"):
            raise MongoError("BadValue", "no $ expressions in $all")
        elif isinstance(item, (Regex, re.Pattern)):
            preds.append(_leaf(path, _regex_test(regex_from(item)), expand=True))
        else:
            preds.append(_leaf(path, _eq_test(item), expand=True))
    return _and(preds)


# ---------------------------------------------------------------------------------
# regular expressions

def _parse_regex(arg, options) -> tuple[re.Pattern, str, str]:
    opts = ""
    if options is not MISSING:
        if not isinstance(options, str):
            raise MongoError("BadValue", "$options has to be a string")
        opts = options
    if isinstance(arg, str):
        return (compile_regex(arg, opts), arg, opts)
    if isinstance(arg, (Regex, re.Pattern)):
        c, pattern, flags = regex_from(arg)
        if opts and flags:
            raise MongoError("BadValue", "options set in both $regex and $options")
        f = opts or flags
        return (compile_regex(pattern, f), pattern, f)
    raise MongoError("BadValue", "$regex has to be a string")


def _regex_test(rx: tuple[re.Pattern, str, str]) -> Callable[[Any], bool]:
    compiled, pattern, flags = rx
    search = compiled.search

    def test(v):
        if type(v) is str:
            return search(v) is not None
        if isinstance(v, (Regex, re.Pattern)):
            _, p2, f2 = regex_from(v) if not isinstance(v, Regex) else (None, v.pattern, _flags_of(v))
            return p2 == pattern and f2 == flags
        return False

    return test


def _flags_of(v) -> str:
    return regex_flags(v)


from mongosim.shardsim.query import internal_expr_comparison  # noqa: E402,F401  (registers $_internalExpr*)
