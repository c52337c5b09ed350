"""Regular expressions: RegExp's methods and the String methods that take one (match, replace, split, search).

A JSRegExp (values) holds the Python pattern its JS source translates to.
`exec` answers JS's match array (the groups, undefined for one that did not
take part, with `index`, `input` and `groups`); with the g or y flag `exec`
and `test` start at and advance `lastIndex`.  `replace` expands `$&`, `` $` ``,
`$'`, `$n`, `$<name>` and `$$` in a replacement string, or calls a
replacement function with (match, ...groups, offset, string).
"""

from __future__ import annotations

import re

from mongosim.shardsim.javascript.values import (
    UNDEFINED,
    JSArray,
    JSObject,
    JSRegExp,
    NativeFunction,
    check_string,
    is_callable,
    make_error,
    to_string,
)


def _arg(args: list, i: int):
    return args[i] if i < len(args) else UNDEFINED


def _this_regexp(this, name: str) -> JSRegExp:
    if type(this) is not JSRegExp:
        raise make_error("TypeError", f"RegExp.prototype.{name} called on incompatible value")
    return this


def _search(rx: JSRegExp, s: str, start: int = 0) -> re.Match | None:
    if "y" in rx.flags:
        return rx.pattern.match(s, start)
    return rx.pattern.search(s, start)


def exec_(rx: JSRegExp, s: str):
    """RegExp.prototype.exec: the match array, or null."""
    stateful = "g" in rx.flags or "y" in rx.flags
    start = rx.last_index if stateful else 0
    if start > len(s):
        rx.last_index = 0
        return None
    m = _search(rx, s, start)
    if m is None:
        if stateful:
            rx.last_index = 0
        return None
    if stateful:
        rx.last_index = m.end() if m.end() > m.start() else m.end()
    return match_array(m, s)


def match_array(m: re.Match, s: str) -> JSArray:
    arr = JSArray([m.group(0)] + [UNDEFINED if g is None else g for g in m.groups()])
    arr.props["index"] = float(m.start())
    arr.props["input"] = s
    named = m.groupdict()
    arr.props["groups"] = JSObject({k: UNDEFINED if v is None else v for k, v in named.items()}) if named else UNDEFINED
    return arr


def _test(interp, this, args):
    return exec_(_this_regexp(this, "test"), to_string(_arg(args, 0))) is not None


def _exec(interp, this, args):
    return exec_(_this_regexp(this, "exec"), to_string(_arg(args, 0)))


def _to_string(interp, this, args):
    return to_string(_this_regexp(this, "toString"))


METHODS = {"test": NativeFunction(_test, "test"), "exec": NativeFunction(_exec, "exec"),
           "toString": NativeFunction(_to_string, "toString")}


def member(rx: JSRegExp, key: str):
    if key == "source":
        return rx.source
    if key == "flags":
        return rx.flags
    if key == "lastIndex":
        return float(rx.last_index)
    if key in ("global", "ignoreCase", "multiline", "sticky", "unicode", "dotAll"):
        return {"global": "g", "ignoreCase": "i", "multiline": "m", "sticky": "y", "unicode": "u",
                "dotAll": "s"}[key] in rx.flags
    v = rx.props.get(key)
    if v is not None:
        return v
    return METHODS.get(key, UNDEFINED)


def set_last_index(rx: JSRegExp, value: float) -> None:
    rx.last_index = max(0, int(value)) if value == value else 0


def construct(interp, this, args):
    """new RegExp(pattern | regexp, flags)."""
    p, f = _arg(args, 0), _arg(args, 1)
    if type(p) is JSRegExp:
        return JSRegExp(p.source, p.flags if f is UNDEFINED else to_string(f))
    return JSRegExp("(?:)" if p is UNDEFINED else to_string(p), "" if f is UNDEFINED else to_string(f))


# --- String.prototype methods with a regular expression ---------------------------------------------


def match(s: str, rx: JSRegExp):
    if "g" not in rx.flags:
        return exec_(rx, s)
    found = [m.group(0) for m in rx.pattern.finditer(s)]
    rx.last_index = 0
    return JSArray(found) if found else None


def search(s: str, rx: JSRegExp) -> float:
    m = rx.pattern.search(s)
    return float(m.start()) if m else -1.0


def split(s: str, rx: JSRegExp, limit: int | None) -> JSArray:
    if rx.pattern.match("") is not None and rx.pattern.fullmatch("") is not None and not rx.pattern.groups:
        parts: list = list(s)  # (a pattern matching the empty string splits between characters)
    else:
        parts = [UNDEFINED if p is None else p for p in rx.pattern.split(s)]
    return JSArray(parts if limit is None else parts[:limit])


_DOLLAR = re.compile(r"\$(\$|&|`|'|\d{1,2}|<[^>]*>)")


def _expand(template: str, m: re.Match, s: str) -> str:
    def sub(d: re.Match) -> str:
        t = d.group(1)
        if t == "$":
            return "$"
        if t == "&":
            return m.group(0)
        if t == "`":
            return s[: m.start()]
        if t == "'":
            return s[m.end():]
        if t.startswith("<"):
            name = t[1:-1]
            return (m.groupdict().get(name) or "") if m.re.groupindex else d.group(0)
        n = int(t)
        if 1 <= n <= m.re.groups:
            return m.group(n) or ""
        if len(t) == 2 and 1 <= int(t[0]) <= m.re.groups:  # "$12" with one group: group 1, then "2"
            return (m.group(int(t[0])) or "") + t[1]
        return d.group(0)

    return _DOLLAR.sub(sub, template)


def replace(interp, s: str, rx: JSRegExp, replacement, all_matches: bool | None = None) -> str:
    """String.prototype.replace (replaceAll: all_matches True, which needs the g flag)."""
    if all_matches and "g" not in rx.flags:
        raise make_error("TypeError", "replaceAll must be called with a global RegExp")
    every = "g" in rx.flags
    out, pos = [], 0
    for m in rx.pattern.finditer(s):
        out.append(s[pos:m.start()])
        if is_callable(replacement):
            args = [m.group(0)] + [UNDEFINED if g is None else g for g in m.groups()] + [float(m.start()), s]
            out.append(to_string(interp.call(replacement, UNDEFINED, args)))
        else:
            out.append(_expand(to_string(replacement), m, s))
        pos = m.end()
        if not every:
            break
    out.append(s[pos:])
    if every:
        rx.last_index = 0
    return check_string("".join(out))
