"""ICU's collation tailoring rule syntax, parsed (CollationRuleParser, the subset CLDR uses).

A rule string is a sequence of:

* settings in brackets: `[caseFirst upper]`, `[backwards 2]`, `[normalization on]`,
  `[alternate shifted]`, `[strength 2]`, `[caseLevel on]`, `[numericOrdering on]`,
  `[reorder Grek Cyrl]`, `[import de-u-co-phonebk]`, `[suppressContractions [a-z]]`,
  `[optimize [...]]` (a hint for ICU's data builder: parsed and dropped);
* resets, `&X` or `&[before 1]X`, or a special position (`&[last primary ignorable]`,
  `&[first variable]`, ...);
* relations from the last position: `<` primary, `<<` secondary, `<<<` tertiary,
  `<<<<` quaternary, `=` identical; each with its string, an optional context prefix
  (`p|x`, "x after p") and an optional expansion (`x/e`, "x sorts as the position
  followed by e"); `<*abc` and `<*a-z` are lists of one relation per character.

Strings follow ICU: white space (Pattern_White_Space: not U+00A0) separates tokens
and is otherwise ignored, ASCII punctuation and symbols are syntax and must be quoted
(`'-'`, `''` for an apostrophe) or escaped (`\\-`), `\\uXXXX` / `\\UXXXXXXXX` / `\\x{...}` escapes a code point.

`parse(rules)` returns the instructions as `Setting`, `Reset` and `Relation` tuples, in
order.  Hand-written: no installable pure-Python library parses ICU's rule syntax (PyICU
does, through the native ICU library, which this project does not depend on).
Source: ICU's userguide "Collation Customization" and collationruleparser.cpp.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["Setting", "Reset", "Relation", "RuleSyntaxError", "parse", "parse_set", "IDENTICAL"]

IDENTICAL = 15  # the strength of an `=` relation (ICU's UCOL_IDENTICAL)


class Setting(NamedTuple):
    name: str       # caseFirst, backwards, normalization, alternate, strength, caseLevel, numericOrdering,
    value: object   # reorder, import, suppressContractions, optimize, maxVariable, hiraganaQ


class Reset(NamedTuple):
    text: str           # the string to reset to ("" with a special position)
    before: int = 0     # the level of `[before N]`, 0 without
    special: str = ""   # "last primary ignorable", "first variable", ... ("" for a string)


class Relation(NamedTuple):
    strength: int       # 1, 2, 3, 4 or IDENTICAL
    text: str
    prefix: str = ""
    extension: str = ""


class RuleSyntaxError(ValueError):
    pass


_WHITE_SPACE = frozenset("\t\n\v\f\r \x85\u200e\u200f\u2028\u2029")  # Pattern_White_Space: not U+00A0


def _is_syntax(c: str) -> bool:
    o = ord(c)
    return 0x21 <= o <= 0x7E and (o <= 0x2F or 0x3A <= o <= 0x40 or 0x5B <= o <= 0x60 or 0x7B <= o)


class _Reader:
    def __init__(self, rules: str) -> None:
        self.s = rules
        self.i = 0

    def error(self, msg: str) -> RuleSyntaxError:
        return RuleSyntaxError(f"{msg} at offset {self.i} of {self.s[max(0, self.i - 20):self.i + 20]!r}")

    def skip_space(self) -> None:
        s = self.s
        while self.i < len(s):
            c = s[self.i]
            if c in _WHITE_SPACE:
                self.i += 1
            elif c == "#":  # a comment to the end of the line
                while self.i < len(s) and s[self.i] not in "\n\r":
                    self.i += 1
            else:
                return

    def peek(self) -> str:
        self.skip_space()
        return self.s[self.i] if self.i < len(self.s) else ""

    def escape(self) -> str:
        """The character of a backslash escape at `i` (just after the backslash)."""
        s = self.s
        c = s[self.i]
        if c == "u":
            cp, self.i = int(s[self.i + 1:self.i + 5], 16), self.i + 5
        elif c == "U":
            cp, self.i = int(s[self.i + 1:self.i + 9], 16), self.i + 9
        elif c == "x" and s[self.i + 1:self.i + 2] == "{":
            end = s.index("}", self.i)
            cp, self.i = int(s[self.i + 2:end], 16), end + 1
        else:
            self.i += 1
            return c
        return chr(cp)

    def string(self) -> str:
        """A string token: literal characters, quoted runs and escapes, up to space or syntax."""
        self.skip_space()
        s = self.s
        out = []
        while self.i < len(s):
            c = s[self.i]
            if c == "'":
                if s[self.i + 1:self.i + 2] == "'":
                    out.append("'")
                    self.i += 2
                    continue
                end = self.i + 1
                while True:
                    end = s.index("'", end)
                    if s[end + 1:end + 2] == "'":  # '' inside quotes
                        end += 2
                        continue
                    break
                out.append(s[self.i + 1:end].replace("''", "'"))
                self.i = end + 1
            elif c == "\\":
                self.i += 1
                out.append(self.escape())
            elif c in _WHITE_SPACE or _is_syntax(c):
                break
            else:
                out.append(c)
                self.i += 1
        return "".join(out)

    def bracket(self) -> str:
        """The text inside `[...]` at `i` (nested brackets kept), `i` past the closing one."""
        depth = 0
        start = self.i
        s = self.s
        while self.i < len(s):
            c = s[self.i]
            if c == "\\":
                self.i += 2
                continue
            if c == "'":
                self.i = s.index("'", self.i + 1) + 1
                continue
            if c == "[":
                depth += 1
            elif c == "]":
                depth -= 1
                if depth == 0:
                    self.i += 1
                    return s[start + 1:self.i - 1]
            self.i += 1
        raise self.error("unterminated [")


def parse_set(text: str) -> frozenset[str]:
    """The characters of a simple UnicodeSet pattern: `[a-z \\u0300 ÀÉ]` (ranges, escapes, quotes)."""
    body = text.strip()
    if not (body.startswith("[") and body.endswith("]")):
        raise RuleSyntaxError(f"not a set: {text!r}")
    r = _Reader(body[1:-1])
    chars: list[str] = []
    out: set[str] = set()
    while r.peek():
        c = r.s[r.i]
        if c == "-" and chars:
            r.i += 1
            r.skip_space()
            hi = r.string() if r.s[r.i] in "'\\" or not _is_syntax(r.s[r.i]) else r.s[r.i]
            lo = chars.pop()
            out.update(chr(cp) for cp in range(ord(lo), ord(hi[0]) + 1))
            chars.extend(hi[1:])
            continue
        if c == "\\":
            r.i += 1
            chars.append(r.escape())
        elif c == "'":
            chars.extend(r.string())
        else:
            chars.append(c)
            r.i += 1
    out.update(chars)
    return frozenset(out)


def _setting(body: str) -> Setting:
    name, _, value = body.strip().partition(" ")
    value = value.strip()
    if name in ("suppressContractions", "optimize"):
        return Setting(name, parse_set(value))
    if name == "reorder":
        return Setting(name, tuple(value.split()))
    if name in ("backwards", "strength"):
        return Setting(name, int(value))
    if name in ("caseLevel", "normalization", "numericOrdering", "hiraganaQ"):
        if value not in ("on", "off"):
            raise RuleSyntaxError(f"[{body}]: expected on or off")
        return Setting(name, value == "on")
    if name in ("caseFirst", "alternate", "maxVariable", "import"):
        return Setting(name, value)
    raise RuleSyntaxError(f"unknown setting [{body}]")


def _relation_strength(r: _Reader) -> int:
    s = r.s
    if s[r.i] == "=":
        r.i += 1
        return IDENTICAL
    n = 0
    while r.i < len(s) and s[r.i] == "<" and n < 4:
        n += 1
        r.i += 1
    return n


def _star_chars(r: _Reader) -> list[str]:
    """The characters of a `<*` list: strings and `x-y` ranges."""
    out: list[str] = []
    while True:
        c = r.peek()
        if not c:
            break
        if c == "-" and out:
            r.i += 1
            hi = r.string()
            lo = out.pop()
            out.extend(chr(cp) for cp in range(ord(lo), ord(hi[0]) + 1))
            out.extend(hi[1:])
            continue
        if _is_syntax(c) and c not in "'\\":
            break
        text = r.string()
        if not text:
            break
        out.extend(text)
    return out


def parse(rules: str) -> list[Setting | Reset | Relation]:
    """The instructions of a rule string, in order; RuleSyntaxError for what the subset does not know."""
    r = _Reader(rules)
    out: list[Setting | Reset | Relation] = []
    in_chain = False
    while True:
        c = r.peek()
        if not c:
            return out
        if c == "[":
            out.append(_setting(r.bracket()))
            continue
        if c == "&":
            r.i += 1
            before, special = 0, ""
            if r.peek() == "[":
                body = r.bracket().strip()
                if body.startswith("before "):
                    before = int(body[7:])
                else:
                    special = body
            if not special and r.peek() == "[":
                special = r.bracket().strip()
            text = "" if special else r.string()
            if not text and not special:
                raise r.error("empty reset")
            out.append(Reset(text, before, special))
            in_chain = True
            continue
        if c in "<=":
            if not in_chain:
                raise r.error("relation before any reset")
            strength = _relation_strength(r)
            if r.s[r.i:r.i + 1] == "*":
                r.i += 1
                out.extend(Relation(strength, ch) for ch in _star_chars(r))
                continue
            text = r.string()
            prefix = extension = ""
            if r.peek() == "|":
                r.i += 1
                prefix, text = text, r.string()
            if r.peek() == "/":
                r.i += 1
                extension = r.string()
            if not text:
                raise r.error("empty relation string")
            out.append(Relation(strength, text, prefix, extension))
            continue
        raise r.error(f"unexpected {c!r}")
