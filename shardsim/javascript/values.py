"""JavaScript values, their conversions (ToString, ToNumber, ...), and the BSON bridge.

Representation: `undefined` is UNDEFINED, `null` None, booleans `bool`, every
number a Python `float` (JS numbers are doubles), strings `str`; objects are
JSObject (a property dict and a prototype), arrays JSArray (a list), functions
JSFunction (a parsed function and its closure scope) or NativeFunction (a
Python callable `fn(interp, this, args)`), dates JSDate (milliseconds),
regular expressions JSRegExp (the translated Python pattern).

BSON values come in through `to_js`: int32/int64/double become numbers,
documents objects, arrays arrays, dates JSDate, regexes JSRegExp, Code a
function (compiled by the engine); the BSON types JavaScript has no value
for (ObjectId, Timestamp, Decimal128, BinData, MinKey/MaxKey) travel as
opaque HostValue wrappers that convert back unchanged.  `to_bson` goes back:
numbers become doubles (as the server's engine writes them), undefined
becomes null, functions become Code, a RegExp a BSON regex.  No Python object other than
these is reachable from a script: the wrappers expose no attributes.
"""

from __future__ import annotations

import datetime
import math
import re
from collections.abc import Mapping
from contextvars import ContextVar

from bson import Code, DatetimeMS, Int64, Regex

from mongosim.shardsim.javascript.errors import JSThrow


class _Undefined:
    __slots__ = ()

    def __repr__(self) -> str:
        return "undefined"

    def __bool__(self) -> bool:
        return False


UNDEFINED = _Undefined()


class JSObject:
    __slots__ = ("props", "proto", "cls")

    def __init__(self, props: dict | None = None, proto: JSObject | None = None, cls: str = "Object") -> None:
        self.props = {} if props is None else props
        self.proto = proto
        self.cls = cls

    def lookup(self, key: str):
        o = self
        while o is not None:
            v = o.props.get(key, _ABSENT)
            if v is not _ABSENT:
                return v
            o = o.proto
        return UNDEFINED


_ABSENT = object()


class JSArray(JSObject):
    __slots__ = ("items",)

    def __init__(self, items: list | None = None) -> None:
        super().__init__(None, None, "Array")
        self.items = [] if items is None else items


class JSFunction(JSObject):
    """A function of the script: `func` (parser.Function), its defining scope, and (arrows) the captured `this`."""

    __slots__ = ("func", "scope", "this")

    def __init__(self, func, scope, this=None) -> None:
        super().__init__(None, None, "Function")
        self.func = func
        self.scope = scope
        self.this = this


class NativeFunction(JSObject):
    __slots__ = ("fn", "name")

    def __init__(self, fn, name: str = "", props: dict | None = None) -> None:
        super().__init__(props, None, "Function")
        self.fn = fn
        self.name = name


class JSDate(JSObject):
    __slots__ = ("ms",)

    def __init__(self, ms: float) -> None:
        super().__init__(None, None, "Date")
        self.ms = ms


class JSRegExp(JSObject):
    """A regular expression: its JS source and flags, the Python pattern they translate to, and lastIndex."""

    __slots__ = ("source", "flags", "pattern", "last_index")

    def __init__(self, source: str, flags: str) -> None:
        super().__init__(None, None, "RegExp")
        self.source = source
        self.flags = "".join(sorted(set(flags)))
        self.pattern = compile_regexp(source, flags)
        self.last_index = 0


_REGEXP_FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "g": 0, "y": 0, "u": 0}


def compile_regexp(source: str, flags: str) -> re.Pattern:
    """A JS pattern as a Python one: `$` without m is the very end, `(?<n>` named groups, `[^]` any
    character, \\d \\w \\s as JS (ASCII digits and word characters)."""
    bits = 0
    for f in flags:
        if f not in _REGEXP_FLAGS or flags.count(f) > 1:
            raise make_error("SyntaxError", f"invalid regular expression flag {f}")
        bits |= _REGEXP_FLAGS[f]
    out, i, n, in_class = [], 0, len(source), False
    while i < n:
        c = source[i]
        if c == "\\" and i + 1 < n:
            e = source[i + 1]
            out.append({"d": "[0-9]", "D": "[^0-9]", "w": "[A-Za-z0-9_]", "W": "[^A-Za-z0-9_]"}.get(e, c + e)
                       if not in_class else {"d": "0-9", "w": "A-Za-z0-9_"}.get(e, c + e))
            i += 2
            continue
        if in_class:
            if c == "]":
                in_class = False
            out.append(c)
        elif c == "[":
            if source.startswith("[^]", i):
                out.append("[\\s\\S]")
                i += 3
                continue
            in_class = True
            out.append(c)
        elif c == "$" and not bits & re.MULTILINE:
            out.append(r"(?!(?s:.))")
        elif c == "(" and source.startswith("(?<", i) and not source.startswith(("(?<=", "(?<!"), i):
            out.append("(?P<")
            i += 3
            continue
        else:
            out.append(c)
        i += 1
    try:
        return re.compile("".join(out), bits)
    except (re.error, OverflowError, RecursionError) as e:
        raise make_error("SyntaxError", f"invalid regular expression: {e}") from None


class HostValue(JSObject):
    """A BSON value with no JavaScript counterpart (ObjectId, Timestamp, ...), passed through unchanged."""

    __slots__ = ("value",)

    def __init__(self, value) -> None:
        super().__init__(None, None, type(value).__name__)
        self.value = value


def is_callable(v) -> bool:
    return isinstance(v, (JSFunction, NativeFunction))


def type_of(v) -> str:
    if v is UNDEFINED:
        return "undefined"
    t = type(v)
    if t is float:
        return "number"
    if t is str:
        return "string"
    if t is bool:
        return "boolean"
    if t is JSFunction or t is NativeFunction:
        return "function"
    return "object"


# --- conversions (ECMAScript abstract operations, for the supported values) ---------------


def number_to_string(x: float) -> str:
    if x != x:
        return "NaN"
    if x == math.inf:
        return "Infinity"
    if x == -math.inf:
        return "-Infinity"
    if x == int(x) and abs(x) < 1e21:
        return str(int(x))
    s = repr(x)
    if "e" not in s:
        return s
    mant, exp = s.split("e")
    e = int(exp)
    if -7 < e < 21:  # JS writes these positionally
        digits = mant.replace(".", "").lstrip("-")
        sign = "-" if x < 0 else ""
        if e < 0:
            return f"{sign}0.{'0' * (-e - 1)}{digits}"
        return sign + digits + "0" * (e - len(digits) + 1)
    return f"{mant}e{'+' if e > 0 else '-'}{abs(e)}"


def to_string(v) -> str:
    t = type(v)
    if t is str:
        return v
    if t is float:
        return number_to_string(v)
    if t is bool:
        return "true" if v else "false"
    if v is None:
        return "null"
    if v is UNDEFINED:
        return "undefined"
    if t is JSArray:
        return ",".join("" if x is None or x is UNDEFINED else to_string(x) for x in v.items)
    if t is JSDate:
        return date_string(v.ms)
    if t is HostValue:
        return host_string(v.value)
    if t is JSRegExp:
        return f"/{v.source}/{v.flags}"
    if t is JSFunction:
        return v.func.source or "function () {}"
    if t is NativeFunction:
        return f"function {v.name}() {{\n    [native code]\n}}"
    if isinstance(v, JSObject):
        if v.cls == "Error":
            name, msg = to_string(v.lookup("name")), to_string(v.lookup("message"))
            return f"{name}: {msg}" if msg else name
        if t is JSObject:
            r = _user_primitive(v, ("toString", "valueOf"))
            if r is not _ABSENT:
                return to_string(r)
        return "[object Object]"
    return str(v)


def host_string(value) -> str:
    name = type(value).__name__
    if name == "ObjectId":
        return f'ObjectId("{value}")'
    return f"{name}({value})"


def date_string(ms: float) -> str:
    if ms != ms:
        return "Invalid Date"
    d = datetime.datetime(1970, 1, 1) + datetime.timedelta(milliseconds=ms)
    return d.strftime("%a %b %d %Y %H:%M:%S GMT+0000 (Coordinated Universal Time)")


_NUM_RE = re.compile(r"[+-]?(?:Infinity|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)$")


def string_to_number(s: str) -> float:
    s = s.strip()
    if not s:
        return 0.0
    if len(s) > 2 and s[0] == "0" and s[1] in "xXoObB":
        try:
            return float(int(s[2:], {"x": 16, "o": 8, "b": 2}[s[1].lower()]))
        except ValueError:
            return math.nan
    if not _NUM_RE.match(s):
        return math.nan
    return float(s.replace("Infinity", "inf"))


def to_number(v) -> float:
    t = type(v)
    if t is float:
        return v
    if t is bool:
        return 1.0 if v else 0.0
    if t is str:
        return string_to_number(v)
    if v is None:
        return 0.0
    if v is UNDEFINED:
        return math.nan
    if t is JSDate:
        return v.ms
    if t is HostValue:
        inner = v.value
        if type(inner).__name__ == "Decimal128":
            return float(inner.to_decimal())
        return math.nan
    if t is JSArray:
        return string_to_number(to_string(v))
    if t is JSObject:
        r = _user_primitive(v, ("valueOf", "toString"))
        if r is not _ABSENT:
            return to_number(r)
    return math.nan


def to_boolean(v) -> bool:
    t = type(v)
    if t is bool:
        return v
    if t is float:
        return not (v == 0 or v != v)
    if t is str:
        return v != ""
    return not (v is None or v is UNDEFINED)


def to_int32(v) -> int:
    x = to_number(v)
    if x != x or x in (math.inf, -math.inf):
        return 0
    n = int(x) & 0xFFFFFFFF
    return n - (1 << 32) if n >= 1 << 31 else n


def to_primitive(v, hint: str = "default"):
    if not isinstance(v, JSObject):
        return v
    if type(v) is JSDate:
        return v.ms if hint == "number" else date_string(v.ms)
    if type(v) is JSObject:
        r = _user_primitive(v, ("toString", "valueOf") if hint == "string" else ("valueOf", "toString"))
        if r is not _ABSENT:
            return r
    return to_string(v)


# the interpreter running on this thread (engine sets it), for a script's own toString/valueOf
RUNNING: ContextVar = ContextVar("mongosim_js_running", default=None)


def _user_primitive(v: JSObject, order: tuple):
    """OrdinaryToPrimitive with the object's own (script-defined) methods; _ABSENT when it has none."""
    interp = RUNNING.get()
    if interp is None:
        return _ABSENT
    for name in order:
        f = v.lookup(name)
        if type(f) is JSFunction:
            r = interp.call(f, v, [])
            if not isinstance(r, JSObject):
                return r
    return _ABSENT


def to_property_key(v) -> str:
    return v if type(v) is str else to_string(v)


def strict_equals(a, b) -> bool:
    ta, tb = type(a), type(b)
    if ta is float and tb is float:
        return a == b
    if ta is not tb:
        return False
    if ta is str or ta is bool:
        return a == b
    return a is b


def loose_equals(a, b) -> bool:
    """`==`: null and undefined equal each other only; numbers, strings and booleans compare as numbers."""
    ta, tb = type(a), type(b)
    if ta is tb or (ta is float and tb is float):
        return strict_equals(a, b)  # (two ObjectIds are two objects: equal only if the same one, as in JS)
    if (a is None or a is UNDEFINED) and (b is None or b is UNDEFINED):
        return True
    if a is None or a is UNDEFINED or b is None or b is UNDEFINED:
        return False
    if ta is bool:
        return loose_equals(to_number(a), b)
    if tb is bool:
        return loose_equals(a, to_number(b))
    if ta is float and tb is str:
        return a == string_to_number(b)
    if ta is str and tb is float:
        return string_to_number(a) == b
    if isinstance(a, JSObject) and not isinstance(b, JSObject):
        return loose_equals(to_primitive(a), b)
    if isinstance(b, JSObject) and not isinstance(a, JSObject):
        return loose_equals(a, to_primitive(b))
    return False


def js_type_error(message: str, protos=None) -> JSThrow:
    return make_error("TypeError", message)


_ERROR_PROTOS: dict[str, JSObject] = {}


def make_error(name: str, message: str) -> JSThrow:
    """A JS Error object (`name`, `message`) ready to be thrown."""
    proto = _ERROR_PROTOS.get(name)
    err = JSObject({"message": message}, proto, "Error")
    if proto is None:
        err.props["name"] = name
    return JSThrow(err)


# --- arithmetic with JavaScript's semantics --------------------------------------------------


MAX_STRING_LENGTH = 1 << 26  # characters; a longer string is a RangeError (memory stays bounded)
MAX_ARRAY_LENGTH = 1 << 24


def check_string(v: str) -> str:
    if len(v) > MAX_STRING_LENGTH:
        raise make_error("RangeError", "repeat count must be less than infinity and not overflow maximum string size")
    return v


def check_array_length(n: int) -> None:
    if n > MAX_ARRAY_LENGTH:
        raise make_error("RangeError", "invalid array length")


def js_add(a, b):
    ta, tb = type(a), type(b)
    if ta is float and tb is float:
        return a + b
    if ta is str and tb is str:
        return check_string(a + b) if len(a) + len(b) > 4096 else a + b
    a, b = to_primitive(a), to_primitive(b)
    if type(a) is str or type(b) is str:
        return check_string(to_string(a) + to_string(b))
    return to_number(a) + to_number(b)


def js_div(a: float, b: float) -> float:
    try:
        return a / b
    except ZeroDivisionError:
        if a == 0 or a != a:
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)


def js_mod(a: float, b: float) -> float:
    if b == 0 or a != a or b != b or a in (math.inf, -math.inf):
        return math.nan
    if b in (math.inf, -math.inf):
        return a
    return math.fmod(a, b)


def js_pow(a: float, b: float) -> float:
    if b != b or (abs(a) == 1 and b in (math.inf, -math.inf)):
        return math.nan
    try:
        return math.pow(a, b)
    except ValueError:
        return math.nan
    except OverflowError:
        return math.inf if a > 0 or b % 2 == 0 else -math.inf
    except ZeroDivisionError:
        return math.inf



# --- the BSON bridge -----------------------------------------------------------------------

_EPOCH = datetime.datetime(1970, 1, 1)
_EPOCH_AWARE = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def to_js(v, code=None):
    """A BSON (Python) value as a JS value; `code(source)` compiles a Code value into a function (as the
    server's engine reads Code), else Code is its source string."""
    t = type(v)
    if t is float or t is str or t is bool or v is None:
        return v
    if t is int or t is Int64:
        return float(v)
    if t is dict or isinstance(v, dict):
        return JSObject({k: to_js(x, code) for k, x in v.items()}, OBJECT_PROTO[0])
    if t is list or t is tuple:
        return JSArray([to_js(x, code) for x in v])
    if t is datetime.datetime:
        base = _EPOCH_AWARE if v.tzinfo is not None else _EPOCH
        return JSDate(float((v - base) // datetime.timedelta(milliseconds=1)))
    if t is DatetimeMS:
        return JSDate(float(int(v)))
    if t is Code:
        return str(v) if code is None else code(v)
    if isinstance(v, str):
        return str(v)
    if t is Regex or t is re.Pattern:
        flags = regex_flags(v)
        try:
            return JSRegExp(v.pattern if isinstance(v.pattern, str) else v.pattern.decode(), flags)
        except JSThrow:
            return HostValue(v)  # (a pattern JavaScript cannot compile passes through unchanged)
    if isinstance(v, Mapping):  # (RawBSONDocument, SON)
        return JSObject({k: to_js(x, code) for k, x in v.items()}, OBJECT_PROTO[0])
    return HostValue(v)


def to_bson(v, depth: int = 0):
    """A JS value as a BSON (Python) value."""
    t = type(v)
    if t is float:
        return v
    if t is str or t is bool or v is None:
        return v
    if v is UNDEFINED:
        return None
    if depth > 150:
        raise make_error("InternalError", "too much recursion converting to BSON")
    if t is JSArray:
        return [to_bson(x, depth + 1) for x in v.items]
    if t is JSDate:
        if v.ms != v.ms:
            return DatetimeMS(0)
        ms = int(v.ms)
        try:
            return _EPOCH + datetime.timedelta(milliseconds=ms)
        except OverflowError:
            return DatetimeMS(ms)
    if t is HostValue:
        return v.value
    if t is JSRegExp:
        return Regex(v.source, "".join(f for f in v.flags if f in "ims"))
    if t is JSFunction or t is NativeFunction:
        return Code(to_string(v))
    if isinstance(v, JSObject):
        return {k: to_bson(x, depth + 1) for k, x in v.props.items()}
    return None


def regex_flags(v) -> str:
    """The JS flags of a BSON regex or compiled pattern (its i, m, s options)."""
    bits = v.flags if isinstance(v.flags, int) else 0
    return "".join(f for f, bit in (("i", re.I), ("m", re.M), ("s", re.S)) if bits & bit)


OBJECT_PROTO: list = [None]  # set by builtins: the prototype of objects made from documents
