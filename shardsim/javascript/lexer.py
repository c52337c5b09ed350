"""The tokenizer: JavaScript source text to a list of tokens.

A token is `Tok(kind, value, nl, pos)`: kind "num" (value a float), "str"
(the unescaped text), "name" (identifiers and keywords alike), "punct" (an
operator or punctuation, longest match first), "template" (a template
literal: its text parts and the source of each `${...}` between them),
"regex" (a regular-expression literal's source and flags: a `/` where an
expression starts, after an operator or `return`-like keyword, not after a
value), or "eof"; `nl` is true when a line break precedes the token (what
automatic semicolon insertion needs: `return` followed by a line break
returns undefined).  Comments are skipped.
"""

from __future__ import annotations

from typing import NamedTuple

from mongosim.shardsim.javascript.errors import JSSyntaxError


class Tok(NamedTuple):
    kind: str
    value: object
    nl: bool
    pos: int


PUNCTUATORS = sorted("""
>>>= ... === !== **= <<= >>= >>> && || ?? ?. => == != <= >= += -= *= /= %= &= |= ^= ++ -- << >> **
{ } ( ) [ ] ; , < > + - * / % & | ^ ! ~ ? : = .
""".split(), key=len, reverse=True)

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v", "0": "\0"}
_ID_START = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_$")
_ID_PART = _ID_START | set("0123456789")


def _line_col(src: str, pos: int) -> str:
    line = src.count("\n", 0, pos) + 1
    return f"@:{line}:{pos - (src.rfind(chr(10), 0, pos) + 1)}"


def tokenize(src: str) -> list[Tok]:
    toks: list[Tok] = []
    i, n, nl = 0, len(src), False
    while True:
        # whitespace and comments
        while i < n:
            c = src[i]
            if c == "\n" or c == "\u2028" or c == "\u2029":
                nl = True
                i += 1
            elif c.isspace() or c == "\ufeff":
                i += 1
            elif src.startswith("//", i):
                j = src.find("\n", i)
                i = n if j < 0 else j
            elif src.startswith("/*", i):
                j = src.find("*/", i + 2)
                if j < 0:
                    raise JSSyntaxError("unterminated comment " + _line_col(src, i))
                nl = nl or "\n" in src[i:j]
                i = j + 2
            else:
                break
        if i >= n:
            toks.append(Tok("eof", None, True, n))
            return toks
        c = src[i]
        start = i
        if c.isdigit() or (c == "." and i + 1 < n and src[i + 1].isdigit()):
            i, value = _number(src, i)
            if i < n and (src[i] in _ID_PART):
                raise JSSyntaxError("identifier starts immediately after numeric literal " + _line_col(src, i))
            toks.append(Tok("num", value, nl, start))
        elif c in _ID_START or (c.isalpha() and ord(c) > 127):
            while i < n and (src[i] in _ID_PART or (src[i].isalnum() and ord(src[i]) > 127)):
                i += 1
            toks.append(Tok("name", src[start:i], nl, start))
        elif c == '"' or c == "'":
            i, value = _string(src, i)
            toks.append(Tok("str", value, nl, start))
        elif c == "`":
            i, value = _template(src, i)
            toks.append(Tok("template", value, nl, start))
        elif c == "/" and _regex_allowed(toks[-1] if toks else None):
            i, value = _regex(src, i)
            toks.append(Tok("regex", value, nl, start))
        else:
            for p in PUNCTUATORS:
                if src.startswith(p, i):
                    if p == "?." and i + 2 < n and src[i + 2].isdigit():
                        continue  # `a?.5:b` is a conditional
                    toks.append(Tok("punct", p, nl, start))
                    i += len(p)
                    break
            else:
                raise JSSyntaxError(f"illegal character {c!r} " + _line_col(src, i))
        nl = False


def _number(src: str, i: int) -> tuple[int, float]:
    n = len(src)
    if src[i] == "0" and i + 1 < n and src[i + 1] in "xXoObB":
        base = {"x": 16, "o": 8, "b": 2}[src[i + 1].lower()]
        j = i + 2
        while j < n and (src[j].isalnum() or src[j] == "_"):
            j += 1
        try:
            return j, float(int(src[i + 2:j].replace("_", ""), base))
        except ValueError:
            raise JSSyntaxError("missing digits after number prefix") from None
    j = i
    while j < n and (src[j].isdigit() or src[j] == "_"):
        j += 1
    if j < n and src[j] == ".":
        j += 1
        while j < n and src[j].isdigit():
            j += 1
    if j < n and src[j] in "eE":
        k = j + 1
        if k < n and src[k] in "+-":
            k += 1
        if k < n and src[k].isdigit():
            j = k
            while j < n and src[j].isdigit():
                j += 1
    return j, float(src[i:j].replace("_", ""))


def _string(src: str, i: int) -> tuple[int, str]:
    quote, n = src[i], len(src)
    i += 1
    out = []
    while True:
        if i >= n or src[i] == "\n":
            raise JSSyntaxError("unterminated string literal " + _line_col(src, i))
        c = src[i]
        if c == quote:
            return i + 1, "".join(out)
        if c == "\\":
            i, text = _escape(src, i)
            out.append(text)
            continue
        out.append(c)
        i += 1


def _escape(src: str, i: int) -> tuple[int, str]:
    """The backslash escape at `i`: (the index after it, its text)."""
    n = len(src)
    i += 1
    if i >= n:
        raise JSSyntaxError("unterminated string literal")
    e = src[i]
    try:
        if e == "u":
            if src.startswith("{", i + 1):
                j = src.index("}", i)
                return j + 1, chr(int(src[i + 2:j], 16))
            return i + 5, chr(int(src[i + 1:i + 5], 16))
        if e == "x":
            return i + 3, chr(int(src[i + 1:i + 3], 16))
    except ValueError:
        raise JSSyntaxError("malformed escape sequence " + _line_col(src, i)) from None
    if e == "\n":
        return i + 1, ""
    return i + 1, _ESCAPES.get(e, e)


def _template(src: str, i: int) -> tuple[int, tuple[list[str], list[tuple[str, int]]]]:
    """A template literal from its opening backquote: (end, (text parts, [(expression source, offset)]))."""
    n = len(src)
    i += 1
    parts: list[str] = []
    exprs: list[tuple[str, int]] = []
    out: list[str] = []
    while True:
        if i >= n:
            raise JSSyntaxError("unterminated template literal " + _line_col(src, i))
        c = src[i]
        if c == "`":
            parts.append("".join(out))
            return i + 1, (parts, exprs)
        if c == "\\":
            i, text = _escape(src, i)
            out.append(text)
            continue
        if c == "$" and src.startswith("{", i + 1):
            parts.append("".join(out))
            out = []
            start = j = i + 2
            depth = 1
            while depth:
                if j >= n:
                    raise JSSyntaxError("unterminated template literal " + _line_col(src, j))
                ch = src[j]
                if ch == "{":
                    depth += 1
                elif ch == "}":
                    depth -= 1
                elif ch in "'\"":
                    j = _string(src, j)[0] - 1
                elif ch == "`":
                    j = _template(src, j)[0] - 1
                j += 1
            exprs.append((src[start:j - 1], start))
            i = j
            continue
        out.append(c)
        i += 1



_BEFORE_REGEX = frozenset({"return", "typeof", "case", "do", "else", "in", "of", "new", "delete", "void", "throw",
                           "instanceof"})


def _regex_allowed(prev: Tok | None) -> bool:
    if prev is None:
        return True
    if prev.kind == "punct":
        return prev.value not in (")", "]", "}")
    return prev.kind == "name" and prev.value in _BEFORE_REGEX


def _regex(src: str, i: int) -> tuple[int, tuple[str, str]]:
    """A regular-expression literal from its opening slash: (end, (source, flags))."""
    n, j, in_class = len(src), i + 1, False
    while True:
        if j >= n or src[j] == "\n":
            raise JSSyntaxError("unterminated regular expression literal " + _line_col(src, i))
        c = src[j]
        if c == "\\":
            j += 2
            continue
        if c == "[":
            in_class = True
        elif c == "]":
            in_class = False
        elif c == "/" and not in_class:
            break
        j += 1
    k = j + 1
    while k < n and src[k] in _ID_PART:
        k += 1
    return k, (src[i + 1:j], src[j + 1:k])
