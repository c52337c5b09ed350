"""Value::getApproximateSize: the memory a value takes in the server's pipeline (value.cpp).

Accumulators that keep every value (`$push`, `$addToSet`) charge each value's
approximate size against their limit (internalQueryMaxPushBytes,
internalQueryMaxAddToSetBytes: 100 MiB) and fail with ExceededMemoryLimit past it.
The sizes follow the server's layout: a Value is 16 bytes; a string (code, regex,
binary) longer than the inline buffer adds a ref-counted buffer; an array adds its
vector; a document its storage (a header, then per field the value, two offsets and
the name, 8-byte aligned).  The figures are approximate, like the server's own.
"""

from __future__ import annotations

from bson import Binary, Code, DBRef, Decimal128, Regex

__all__ = ["approximate_size", "MAX_PUSH_BYTES", "MAX_ADD_TO_SET_BYTES"]

MAX_PUSH_BYTES = 100 * 1024 * 1024  # internalQueryMaxPushBytes
MAX_ADD_TO_SET_BYTES = 100 * 1024 * 1024  # internalQueryMaxAddToSetBytes

_VALUE = 16  # sizeof(Value)
_SHORT_STR = 15  # a string this long or shorter is stored inline
_RC_STRING = 16  # sizeof(RCString) (refcount, length)
_RC_VECTOR = 32  # sizeof(RCVector<Value>)
_RC_DECIMAL = 24
_DOC_STORAGE = 96  # sizeof(DocumentStorage)


def _bytes_len(v) -> int:
    if type(v) is str:
        return len(v) if v.isascii() else len(v.encode("utf-8", "surrogatepass"))
    if isinstance(v, Regex):
        return len(str(v.pattern)) + len(v.flags if isinstance(v.flags, str) else "") + 1
    return len(v)


def approximate_size(v) -> int:
    t = type(v)
    if t is str or t is Code or t is Binary or t is bytes or t is Regex:
        n = _bytes_len(v)
        return _VALUE + (0 if n <= _SHORT_STR else _RC_STRING + n)
    if t is list:
        return _VALUE + _RC_VECTOR + sum(approximate_size(e) for e in v)
    if isinstance(v, dict) or t is DBRef:
        items = v.as_doc().items() if t is DBRef else v.items()
        size = _VALUE + _DOC_STORAGE
        for k, x in items:
            size += (_VALUE + 8 + len(k) + 1 + 7) // 8 * 8 + approximate_size(x) - _VALUE
        return size
    if t is Decimal128:
        return _VALUE + _RC_DECIMAL
    return _VALUE
