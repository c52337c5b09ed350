"""Map and Set: insertion-ordered collections keyed by SameValueZero.

A key is a primitive compared by value (NaN equals NaN, -0 equals 0; 1 and
"1" differ) or an object compared by identity.  `keys()`, `values()` and
`entries()` answer arrays (what for...of and spread then iterate), not
iterators; a Map or Set iterates itself in for...of and spread.  As BSON
they become empty documents, as the server's engine writes them.
"""

from __future__ import annotations

from mongosim.shardsim.javascript.values import (
    UNDEFINED,
    JSArray,
    JSObject,
    NativeFunction,
    check_array_length,
    is_callable,
    make_error,
)


class JSMap(JSObject):
    __slots__ = ("entries",)

    def __init__(self, cls: str) -> None:
        super().__init__(None, None, cls)
        self.entries: dict = {}  # key identity -> (key, value)


def same_value_zero(v):
    t = type(v)
    if t is float:
        return ("n", "NaN" if v != v else v + 0.0)
    if t is str or t is bool:
        return (t.__name__, v)
    if isinstance(v, JSObject):
        return ("o", id(v))
    return ("u", repr(v))  # null and undefined


def _this(this, cls: str, name: str) -> JSMap:
    if type(this) is not JSMap or this.cls != cls:
        raise make_error("TypeError", f"{cls}.prototype.{name} called on incompatible receiver")
    return this


def _arg(args: list, i: int):
    return args[i] if i < len(args) else UNDEFINED


def _map_set(interp, this, args):
    m = _this(this, "Map", "set")
    k = _arg(args, 0)
    m.entries[same_value_zero(k)] = (k, _arg(args, 1))
    check_array_length(len(m.entries))
    return m


def _map_get(interp, this, args):
    e = _this(this, "Map", "get").entries.get(same_value_zero(_arg(args, 0)))
    return UNDEFINED if e is None else e[1]


def _set_add(interp, this, args):
    s = _this(this, "Set", "add")
    k = _arg(args, 0)
    s.entries[same_value_zero(k)] = (k, k)
    check_array_length(len(s.entries))
    return s


def _has(cls):
    return lambda interp, this, args: same_value_zero(_arg(args, 0)) in _this(this, cls, "has").entries


def _delete(cls):
    return lambda interp, this, args: _this(this, cls, "delete").entries.pop(same_value_zero(_arg(args, 0)),
                                                                             None) is not None


def _clear(cls):
    def run(interp, this, args):
        _this(this, cls, "clear").entries.clear()
        return UNDEFINED

    return run


def _for_each(cls):
    def run(interp, this, args):
        m = _this(this, cls, "forEach")
        fn = _arg(args, 0)
        if not is_callable(fn):
            raise make_error("TypeError", f"{cls}.prototype.forEach: argument is not a function")
        for k, v in list(m.entries.values()):
            interp.call(fn, _arg(args, 1), [v, k, m])
        return UNDEFINED

    return run


def _listing(cls, part):
    def run(interp, this, args):
        items = list(_this(this, cls, part).entries.values())
        if part == "keys":
            return JSArray([k for k, _ in items])
        if part == "values":
            return JSArray([v for _, v in items])
        return JSArray([JSArray([k, v]) for k, v in items])

    return run


def _methods(cls: str) -> dict:
    out = {"has": _has(cls), "delete": _delete(cls), "clear": _clear(cls), "forEach": _for_each(cls),
           "keys": _listing(cls, "keys"), "values": _listing(cls, "values"), "entries": _listing(cls, "entries")}
    if cls == "Map":
        out.update(set=_map_set, get=_map_get)
    else:
        out.update(add=_set_add)
    return {name: NativeFunction(fn, name) for name, fn in out.items()}


METHODS = {"Map": _methods("Map"), "Set": _methods("Set")}


def member(m: JSMap, key: str):
    if key == "size":
        return float(len(m.entries))
    v = m.props.get(key)
    if v is not None:
        return v
    return METHODS[m.cls].get(key, UNDEFINED)


def iterate(m: JSMap) -> list:
    if m.cls == "Set":
        return [k for k, _ in m.entries.values()]
    return [JSArray([k, v]) for k, v in m.entries.values()]


def construct(cls: str, iterate_fn):
    """new Map(entries) / new Set(values): `iterate_fn(interp, v)` lists the argument."""
    def run(interp, this, args):
        m = JSMap(cls)
        src = _arg(args, 0)
        if src is not None and src is not UNDEFINED:
            for item in iterate_fn(interp, src):
                if cls == "Set":
                    _set_add(interp, m, [item])
                else:
                    pair = iterate_fn(interp, item) if isinstance(item, JSObject) else None
                    if pair is None:
                        raise make_error("TypeError", "Map: an entry is not an [key, value] array")
                    _map_set(interp, m, pair[:2])
        return m

    return run
