"""The global objects and the prototypes' methods (the subset server-side scripts use).

Member access is here (`get_member`/`set_member`): a string, number, array,
function, date or document-object each look up their own properties first,
then their prototype's methods.  Natives take `(interp, this, args)`; those
that call back into the script (map, reduce, sort's comparator, ...) do it
through `interp.call`, which spends the script's step budget.

Globals: Object (keys, values, entries, assign), Array (isArray, and the mongo
shell's sum and avg, which the server's engine also defines), Math, JSON
(stringify, parse), String, Number, Boolean, Date, Error and its kinds, isNaN,
isFinite, parseInt, parseFloat, NumberInt, NumberLong, ObjectId, print (a
no-op: the server's log is not the script's), tojson, and the helpers of the
server's utils.js: hex_md5, Array.contains/unique/stdDev, isNumber, isString,
isObject.
"""

from __future__ import annotations

import datetime
import functools
import hashlib
import json
import math
import random
import re

from bson import ObjectId

from mongosim.shardsim.javascript import mapset, regexp, values
from mongosim.shardsim.javascript.values import (
    UNDEFINED,
    HostValue,
    JSArray,
    JSDate,
    JSFunction,
    JSObject,
    JSRegExp,
    NativeFunction,
    date_string,
    is_callable,
    check_array_length,
    check_string,
    js_add,
    js_pow,
    make_error,
    number_to_string,
    strict_equals,
    to_boolean,
    to_int32,
    to_number,
    to_property_key,
    to_string,
)

OBJECT_PROTO = JSObject({}, None, "Prototype")  # (a "Prototype" is shared by every script: writes are ignored)
values.OBJECT_PROTO[0] = OBJECT_PROTO


def _arg(args: list, i: int):
    return args[i] if i < len(args) else UNDEFINED


def _native(table: dict, name: str):
    def deco(fn):
        table[name] = NativeFunction(fn, name)
        return fn

    return deco


def to_integer(v) -> int:
    """ToIntegerOrInfinity, clamped to ±2^53 so it stays a Python int (NaN is 0)."""
    x = to_number(v)
    if x != x:
        return 0
    return int(max(-(2.0**53), min(x, 2.0**53)))


def _index(key) -> int | None:
    """The array index a property key denotes, else None."""
    t = type(key)
    if t is float:
        if 0 <= key < 2.0**53 and key == int(key):
            return int(key)
        return None
    if t is str and key.isdigit() and (key == "0" or key[0] != "0"):
        return int(key)
    return None


# --- member access ----------------------------------------------------------------------------


def get_member(interp, obj, key):
    t = type(obj)
    if t is JSArray:
        i = _index(key)
        if i is not None:
            return obj.items[i] if i < len(obj.items) else UNDEFINED
        k = to_property_key(key)
        if k == "length":
            return float(len(obj.items))
        v = obj.props.get(k, _ABSENT)
        if v is _ABSENT:
            v = ARRAY_PROTO.get(k) or OBJECT_METHODS.get(k) or _constructor(interp, k, "Array")
        return v
    if t is str:
        i = _index(key)
        if i is not None:
            return obj[i] if i < len(obj) else UNDEFINED
        k = to_property_key(key)
        if k == "length":
            return float(len(obj))
        return STRING_PROTO.get(k) or _constructor(interp, k, "String")
    if t is float:
        k = to_property_key(key)
        return NUMBER_PROTO.get(k) or _constructor(interp, k, "Number")
    if t is bool:
        k = to_property_key(key)
        return BOOLEAN_PROTO.get(k) or _constructor(interp, k, "Boolean")
    if obj is None or obj is UNDEFINED:
        raise make_error("TypeError", f"can't access property \"{to_property_key(key)}\" of {to_string(obj)}")
    k = to_property_key(key)
    if t is JSObject:
        v = obj.lookup(k)
        if v is UNDEFINED:
            if obj.proto is None:
                return OBJECT_METHODS.get(k, UNDEFINED)
            return _constructor(interp, k, _object_class(obj))
        return v
    if t is JSFunction:
        if k == "prototype" and "prototype" not in obj.props:
            obj.props["prototype"] = JSObject({"constructor": obj}, OBJECT_PROTO)
        v = obj.props.get(k, _ABSENT)
        if v is not _ABSENT and k != "%fields":
            return v
        if k == "name":
            return obj.func.name
        if k == "length":
            return float(len(obj.func.params))
        return FUNCTION_PROTO.get(k, UNDEFINED)
    if t is NativeFunction:
        v = obj.props.get(k, _ABSENT)
        if v is not _ABSENT:
            return v
        if k == "name":
            return obj.name
        return FUNCTION_PROTO.get(k, UNDEFINED)
    if t is JSDate:
        return DATE_PROTO.get(k) or _constructor(interp, k, "Date")
    if t is HostValue:
        return _host_member(obj, k)
    if t is JSRegExp:
        v = regexp.member(obj, k)
        return v if v is not UNDEFINED else _constructor(interp, k, "RegExp")
    if t is mapset.JSMap:
        v = mapset.member(obj, k)
        return v if v is not UNDEFINED else _constructor(interp, k, obj.cls)
    return obj.lookup(k)


_ABSENT = object()


def _constructor(interp, key: str, cls: str):
    """What a property missing all along a built-in value's prototype chain reads: undefined, but for
    `constructor`, the global constructor of the value's class (`[].constructor === Array`), as the script
    started with it.  (The prototypes are shared by every interpreter, and so cannot hold it.)"""
    if key == "constructor" and interp is not None:
        return interp.builtin_constructors.get(cls, UNDEFINED)
    return UNDEFINED


def _object_class(obj: JSObject) -> str:
    """The built-in class an object's `constructor` names: an error's, else Object."""
    p = obj.proto
    while p is not None:
        for name, proto in _ERROR_PROTOS.items():
            if p is proto:
                return name
        p = p.proto
    return "Object"


def set_member(obj, key, value) -> None:
    t = type(obj)
    if t is JSArray:
        i = _index(key)
        if i is not None:
            items = obj.items
            if i < len(items):
                items[i] = value
            else:
                check_array_length(i + 1)
                items.extend([UNDEFINED] * (i - len(items)))
                items.append(value)
            return
        k = to_property_key(key)
        if k == "length":
            n = to_number(value)
            if not math.isfinite(n) or n != int(n) or n < 0:
                raise make_error("RangeError", "invalid array length")
            n = int(n)
            check_array_length(n)
            del obj.items[n:]
            obj.items.extend([UNDEFINED] * (n - len(obj.items)))
            return
        obj.props[k] = value
        return
    if obj is None or obj is UNDEFINED:
        raise make_error("TypeError", f"can't assign to property \"{to_property_key(key)}\" on {to_string(obj)}")
    if t is HostValue or not isinstance(obj, JSObject):
        return  # (primitives and BSON wrappers ignore assignments)
    if obj.cls == "Prototype":
        return
    if t is JSRegExp and to_property_key(key) == "lastIndex":
        regexp.set_last_index(obj, to_number(value))
        return
    obj.props[to_property_key(key)] = value


def delete_member(obj, key) -> None:
    if type(obj) is JSArray:
        i = _index(key)
        if i is not None:
            if i < len(obj.items):
                obj.items[i] = UNDEFINED
            return
    if isinstance(obj, JSObject):
        obj.props.pop(to_property_key(key), None)


def has_property(obj, key: str) -> bool:
    if type(obj) is JSArray:
        i = _index(key)
        if i is not None:
            return i < len(obj.items)
        if key == "length":
            return True
    return get_member(None, obj, key) is not UNDEFINED or key in obj.props


def enumerable_keys(obj) -> list:
    """for...in: the array's indices or the object's own keys (strings); nothing for null/undefined."""
    t = type(obj)
    if t is JSArray:
        return [str(i) for i in range(len(obj.items))] + list(obj.props)
    if t is str:
        return [str(i) for i in range(len(obj))]
    if t is JSObject:
        keys = list(obj.props)
        p = obj.proto
        while p is not None and p is not OBJECT_PROTO:
            keys.extend(k for k in p.props if k not in keys and k != "constructor")
            p = p.proto
        return keys
    if isinstance(obj, JSObject) and t is not HostValue:
        return [k for k in obj.props if k != "prototype" and not k.startswith("%")]
    return []


def iterate(interp, obj) -> list:
    """for...of and spread: arrays, strings (characters); anything else is not iterable."""
    if type(obj) is JSArray:
        return list(obj.items)
    if type(obj) is str:
        return list(obj)
    if type(obj) is mapset.JSMap:
        return mapset.iterate(obj)
    raise make_error("TypeError", f"{to_string(obj) if not isinstance(obj, JSObject) else 'object'} is not iterable")


def instance_of(interp, obj, ctor) -> bool:
    if not is_callable(ctor):
        raise make_error("TypeError", "invalid 'instanceof' operand")
    if type(ctor) is NativeFunction:
        check = ctor.props.get("__instance__")
        return bool(check and check(obj))
    if not isinstance(obj, JSObject):
        return False
    proto = get_member(interp, ctor, "prototype")
    p = obj.proto
    while p is not None:
        if p is proto:
            return True
        p = p.proto
    return False


# --- Object.prototype, Function.prototype --------------------------------------------------------

OBJECT_METHODS: dict = {}


@_native(OBJECT_METHODS, "hasOwnProperty")
def _has_own(interp, this, args):
    k = to_property_key(_arg(args, 0))
    if type(this) is JSArray:
        i = _index(k)
        return i < len(this.items) if i is not None else k in this.props
    return isinstance(this, JSObject) and k in this.props


@_native(OBJECT_METHODS, "toString")
def _obj_to_string(interp, this, args):
    """Object.prototype.toString: "[object Tag]" (an error's own text)."""
    if isinstance(this, JSObject) and this.cls == "Error":
        return to_string(this)
    if this is None:
        return "[object Null]"
    if this is UNDEFINED:
        return "[object Undefined]"
    tag = {str: "String", float: "Number", bool: "Boolean"}.get(type(this))
    if tag is None:
        cls = this.cls if isinstance(this, JSObject) else "Object"
        tag = cls if cls in ("Array", "Function", "Date", "RegExp", "Map", "Set") else "Object"
    return f"[object {tag}]"


@_native(OBJECT_METHODS, "valueOf")
def _value_of(interp, this, args):
    return this


OBJECT_PROTO.props.update(OBJECT_METHODS)

FUNCTION_PROTO: dict = {}


@_native(FUNCTION_PROTO, "call")
def _fn_call(interp, this, args):
    return interp.call(this, _arg(args, 0), list(args[1:]))


@_native(FUNCTION_PROTO, "apply")
def _fn_apply(interp, this, args):
    a = _arg(args, 1)
    return interp.call(this, _arg(args, 0), list(a.items) if type(a) is JSArray else [])


@_native(FUNCTION_PROTO, "bind")
def _fn_bind(interp, this, args):
    target, bound_this, bound = this, _arg(args, 0), list(args[1:])
    return NativeFunction(lambda i, _t, a: i.call(target, bound_this, bound + list(a)), "bound")


@_native(FUNCTION_PROTO, "toString")
def _fn_to_string(interp, this, args):
    return to_string(this)


# --- Array.prototype -----------------------------------------------------------------------------

ARRAY_PROTO: dict = {}


def _this_array(this, name) -> JSArray:
    if type(this) is not JSArray:
        raise make_error("TypeError", f"Array.prototype.{name} called on a non-array")
    return this


def _callback(args, name):
    fn = _arg(args, 0)
    if not is_callable(fn):
        raise make_error("TypeError", f"{to_string(fn) if not isinstance(fn, JSObject) else 'object'} is not a function")
    return fn, _arg(args, 1)


@_native(ARRAY_PROTO, "push")
def _push(interp, this, args):
    a = _this_array(this, "push")
    check_array_length(len(a.items) + len(args))
    a.items.extend(args)
    return float(len(a.items))


@_native(ARRAY_PROTO, "pop")
def _pop(interp, this, args):
    a = _this_array(this, "pop")
    return a.items.pop() if a.items else UNDEFINED


@_native(ARRAY_PROTO, "shift")
def _shift(interp, this, args):
    a = _this_array(this, "shift")
    return a.items.pop(0) if a.items else UNDEFINED


@_native(ARRAY_PROTO, "unshift")
def _unshift(interp, this, args):
    a = _this_array(this, "unshift")
    check_array_length(len(a.items) + len(args))
    a.items[0:0] = args
    return float(len(a.items))


def _relative(v, n: int, default: int) -> int:
    if v is UNDEFINED:
        return default
    x = to_number(v)
    if x != x:
        return 0
    i = int(x) if math.isfinite(x) else (n if x > 0 else -n)
    return max(0, n + i) if i < 0 else min(i, n)


@_native(ARRAY_PROTO, "slice")
def _slice(interp, this, args):
    a = _this_array(this, "slice")
    n = len(a.items)
    return JSArray(a.items[_relative(_arg(args, 0), n, 0):_relative(_arg(args, 1), n, n)])


@_native(ARRAY_PROTO, "splice")
def _splice(interp, this, args):
    a = _this_array(this, "splice")
    n = len(a.items)
    start = _relative(_arg(args, 0), n, 0)
    count = n - start if len(args) < 2 else max(0, min(to_integer(args[1]), n - start))
    removed = a.items[start:start + count]
    a.items[start:start + count] = args[2:]
    return JSArray(removed)


@_native(ARRAY_PROTO, "concat")
def _concat(interp, this, args):
    a = _this_array(this, "concat")
    out = list(a.items)
    for x in args:
        if type(x) is JSArray:
            out.extend(x.items)
        else:
            out.append(x)
        check_array_length(len(out))
    return JSArray(out)


@_native(ARRAY_PROTO, "join")
def _join(interp, this, args):
    a = _this_array(this, "join")
    sep = "," if _arg(args, 0) is UNDEFINED else to_string(args[0])
    return check_string(sep.join("" if x is None or x is UNDEFINED else to_string(x) for x in a.items))


@_native(ARRAY_PROTO, "toString")
def _array_to_string(interp, this, args):
    return to_string(this)


@_native(ARRAY_PROTO, "reverse")
def _reverse(interp, this, args):
    a = _this_array(this, "reverse")
    a.items.reverse()
    return a


@_native(ARRAY_PROTO, "indexOf")
def _index_of(interp, this, args):
    a = _this_array(this, "indexOf")
    x = _arg(args, 0)
    for i in range(_relative(_arg(args, 1), len(a.items), 0), len(a.items)):
        if strict_equals(a.items[i], x):
            return float(i)
    return -1.0


@_native(ARRAY_PROTO, "lastIndexOf")
def _last_index_of(interp, this, args):
    a = _this_array(this, "lastIndexOf")
    x = _arg(args, 0)
    for i in range(len(a.items) - 1, -1, -1):
        if strict_equals(a.items[i], x):
            return float(i)
    return -1.0


@_native(ARRAY_PROTO, "includes")
def _includes(interp, this, args):
    a = _this_array(this, "includes")
    x = _arg(args, 0)
    if type(x) is float and x != x:
        return any(type(v) is float and v != v for v in a.items)
    return any(strict_equals(v, x) for v in a.items)


def _iter_callback(name, finish):
    def run(interp, this, args):
        a = _this_array(this, name)
        fn, this_arg = _callback(args, name)
        return finish(a, lambda v, i: interp.call(fn, this_arg, [v, float(i), a]))

    return run


def _map(a, f):
    return JSArray([f(v, i) for i, v in enumerate(list(a.items))])


def _filter(a, f):
    return JSArray([v for i, v in enumerate(list(a.items)) if to_boolean(f(v, i))])


def _for_each(a, f):
    for i, v in enumerate(list(a.items)):
        f(v, i)
    return UNDEFINED


def _some(a, f):
    return any(to_boolean(f(v, i)) for i, v in enumerate(list(a.items)))


def _every(a, f):
    return all(to_boolean(f(v, i)) for i, v in enumerate(list(a.items)))


def _find(a, f):
    return next((v for i, v in enumerate(list(a.items)) if to_boolean(f(v, i))), UNDEFINED)


def _find_index(a, f):
    return next((float(i) for i, v in enumerate(list(a.items)) if to_boolean(f(v, i))), -1.0)


for _name, _finish in (("map", _map), ("filter", _filter), ("forEach", _for_each), ("some", _some),
                       ("every", _every), ("find", _find), ("findIndex", _find_index)):
    ARRAY_PROTO[_name] = NativeFunction(_iter_callback(_name, _finish), _name)


def _reducer(name, right):
    def run(interp, this, args):
        a = _this_array(this, name)
        fn, _ = _callback(args, name)
        idx = list(range(len(a.items)))
        if right:
            idx.reverse()
        if len(args) >= 2:
            acc = args[1]
        elif not idx:
            raise make_error("TypeError", "reduce of empty array with no initial value")
        else:
            acc = a.items[idx.pop(0)]
        for i in idx:
            if i < len(a.items):
                acc = interp.call(fn, UNDEFINED, [acc, a.items[i], float(i), a])
        return acc

    return run


ARRAY_PROTO["reduce"] = NativeFunction(_reducer("reduce", False), "reduce")
ARRAY_PROTO["reduceRight"] = NativeFunction(_reducer("reduceRight", True), "reduceRight")


def _find_last(a, f):
    return next((v for i, v in reversed(list(enumerate(list(a.items)))) if to_boolean(f(v, i))), UNDEFINED)


def _find_last_index(a, f):
    return next((float(i) for i, v in reversed(list(enumerate(list(a.items)))) if to_boolean(f(v, i))), -1.0)


def _flat_map(a, f):
    out: list = []
    for i, v in enumerate(list(a.items)):
        r = f(v, i)
        if type(r) is JSArray:
            out.extend(r.items)
        else:
            out.append(r)
        check_array_length(len(out))
    return JSArray(out)


for _name, _finish in (("findLast", _find_last), ("findLastIndex", _find_last_index), ("flatMap", _flat_map)):
    ARRAY_PROTO[_name] = NativeFunction(_iter_callback(_name, _finish), _name)


@_native(ARRAY_PROTO, "at")
def _at(interp, this, args):
    a = _this_array(this, "at")
    i = to_integer(_arg(args, 0))
    i = i + len(a.items) if i < 0 else i
    return a.items[i] if 0 <= i < len(a.items) else UNDEFINED


@_native(ARRAY_PROTO, "fill")
def _fill(interp, this, args):
    a = _this_array(this, "fill")
    n = len(a.items)
    for i in range(_relative(_arg(args, 1), n, 0), _relative(_arg(args, 2), n, n)):
        a.items[i] = _arg(args, 0)
    return a


@_native(ARRAY_PROTO, "keys")
def _array_keys(interp, this, args):
    return JSArray([float(i) for i in range(len(_this_array(this, "keys").items))])


@_native(ARRAY_PROTO, "entries")
def _array_entries(interp, this, args):
    return JSArray([JSArray([float(i), v]) for i, v in enumerate(_this_array(this, "entries").items)])


@_native(ARRAY_PROTO, "sort")
def _sort(interp, this, args):
    """Stable, undefined last; without a comparator by the elements' strings (as JS)."""
    a = _this_array(this, "sort")
    fn = _arg(args, 0)
    defined = [v for v in a.items if v is not UNDEFINED]
    undefined = [v for v in a.items if v is UNDEFINED]
    if fn is UNDEFINED:
        defined.sort(key=to_string)
    else:
        if not is_callable(fn):
            raise make_error("TypeError", "invalid Array.prototype.sort argument")

        def cmp(x, y):
            r = to_number(interp.call(fn, UNDEFINED, [x, y]))
            return -1 if r < 0 else 1 if r > 0 else 0

        defined.sort(key=functools.cmp_to_key(cmp))
    a.items[:] = defined + undefined
    return a


@_native(ARRAY_PROTO, "flat")
def _flat(interp, this, args):
    a = _this_array(this, "flat")
    depth = 1 if _arg(args, 0) is UNDEFINED else to_integer(args[0])

    def flat(items, d):
        for v in items:
            if type(v) is JSArray and d > 0:
                yield from flat(v.items, d - 1)
            else:
                yield v

    return JSArray(list(flat(a.items, depth)))


# --- String.prototype ----------------------------------------------------------------------------

STRING_PROTO: dict = {}


def _str_method(name):
    def deco(fn):
        def run(interp, this, args):
            if this is None or this is UNDEFINED:
                raise make_error("TypeError", f"String.prototype.{name} called on null or undefined")
            return fn(to_string(this), args)

        STRING_PROTO[name] = NativeFunction(run, name)
        return fn

    return deco


@_str_method("indexOf")
def _s_index_of(s, args):
    return float(s.find(to_string(_arg(args, 0)), _relative(_arg(args, 1), len(s), 0)))


@_str_method("lastIndexOf")
def _s_last_index_of(s, args):
    return float(s.rfind(to_string(_arg(args, 0))))


@_str_method("includes")
def _s_includes(s, args):
    return to_string(_arg(args, 0)) in s


@_str_method("startsWith")
def _s_starts(s, args):
    return s.startswith(to_string(_arg(args, 0)), _relative(_arg(args, 1), len(s), 0))


@_str_method("endsWith")
def _s_ends(s, args):
    return s.endswith(to_string(_arg(args, 0)))


@_str_method("toUpperCase")
def _s_upper(s, args):
    return s.upper()


@_str_method("toLowerCase")
def _s_lower(s, args):
    return s.lower()


@_str_method("trimStart")
def _s_trim_start(s, args):
    return s.lstrip()


@_str_method("trimEnd")
def _s_trim_end(s, args):
    return s.rstrip()


@_str_method("at")
def _s_at(s, args):
    i = to_integer(_arg(args, 0))
    i = i + len(s) if i < 0 else i
    return s[i] if 0 <= i < len(s) else UNDEFINED


@_str_method("codePointAt")
def _s_code_point_at(s, args):
    i = to_integer(_arg(args, 0))
    return float(ord(s[i])) if 0 <= i < len(s) else UNDEFINED


@_str_method("localeCompare")
def _s_locale_compare(s, args):
    other = to_string(_arg(args, 0))
    return -1.0 if s < other else 1.0 if s > other else 0.0


@_str_method("trim")
def _s_trim(s, args):
    return s.strip()


@_str_method("toString")
def _s_to_string(s, args):
    return s


@_str_method("valueOf")
def _s_value_of(s, args):
    return s


def _clamp_index(v, n: int) -> int:
    x = to_number(v)
    if x != x:
        return 0
    return int(max(0, min(x, n)))


@_str_method("substring")
def _s_substring(s, args):
    n = len(s)
    a = _clamp_index(_arg(args, 0), n)
    b = n if _arg(args, 1) is UNDEFINED else _clamp_index(args[1], n)
    return s[min(a, b):max(a, b)]


@_str_method("substr")
def _s_substr(s, args):
    n = len(s)
    a = _relative(_arg(args, 0), n, 0)
    length = n - a if _arg(args, 1) is UNDEFINED else max(0, to_integer(args[1]))
    return s[a:a + length]


@_str_method("slice")
def _s_slice(s, args):
    n = len(s)
    return s[_relative(_arg(args, 0), n, 0):_relative(_arg(args, 1), n, n)]


@_str_method("split")
def _s_split(s, args):
    sep = _arg(args, 0)
    limit = _arg(args, 1)
    if type(sep) is JSRegExp:
        return regexp.split(s, sep, None if limit is UNDEFINED else to_integer(limit))
    if sep is UNDEFINED:
        parts = [s]
    else:
        sep = to_string(sep)
        parts = list(s) if sep == "" else s.split(sep)
    if limit is not UNDEFINED:
        parts = parts[: to_integer(limit)]
    return JSArray(parts)


@_str_method("charAt")
def _s_char_at(s, args):
    i = to_integer(_arg(args, 0))
    return s[i] if 0 <= i < len(s) else ""


@_str_method("charCodeAt")
def _s_char_code_at(s, args):
    i = to_integer(_arg(args, 0))
    return float(ord(s[i])) if 0 <= i < len(s) else math.nan


def _s_replace(interp, this, args, every=False):
    s, pattern, replacement = to_string(this), _arg(args, 0), _arg(args, 1)
    if type(pattern) is not JSRegExp:  # (a string pattern: literally, as a regex of its escaped text)
        pattern = JSRegExp(_REGEXP_SPECIAL.sub(lambda m: "\\" + m.group(0), to_string(pattern)), "g" if every else "")
    return regexp.replace(interp, s, pattern, replacement, every or None)


_REGEXP_SPECIAL = re.compile(r"[\\^$.*+?()[\]{}|/]")
STRING_PROTO["replace"] = NativeFunction(_s_replace, "replace")
STRING_PROTO["replaceAll"] = NativeFunction(lambda i, t, a: _s_replace(i, t, a, True), "replaceAll")


def _regexp_arg(v) -> JSRegExp:
    return v if type(v) is JSRegExp else JSRegExp("(?:)" if v is UNDEFINED else to_string(v), "")


@_str_method("match")
def _s_match(s, args):
    return regexp.match(s, _regexp_arg(_arg(args, 0)))


@_str_method("search")
def _s_search(s, args):
    return regexp.search(s, _regexp_arg(_arg(args, 0)))


@_str_method("repeat")
def _s_repeat(s, args):
    n = to_number(_arg(args, 0))
    n = 0.0 if n != n else n
    if n < 0 or n == math.inf or n * len(s) > values.MAX_STRING_LENGTH:
        raise make_error("RangeError", "repeat count must be non-negative, finite, and the result not too long")
    return s * int(n)


@_str_method("padStart")
def _s_pad_start(s, args):
    n = to_integer(_arg(args, 0))
    fill = " " if _arg(args, 1) is UNDEFINED else to_string(args[1])
    if n <= len(s) or not fill:
        return s
    if n > values.MAX_STRING_LENGTH:
        raise make_error("RangeError", "invalid string length")
    return check_string((fill * (n // len(fill) + 1))[: n - len(s)] + s)


@_str_method("padEnd")
def _s_pad_end(s, args):
    n = to_integer(_arg(args, 0))
    fill = " " if _arg(args, 1) is UNDEFINED else to_string(args[1])
    if n <= len(s) or not fill:
        return s
    if n > values.MAX_STRING_LENGTH:
        raise make_error("RangeError", "invalid string length")
    return check_string(s + (fill * (n // len(fill) + 1))[: n - len(s)])


@_str_method("concat")
def _s_concat(s, args):
    return s + "".join(to_string(a) for a in args)


# --- Number.prototype, Boolean.prototype ---------------------------------------------------------

NUMBER_PROTO: dict = {}
BOOLEAN_PROTO: dict = {}


@_native(NUMBER_PROTO, "toFixed")
def _to_fixed(interp, this, args):
    x = to_number(this)
    d = to_integer(_arg(args, 0))
    if not 0 <= d <= 100:
        raise make_error("RangeError", "precision out of range")
    if not math.isfinite(x) or abs(x) >= 1e21:
        return number_to_string(x)
    return f"{x:.{d}f}"


@_native(NUMBER_PROTO, "toString")
def _num_to_string(interp, this, args):
    radix = _arg(args, 0)
    x = to_number(this)
    if radix is UNDEFINED or to_number(radix) == 10 or not math.isfinite(x) or x != int(x):
        return number_to_string(x)
    r = to_integer(radix)
    if not 2 <= r <= 36:
        raise make_error("RangeError", "radix must be an integer at least 2 and no greater than 36")
    n, digits = abs(int(x)), []
    while True:
        n, d = divmod(n, r)
        digits.append("0123456789abcdefghijklmnopqrstuvwxyz"[d])
        if not n:
            break
    return ("-" if x < 0 else "") + "".join(reversed(digits))


@_native(NUMBER_PROTO, "valueOf")
def _num_value_of(interp, this, args):
    return to_number(this)


@_native(BOOLEAN_PROTO, "toString")
def _bool_to_string(interp, this, args):
    return to_string(this)


# --- Date ---------------------------------------------------------------------------------------

DATE_PROTO: dict = {}
_EPOCH = datetime.datetime(1970, 1, 1)


def _dt(this) -> datetime.datetime:
    if type(this) is not JSDate:
        raise make_error("TypeError", "Date method called on incompatible object")
    return _EPOCH + datetime.timedelta(milliseconds=this.ms)


for _name, _get in (("getFullYear", lambda d: d.year), ("getMonth", lambda d: d.month - 1),
                    ("getDate", lambda d: d.day), ("getDay", lambda d: (d.weekday() + 1) % 7),
                    ("getHours", lambda d: d.hour), ("getMinutes", lambda d: d.minute),
                    ("getSeconds", lambda d: d.second), ("getMilliseconds", lambda d: d.microsecond // 1000)):
    def _getter(interp, this, args, _get=_get):
        if type(this) is JSDate and this.ms != this.ms:
            return math.nan
        return float(_get(_dt(this)))

    DATE_PROTO[_name] = NativeFunction(_getter, _name)
    DATE_PROTO[_name.replace("get", "getUTC")] = DATE_PROTO[_name]


@_native(DATE_PROTO, "getTime")
def _get_time(interp, this, args):
    if type(this) is not JSDate:
        raise make_error("TypeError", "Date method called on incompatible object")
    return this.ms


DATE_PROTO["valueOf"] = DATE_PROTO["getTime"]


@_native(DATE_PROTO, "toISOString")
def _to_iso(interp, this, args):
    if type(this) is JSDate and this.ms != this.ms:
        raise make_error("RangeError", "invalid date")
    return _dt(this).strftime("%Y-%m-%dT%H:%M:%S.") + f"{int(this.ms) % 1000:03d}Z"


@_native(DATE_PROTO, "toString")
def _date_to_string(interp, this, args):
    return date_string(this.ms) if type(this) is JSDate else to_string(this)


DATE_PROTO["toJSON"] = DATE_PROTO["toISOString"]


def _parse_date(s: str) -> float:
    try:
        d = datetime.datetime.fromisoformat(s.replace("Z", "+00:00"))
    except ValueError:
        return math.nan
    if d.tzinfo is not None:
        d = d.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return float((d - _EPOCH) // datetime.timedelta(milliseconds=1))


def _date_construct(interp, this, args):
    if not args:
        return JSDate(float(int(datetime.datetime.now(datetime.timezone.utc).timestamp() * 1000)))
    if len(args) == 1:
        v = args[0]
        if type(v) is JSDate:
            return JSDate(v.ms)
        if type(v) is str:
            return JSDate(_parse_date(v))
        x = to_number(v)
        return JSDate(float(int(x)) if math.isfinite(x) else math.nan)
    parts = [to_integer(a) for a in args[:7]] + [0] * (7 - min(len(args), 7))
    y, mo, d, h, mi, s, ms = parts
    try:
        base = datetime.datetime(y, 1, 1) + datetime.timedelta(days=0)
        total = (base - _EPOCH) // datetime.timedelta(milliseconds=1)
        months = datetime.datetime(y + mo // 12, mo % 12 + 1, 1) - base
        total += months // datetime.timedelta(milliseconds=1)
        total += ((((d or 1) - 1) * 24 + h) * 60 + mi) * 60_000 + s * 1000 + ms
        return JSDate(float(total))
    except (ValueError, OverflowError):
        return JSDate(math.nan)


# --- BSON wrappers (ObjectId, ...) ---------------------------------------------------------------


def _host_member(obj: HostValue, k: str):
    v = obj.value
    if k == "str" and type(v) is ObjectId:
        return str(v)
    if k == "toString" or k == "tojson":
        return NativeFunction(lambda i, t, a: values.host_string(v), k)
    if k == "valueOf":
        return NativeFunction(lambda i, t, a: str(v) if type(v) is ObjectId else to_number(obj), k)
    if k == "equals":
        return NativeFunction(lambda i, t, a: type(_arg(a, 0)) is HostValue and _arg(a, 0).value == v, k)
    if k == "getTimestamp" and type(v) is ObjectId:
        return NativeFunction(lambda i, t, a: JSDate(float(int(v.generation_time.timestamp()) * 1000)), k)
    return UNDEFINED


# --- JSON and tojson -----------------------------------------------------------------------------


def json_stringify(v, indent: str = "", depth: int = 0, cur: str = ""):
    """JSON.stringify: None for a value JSON omits (undefined, functions)."""
    if depth > 100:
        raise make_error("TypeError", "cyclic object value")
    t = type(v)
    if v is None:
        return "null"
    if t is bool:
        return "true" if v else "false"
    if t is float:
        return number_to_string(v) if math.isfinite(v) else "null"
    if t is str:
        return json.dumps(v, ensure_ascii=False)
    if v is UNDEFINED or is_callable(v):
        return None
    if t is JSDate:
        return json.dumps(_to_iso(None, v, []))
    if t is HostValue:
        inner = v.value
        if type(inner) is ObjectId:
            return json.dumps({"$oid": str(inner)})
        return json.dumps(values.host_string(inner))
    inner_indent = cur + indent
    sep, nl = (",\n" + inner_indent, "\n" + inner_indent) if indent else (",", "")
    if t is JSArray:
        parts = [json_stringify(x, indent, depth + 1, inner_indent) or "null" for x in v.items]
        if not parts:
            return "[]"
        return "[" + nl + sep.join(parts) + ("\n" + cur if indent else "") + "]"
    parts = []
    for k, x in v.props.items():
        s = json_stringify(x, indent, depth + 1, inner_indent)
        if s is not None:
            parts.append(json.dumps(k, ensure_ascii=False) + (": " if indent else ":") + s)
    if not parts:
        return "{}"
    return "{" + nl + sep.join(parts) + ("\n" + cur if indent else "") + "}"


def _json_stringify(interp, this, args):
    space = _arg(args, 2)
    indent = " " * max(0, min(10, to_integer(space))) if type(space) is float else space if type(space) is str else ""
    r = json_stringify(_arg(args, 0), indent[:10])
    return UNDEFINED if r is None else r


def _json_parse(interp, this, args):
    try:
        return values.to_js(json.loads(to_string(_arg(args, 0))))
    except (ValueError, RecursionError):
        raise make_error("SyntaxError", "JSON.parse: unexpected character") from None


# --- global functions ----------------------------------------------------------------------------

_INT_RE = re.compile(r"\s*([+-]?)(0[xX])?([0-9a-zA-Z]*)")
_FLOAT_RE = re.compile(r"\s*[+-]?(?:Infinity|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)")


def _parse_int(interp, this, args):
    s = to_string(_arg(args, 0))
    radix = to_int32(_arg(args, 1))
    m = _INT_RE.match(s)
    sign, prefix, digits = m.group(1), m.group(2), m.group(3)
    if prefix and radix in (0, 16):
        radix = 16
    elif prefix:
        digits = "0"  # ("0x" in another radix: the 0 alone)
    if radix == 0:
        radix = 10
    if not 2 <= radix <= 36:
        return math.nan
    valid = ""
    for c in digits:
        if c.isdigit() and int(c) < radix or c.isalpha() and ord(c.lower()) - 87 < radix:
            valid += c
        else:
            break
    if not valid:
        return math.nan
    n = float(int(valid, radix))
    return -n if sign == "-" else n


def _parse_float(interp, this, args):
    m = _FLOAT_RE.match(to_string(_arg(args, 0)))
    if not m:
        return math.nan
    return values.string_to_number(m.group(0))


def _math(fn, arity=1):
    def run(interp, this, args):
        xs = [to_number(_arg(args, i)) for i in range(arity)]
        if any(x != x for x in xs):
            return math.nan
        try:
            return float(fn(*xs))
        except (ValueError, ZeroDivisionError):
            return math.nan
        except OverflowError:
            return math.inf

    return run


def _round(x):
    return math.floor(x + 0.5) if math.isfinite(x) else x


def _math_max(interp, this, args):
    xs = [to_number(a) for a in args]
    if any(x != x for x in xs):
        return math.nan
    return max(xs, default=-math.inf)


def _math_min(interp, this, args):
    xs = [to_number(a) for a in args]
    if any(x != x for x in xs):
        return math.nan
    return min(xs, default=math.inf)


def _sign(x):
    return (x > 0) - (x < 0) if x else x


def _array_sum(interp, this, args):
    """Array.sum (mongo shell helper): the elements added with `+` from 0."""
    a = _arg(args, 0)
    if type(a) is not JSArray:
        raise make_error("TypeError", "Array.sum: argument is not an array")
    total = 0.0
    for x in a.items:
        total = js_add(total, x)
    return total


def _array_contains(interp, this, args):
    """Array.contains(arr, x) (utils.js): an element strictly equal to x."""
    a = _arg(args, 0)
    if type(a) is not JSArray:
        raise make_error("Error", "The first argument to Array.contains must be an array")
    return any(strict_equals(v, _arg(args, 1)) for v in a.items)


def _array_unique(interp, this, args):
    """Array.unique(arr) (utils.js): the elements without repeats (by their string, as its map does)."""
    a = _arg(args, 0)
    if type(a) is not JSArray:
        raise make_error("Error", "The first argument to Array.unique must be an array")
    seen, out = set(), []
    for v in a.items:
        k = to_string(v)
        if k not in seen:
            seen.add(k)
            out.append(v)
    return JSArray(out)


def _array_std_dev(interp, this, args):
    """Array.stdDev(arr) (utils.js): the population standard deviation."""
    a = _arg(args, 0)
    if type(a) is not JSArray or not a.items:
        raise make_error("Error", "The first argument to Array.stdDev must be a non-empty array")
    xs = [to_number(v) for v in a.items]
    mean = sum(xs) / len(xs)
    return math.sqrt(sum((x - mean) ** 2 for x in xs) / len(xs))


def _array_avg(interp, this, args):
    a = _arg(args, 0)
    if type(a) is not JSArray:
        raise make_error("TypeError", "Array.avg: argument is not an array")
    if not a.items:
        return UNDEFINED
    s = _array_sum(interp, this, args)
    return to_number(s) / len(a.items)


def _object_keys(interp, this, args):
    o = _arg(args, 0)
    if o is None or o is UNDEFINED:
        raise make_error("TypeError", "can't convert undefined to object")
    if type(o) is JSArray:
        return JSArray([str(i) for i in range(len(o.items))] + list(o.props))
    return JSArray(list(o.props) if isinstance(o, JSObject) and type(o) is not HostValue else [])


def _object_values(interp, this, args):
    o = _arg(args, 0)
    keys = _object_keys(interp, this, args).items
    return JSArray([get_member(interp, o, k) for k in keys])


def _object_entries(interp, this, args):
    o = _arg(args, 0)
    keys = _object_keys(interp, this, args).items
    return JSArray([JSArray([k, get_member(interp, o, k)]) for k in keys])


def _object_from_entries(interp, this, args):
    out = JSObject({}, OBJECT_PROTO)
    for entry in iterate(interp, _arg(args, 0)):
        pair = iterate(interp, entry)
        out.props[to_property_key(pair[0] if pair else UNDEFINED)] = pair[1] if len(pair) > 1 else UNDEFINED
    return out


def _array_from(interp, this, args):
    """Array.from(iterable | {length}, mapFn?)."""
    src, fn = _arg(args, 0), _arg(args, 1)
    if type(src) is JSObject:
        n = to_integer(get_member(interp, src, "length"))
        check_array_length(n)
        items = [get_member(interp, src, str(i)) for i in range(max(0, n))]
    else:
        items = iterate(interp, src)
    if is_callable(fn):
        items = [interp.call(fn, UNDEFINED, [v, float(i)]) for i, v in enumerate(items)]
    return JSArray(items)


def _object_assign(interp, this, args):
    target = _arg(args, 0)
    for src in args[1:]:
        if isinstance(src, JSObject):
            for k in enumerable_keys(src):
                set_member(target, k, get_member(interp, src, k))
    return target


def _error_ctor(name):
    def construct(interp, this, args):
        msg = _arg(args, 0)
        err = JSObject({} if msg is UNDEFINED else {"message": to_string(msg)}, _ERROR_PROTOS[name], "Error")
        return err

    return construct


_ERROR_PROTOS: dict[str, JSObject] = {}
for _name in ("Error", "TypeError", "RangeError", "ReferenceError", "SyntaxError", "InternalError", "EvalError"):
    _ERROR_PROTOS[_name] = JSObject({"name": _name, "message": ""},
                                    _ERROR_PROTOS.get("Error", OBJECT_PROTO), "Prototype")
values._ERROR_PROTOS.update(_ERROR_PROTOS)


def _ctor(fn, name, construct=None, instance=None, statics: dict | None = None) -> NativeFunction:
    props = dict(statics or {})
    if construct is not None:
        props["__construct__"] = NativeFunction(construct, name)
    if instance is not None:
        props["__instance__"] = instance
    return NativeFunction(fn, name, props)


def _object_id(interp, this, args):
    v = _arg(args, 0)
    try:
        return HostValue(ObjectId() if v is UNDEFINED else ObjectId(to_string(v)))
    except Exception:  # noqa: BLE001  (bson's InvalidId, TypeError)
        raise make_error("Error", f"invalid object id: {to_string(v)}") from None


def _tojson(interp, this, args):
    v = _arg(args, 0)
    if type(v) is HostValue:
        return values.host_string(v.value)
    r = json_stringify(v, "\t")
    return "undefined" if r is None else r


def _make_globals() -> dict:
    math_obj = JSObject({
        "PI": math.pi, "E": math.e, "LN2": math.log(2), "LN10": math.log(10), "SQRT2": math.sqrt(2),
        "LOG2E": 1 / math.log(2), "LOG10E": 1 / math.log(10), "SQRT1_2": math.sqrt(0.5),
        "max": NativeFunction(_math_max, "max"), "min": NativeFunction(_math_min, "min"),
        "floor": NativeFunction(_math(math.floor), "floor"), "ceil": NativeFunction(_math(math.ceil), "ceil"),
        "abs": NativeFunction(_math(abs), "abs"), "round": NativeFunction(_math(_round), "round"),
        "sqrt": NativeFunction(_math(math.sqrt), "sqrt"),
        "pow": NativeFunction(lambda i, t, a: js_pow(to_number(_arg(a, 0)), to_number(_arg(a, 1))), "pow"),
        "trunc": NativeFunction(_math(math.trunc), "trunc"), "sign": NativeFunction(_math(_sign), "sign"),
        "log": NativeFunction(_math(lambda x: -math.inf if x == 0 else math.log(x)), "log"),
        "log10": NativeFunction(_math(lambda x: -math.inf if x == 0 else math.log10(x)), "log10"),
        "log2": NativeFunction(_math(lambda x: -math.inf if x == 0 else math.log2(x)), "log2"),
        "exp": NativeFunction(_math(math.exp), "exp"),
        "sin": NativeFunction(_math(math.sin), "sin"), "cos": NativeFunction(_math(math.cos), "cos"),
        "tan": NativeFunction(_math(math.tan), "tan"), "atan": NativeFunction(_math(math.atan), "atan"),
        "atan2": NativeFunction(_math(math.atan2, 2), "atan2"),
        "cbrt": NativeFunction(_math(lambda x: math.copysign(abs(x) ** (1 / 3), x)), "cbrt"),
        "hypot": NativeFunction(lambda i, t, a: math.hypot(*[to_number(x) for x in a]), "hypot"),
        "asin": NativeFunction(_math(math.asin), "asin"), "acos": NativeFunction(_math(math.acos), "acos"),
        "random": NativeFunction(lambda i, t, a: random.random(), "random"),
    }, OBJECT_PROTO)
    g = {
        "undefined": UNDEFINED, "NaN": math.nan, "Infinity": math.inf,
        "Math": math_obj,
        "JSON": JSObject({"stringify": NativeFunction(_json_stringify, "stringify"),
                          "parse": NativeFunction(_json_parse, "parse")}, OBJECT_PROTO),
        "Object": _ctor(lambda i, t, a: JSObject({}, OBJECT_PROTO) if _arg(a, 0) in (None, UNDEFINED) else a[0],
                        "Object", lambda i, t, a: JSObject({}, OBJECT_PROTO),
                        lambda o: isinstance(o, JSObject),
                        {"prototype": OBJECT_PROTO, "keys": NativeFunction(_object_keys, "keys"), "values": NativeFunction(_object_values, "values"),
                         "entries": NativeFunction(_object_entries, "entries"),
                         "assign": NativeFunction(_object_assign, "assign"),
                         "fromEntries": NativeFunction(_object_from_entries, "fromEntries"),
                         "freeze": NativeFunction(lambda i, t, a: _arg(a, 0), "freeze"),
                         "isFrozen": NativeFunction(lambda i, t, a: False, "isFrozen"),
                         "create": NativeFunction(_object_create, "create"),
                         "getPrototypeOf": NativeFunction(_object_get_prototype_of, "getPrototypeOf")}),
        "Array": _ctor(_array_ctor, "Array", _array_ctor, lambda o: type(o) is JSArray,
                       {"prototype": JSObject(dict(ARRAY_PROTO), OBJECT_PROTO, "Prototype"),
                        "isArray": NativeFunction(lambda i, t, a: type(_arg(a, 0)) is JSArray, "isArray"),
                        "sum": NativeFunction(_array_sum, "sum"), "avg": NativeFunction(_array_avg, "avg"),
                        "contains": NativeFunction(_array_contains, "contains"),
                        "unique": NativeFunction(_array_unique, "unique"),
                        "stdDev": NativeFunction(_array_std_dev, "stdDev"),
                        "from": NativeFunction(_array_from, "from"),
                        "of": NativeFunction(lambda i, t, a: JSArray(list(a)), "of")}),
        "String": _ctor(lambda i, t, a: to_string(a[0]) if a else "", "String", None, lambda o: False,
                        {"prototype": JSObject(dict(STRING_PROTO), OBJECT_PROTO, "Prototype"),
                         "fromCharCode": NativeFunction(lambda i, t, a: "".join(chr(to_int32(x) & 0xFFFF) for x in a),
                                                        "fromCharCode")}),
        "Number": _ctor(lambda i, t, a: to_number(a[0]) if a else 0.0, "Number", None, lambda o: False,
                        {"isInteger": NativeFunction(lambda i, t, a: type(_arg(a, 0)) is float and math.isfinite(a[0])
                                                     and a[0] == int(a[0]), "isInteger"),
                         "isNaN": NativeFunction(lambda i, t, a: type(_arg(a, 0)) is float and a[0] != a[0], "isNaN"),
                         "isFinite": NativeFunction(lambda i, t, a: type(_arg(a, 0)) is float and math.isfinite(a[0]),
                                                    "isFinite"),
                         "isSafeInteger": NativeFunction(lambda i, t, a: type(_arg(a, 0)) is float and
                                                         math.isfinite(a[0]) and a[0] == int(a[0]) and
                                                         abs(a[0]) <= 2**53 - 1, "isSafeInteger"),
                         "parseFloat": NativeFunction(_parse_float, "parseFloat"),
                         "parseInt": NativeFunction(_parse_int, "parseInt"),
                         "MAX_SAFE_INTEGER": float(2**53 - 1), "MIN_SAFE_INTEGER": float(-(2**53 - 1)),
                         "POSITIVE_INFINITY": math.inf, "NEGATIVE_INFINITY": -math.inf,
                         "MAX_VALUE": 1.7976931348623157e308, "EPSILON": 2.0**-52}),
        "Boolean": _ctor(lambda i, t, a: to_boolean(_arg(a, 0)), "Boolean"),
        "Date": _ctor(lambda i, t, a: date_string(_date_construct(i, t, []).ms), "Date", _date_construct,
                      lambda o: type(o) is JSDate,
                      {"now": NativeFunction(lambda i, t, a: _date_construct(i, t, []).ms, "now")}),
        "isNaN": NativeFunction(lambda i, t, a: to_number(_arg(a, 0)) != to_number(_arg(a, 0)), "isNaN"),
        "isFinite": NativeFunction(lambda i, t, a: math.isfinite(to_number(_arg(a, 0))), "isFinite"),
        "parseInt": NativeFunction(_parse_int, "parseInt"),
        "parseFloat": NativeFunction(_parse_float, "parseFloat"),
        "print": NativeFunction(lambda i, t, a: UNDEFINED, "print"),
        "printjson": NativeFunction(lambda i, t, a: UNDEFINED, "printjson"),
        "tojson": NativeFunction(_tojson, "tojson"),
        "hex_md5": NativeFunction(lambda i, t, a: hashlib.md5(to_string(_arg(a, 0)).encode()).hexdigest(), "hex_md5"),
        "isNumber": NativeFunction(lambda i, t, a: type(_arg(a, 0)) is float, "isNumber"),
        "isString": NativeFunction(lambda i, t, a: type(_arg(a, 0)) is str, "isString"),
        "isObject": NativeFunction(lambda i, t, a: isinstance(_arg(a, 0), JSObject) and not is_callable(a[0]),
                                   "isObject"),
        "NumberInt": NativeFunction(lambda i, t, a: float(to_int32(_arg(a, 0))), "NumberInt"),
        "NumberLong": NativeFunction(lambda i, t, a: float(to_integer(_arg(a, 0))), "NumberLong"),
        "RegExp": _ctor(regexp.construct, "RegExp", regexp.construct, lambda o: type(o) is JSRegExp),
        "Map": _ctor(_needs_new("Map"), "Map", mapset.construct("Map", iterate),
                     lambda o: type(o) is mapset.JSMap and o.cls == "Map"),
        "Set": _ctor(_needs_new("Set"), "Set", mapset.construct("Set", iterate),
                     lambda o: type(o) is mapset.JSMap and o.cls == "Set"),
        "ObjectId": _ctor(_object_id, "ObjectId", _object_id,
                          lambda o: type(o) is HostValue and type(o.value) is ObjectId),
    }
    for name, proto in _ERROR_PROTOS.items():
        ctor = _ctor(_error_ctor(name), name, _error_ctor(name),
                     lambda o, proto=proto: isinstance(o, JSObject) and _inherits(o, proto),
                     {"prototype": proto})
        g[name] = ctor
    return g


def _object_create(interp, this, args):
    """Object.create(proto): a new object over `proto` (null: over nothing); the properties argument is
    not supported."""
    proto = _arg(args, 0)
    if proto is not None and not isinstance(proto, JSObject):
        raise make_error("TypeError", f"{to_string(proto)} is not an object or null")
    return JSObject({}, proto)


def _object_get_prototype_of(interp, this, args):
    """Object.getPrototypeOf(o): an object's prototype (null at the chain's end); a built-in value's, its
    class's `prototype`."""
    o = _arg(args, 0)
    if o is None or o is UNDEFINED:
        raise make_error("TypeError", f"can't convert {to_string(o)} to object")
    if type(o) is JSObject:
        return o.proto
    cls = {JSArray: "Array", str: "String", float: "Number", bool: "Boolean", JSDate: "Date",
           JSRegExp: "RegExp"}.get(type(o)) or getattr(o, "cls", "Object")
    ctor = interp.builtin_constructors.get(cls)
    return get_member(interp, ctor, "prototype") if ctor is not None else OBJECT_PROTO


def _needs_new(name: str):
    def run(interp, this, args):
        raise make_error("TypeError", f"calling a builtin {name} constructor without new is forbidden")

    return run


def _inherits(o: JSObject, proto: JSObject) -> bool:
    p = o.proto
    while p is not None:
        if p is proto:
            return True
        p = p.proto
    return False


def _array_ctor(interp, this, args):
    if len(args) == 1 and type(args[0]) is float:
        n = args[0]
        if not math.isfinite(n) or n != int(n) or n < 0:
            raise make_error("RangeError", "invalid array length")
        check_array_length(int(n))
        return JSArray([UNDEFINED] * int(n))
    return JSArray(list(args))


def install(scope_vars: dict) -> dict:
    """The global names, made afresh for each interpreter (a script's changes to Math or JSON stay its own);
    returns the built-in constructors by class name (what `constructor` reads, `_constructor`)."""
    g = _make_globals()
    scope_vars.update(g)
    ctors = {name: v for name, v in g.items() if type(v) is NativeFunction and "__instance__" in v.props
             or name in ("String", "Number", "Boolean")}
    for name in ("Array", "String"):  # (their `prototype` objects are this interpreter's own)
        ctors[name].props["prototype"].props["constructor"] = ctors[name]
    return ctors


__all__ = ["install", "get_member", "set_member"]
